import type {Writable} from 'node:stream'

import {Command, Flags, type Interfaces} from '@oclif/core'

import {passwordOf, redact} from '../connection/url.js'
import type {Database, OpenOptions} from '../engine/engine.js'
import type {StatementLog} from '../engine/engine.js'
import {AirlockError, isDoctorAction, unreachableError, usageError} from '../errors.js'
import {createLineFile, whyNotWritable} from '../output/lineFile.js'
import {tableWidth} from '../output/width.js'
import {expandOutputName} from './outputName.js'
import {ExitCode} from '../exitCodes.js'
import type {Tally} from '../batch/tally.js'
import {requirePrivileges} from '../doctor/writePrivileges.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {AirflowStore} from '../store/airflowStore.js'
import {placementWarning, requireAirflow} from '../store/schemaCheck.js'
import {BatchOutput, type OutputMode} from './batchOutput.js'
import {confirmBulkWrite} from './confirm.js'
import {databaseFailureOf} from './databaseFailures.js'
import {openFromFlags, type ConnectionFlagValues} from './connectionFlags.js'
import {Interrupts} from './interrupt.js'
import {resumeCommand} from './resumeCommand.js'
import {LockWaits, watchLockWaits} from '../protocol/lockWaits.js'
import {planCaveat} from '../protocol/plan.js'
import {describeLockWait, renderBreakdown, type BatchReport} from './renderItems.js'
import {notConfirmed, type LineageDeliveryReport, type PreparedBatch} from '../batch/prepared.js'

/** What a command hands back: the result that becomes `--json`'s `result`, and its exit code. */
export interface CommandOutcome<R> {
  result: R
  exit?: ExitCode
}

export interface ErrorEnvelope {
  status: number
  error: {name: string; code: string; message: string; actions: string[]}
  /** A batch the failure cut short: every item that had finished, as the success envelope lists them. */
  result?: unknown
}

export interface SuccessEnvelope<R> {
  status: number
  result: R
  warnings: string[]
}

/**
 * The one base command. It owns the `--json` envelope, the exit-code table, the error text,
 * stdout, opening the database and the batch loop, so a command is its flags, one call and a
 * rendering. oclif's own `--json` support is not used: in oclif 4 it reports every failure as
 * exit 1 and prints its config on parse errors, so this class parses, runs, renders and sets
 * process.exitCode itself, and never lets an error reach oclif's handler.
 */
export abstract class AirlockCommand<R> extends Command {
  static override baseFlags = {
    json: Flags.boolean({
      description:
        'Print one JSON envelope on stdout ({"status","result","warnings"} or {"status","error"}); logs stay on stderr.',
      helpGroup: 'OUTPUT',
    }),
    verbose: Flags.boolean({
      description:
        'Log each SQL statement on stderr (its name or first words, duration, row count), and every connect, BEGIN with its timeouts, COMMIT and ROLLBACK; never values or passwords. Also under --json.',
      env: 'AIRLOCK_VERBOSE',
      helpGroup: 'OUTPUT',
    }),
    'no-color': Flags.boolean({
      description:
        'No colour in the progress spinner, the confirmation prompt or --help (as NO_COLOR does; both win over FORCE_COLOR).',
      helpGroup: 'OUTPUT',
    }),
  }

  private readonly collectedWarnings: string[] = []
  /** The report of a batch that failed after some items finished (see writeBatch). */
  private cutShort: unknown
  /** Secrets (passwords) to scrub from anything printed; connection helpers add to it. */
  protected readonly secrets = new Set<string>()
  private readonly cleanups: Array<() => Promise<void>> = []
  private interrupts!: Interrupts
  /** --verbose: the statement log the engine writes to stderr; undefined when off (the engine then times nothing). */
  private statementLog: StatementLog | undefined

  /** Parse flags, do the work, return the result. Throw AirlockError for what the operator can fix. */
  protected abstract execute(): Promise<CommandOutcome<R>>

  /** The human rendering of the result, written to stdout in `human` mode (nothing in the others). */
  protected abstract render(result: R, mode: OutputMode): string

  /** Set from the parsed flags: `json` (one envelope), `ndjson` (lines streamed as items finish) or `human`. */
  protected outputMode: OutputMode = 'human'

  protected get jsonMode(): boolean {
    return this.outputMode === 'json'
  }

  /** A screen redrawn in place (audit-locks --watch): clears the terminal, then writes `text`. */
  protected redraw(text: string): void {
    process.stdout.write(`\u001B[2J\u001B[H${text}\n`)
  }

  /** The width human tables fit: COLUMNS when set, else the terminal's, else unbounded (tableWidth). */
  protected get terminalWidth(): number | undefined {
    return tableWidth(process.env, process.stdout, process.stderr)
  }

  /** Whether stdout is a terminal a person watches. */
  protected get interactiveStdout(): boolean {
    return process.stdout.isTTY
  }

  /** Lines for stdout while the command runs (NDJSON items, CSV rows, an export): the only other way onto stdout. */
  protected emit(line: string): void {
    process.stdout.write(line.endsWith('\n') ? line : line + '\n')
  }

  /** The stream a command writes its data to when it produces a file's worth (export-events to stdout). */
  protected get stdoutStream(): Writable {
    return process.stdout
  }

  /** Opens the database the connection flags name (closed when the command ends); for commands that need no Airflow schema. */
  protected async openDatabase(
    flags: ConnectionFlagValues,
    options: OpenOptions,
  ): Promise<{db: Database; target: string; source: string}> {
    // Said at once, so a connection that then fails still shows it (an ignored password file).
    const opened = await openFromFlags(
      flags,
      {...options, warn: (message) => this.note(message), log: this.statementLog},
      (secret) => this.secrets.add(secret),
    )
    this.onCleanup(() => opened.db.close())
    for (const note of opened.notes) this.progress(note)
    return {db: opened.db, target: opened.target, source: opened.connection.source}
  }

  /**
   * Opens the Airflow database the flags name and builds its store, or exits 8 naming what is
   * wrong. `writes`: the command whose privileges must all be granted before the first item
   * (exit 2, PERMISSION_DENIED, naming them), instead of every item failing on 42501.
   */
  protected async openAirflow(
    flags: ConnectionFlagValues,
    options: OpenOptions & {writes?: string},
  ): Promise<AirflowDatabase<AirflowStore>> {
    const {db} = await this.openDatabase(flags, options)
    const airflow = await requireAirflow(db, {assumeVersion: flags['assume-version']})
    if (options.writes) await requirePrivileges(db, options.writes)
    // Said on every run, so a forgotten AIRLOCK_ASSUME_VERSION or an unfinished upgrade is seen.
    const placement = placementWarning(airflow.schema)
    if (placement) this.recordWarning(placement)

    return airflow
  }

  /**
   * Runs a prepared write batch for the operator: what it acts on, then the question (or the
   * refusal without --yes off a terminal), progress on stderr, items streamed or kept by output
   * mode and copied to --output, SIGINT/SIGTERM finishing the transactions in flight, and the
   * tally's exit. `quiet`: the batch is part of another report (audit-events --fix): its items are
   * kept for it, nothing is streamed.
   */
  protected async writeBatch<J extends {outcome: string}, Name extends string>(
    batch: PreparedBatch<J, Name>,
    options: {yes: boolean; outputFile?: string | undefined; quiet?: boolean; failIfEmpty?: boolean},
  ): Promise<CommandOutcome<BatchReport<J>>> {
    const outputFile = await newOutputName(options.outputFile)
    for (const warning of batch.warnings) this.note(warning)
    for (const note of batch.notes ?? []) this.progress(note)
    await this.confirmBatch(batch, options.yes)
    const file = outputFile
      ? await createLineFile(outputFile).catch((error: unknown) => {
          // Created between the check and now, or not writable by this user: the operator's to fix.
          throw usageError(
            `--output: ${outputFile}: ${error instanceof Error ? error.message : String(error)}. Nothing was written.`,
          )
        })
      : undefined
    if (file) this.onCleanup(() => file.close())
    const output = new BatchOutput<J>(
      options.quiet ? 'json' : this.outputMode,
      batch.plan ? `${batch.label} (plan)` : batch.dryRun ? `${batch.label} (dry run)` : batch.label,
      batch.count,
      batch.doneOutcomes,
      (line) => this.emit(line),
      file,
    )
    // What has finished, for a second signal that exits at once.
    let latest: Tally<Name> | undefined
    this.interrupts.startBatch(() => this.stoppedAtOnce(latest && output.finish(latest, batch.dryRun, true)))
    const lockWaits = new LockWaits()
    const stopWatching = batch.holderOf
      ? watchLockWaits(lockWaits, batch.holderOf, (wait) =>
          output.status(wait && this.scrub(describeLockWait(wait)), wait && `${wait.label} ${wait.holder?.pid ?? ''}`),
        )
      : () => undefined
    const {tally, interrupted, lost, lineage} = await batch
      .run({
        shouldStop: this.interrupts.requested,
        onItem: (json, tally) => {
          latest = tally
          output.add(json, tally)
        },
        lockWaits,
      })
      // The batch itself failed (the database went away): what finished is committed or rolled
      // back whatever came after, so the report of the failure lists it.
      .catch((error: unknown) =>
        this.failedAfter(error, options.quiet ? undefined : output.fail(latest, batch.dryRun, this.errorLine(error))),
      )
      .finally(stopWatching)
    for (const warning of tally.warnings()) this.note(warning)
    // The server went away: one event, exit 7, reported as a batch the database cut short (the
    // error envelope, or the stream's error line, with every item that finished).
    const error = lost && lostServerError(tally, batch.count, this.resumeAdvice(options.outputFile))
    if (error) this.failedAfter(error, !options.quiet && output.fail(tally, batch.dryRun, this.errorLine(error)))
    if (lineage) output.delivered(lineage.delivery)
    const exit = this.batchExit(tally, batch, interrupted, options.failIfEmpty === true, lineage)
    // A batch that is the whole command: its summary is the command's, so its exit stands from
    // here (a quiet batch is part of a command that settles its own exit).
    if (!options.quiet) this.settle(exit)
    const report = output.finish(tally, batch.dryRun, interrupted)
    // The items are in the database whatever became of their copy (a full disk): said, not a failure.
    await file
      ?.close()
      .catch((error: unknown) =>
        this.note(
          `--output ${file.path}: writing failed (${error instanceof Error ? error.message : String(error)}); the file is incomplete, the run's items are above`,
        ),
      )
    return {
      result: {
        ...report,
        ...(batch.dryRun && batch.breakdown ? {breakdown: batch.breakdown} : {}),
        ...(batch.plan ? {plan: planCaveat} : {}),
      },
      exit,
    }
  }

  /** What a filter reaches, shown before anyone is asked to confirm it (or a dry run lists its items); then the question. */
  private async confirmBatch(
    batch: Pick<PreparedBatch<{outcome: string}, string>, 'count' | 'prompt' | 'dryRun' | 'breakdown'>,
    yes: boolean,
  ): Promise<void> {
    const asking = !yes && !batch.dryRun && ((batch.prompt.changing ?? batch.count) > 1 || batch.prompt.always)
    if (batch.breakdown && this.outputMode === 'human' && (asking || batch.dryRun) && batch.count > 0) {
      process.stderr.write(`${this.scrub(renderBreakdown(batch.breakdown, batch.count, this.terminalWidth))}\n\n`)
    }
    await confirmBulkWrite({
      count: batch.count,
      changing: batch.prompt.changing,
      action: batch.prompt.action,
      noun: batch.prompt.noun,
      yes,
      dryRun: batch.dryRun,
      machineOutput: this.outputMode !== 'human',
      always: batch.prompt.always,
    })
  }

  /**
   * The command's exit is decided and its summary about to be printed: from now on a signal ends
   * the process with this exit at once, never with 130 or by the signal itself (Interrupts.settle).
   */
  protected settle(exit: ExitCode): void {
    this.interrupts.settle(exit)
  }

  /** A second signal in a batch: what has finished, said before the process exits at once. */
  private stoppedAtOnce(partial: BatchReport<unknown> | undefined): void {
    if (this.jsonMode) {
      this.writeStdout(
        JSON.stringify({status: ExitCode.interrupted, result: partial ?? null, warnings: this.collectedWarnings}),
      )
    } else if (this.outputMode === 'human') {
      process.stderr.write(
        `Stopped at once by a second signal: ${partial ? `${partial.summary.selected} item(s) had finished (above)` : 'no item had finished'}; transactions still open were rolled back by the server. Running the same command again is safe.\n`,
      )
    }
  }

  /** A finished batch's exit: 130 when interrupted, 4 for an empty selection under --fail-if-empty, else its items'. */
  private batchExit<Name extends string>(
    tally: Tally<Name>,
    batch: {count: number; label: string; explicit: boolean},
    interrupted: boolean,
    failIfEmpty: boolean,
    lineage?: {delivery: LineageDeliveryReport; required: boolean},
  ): ExitCode {
    if (interrupted) return ExitCode.interrupted
    // An empty batch has no lineage to require: the empty selection's exit is the batch's.
    const exit = this.exitUnlessEmpty(
      {'fail-if-empty': failIfEmpty},
      batch.count === 0,
      `${batch.label} selected nothing`,
      tally.exit({explicit: batch.explicit}),
    )
    const kept = lineage ? notConfirmed(lineage.delivery) : 0
    if (lineage?.required && kept > 0 && exit !== ExitCode.partialFailure) {
      this.note(
        `--lineage-required: ${kept} OpenLineage COMPLETE event${kept === 1 ? ' was' : 's were'} not confirmed (kept in ${lineage.delivery.spool}): exit 5`,
      )
      return ExitCode.partialFailure
    }
    return exit
  }

  /**
   * --fail-if-empty for a command that reports its own exit: exit 4, said in a warning, when its
   * selection matched nothing; otherwise the exit it decided.
   */
  protected exitUnlessEmpty(
    flags: {'fail-if-empty'?: boolean},
    empty: boolean,
    what: string,
    exit: ExitCode,
  ): ExitCode {
    if (!flags['fail-if-empty'] || !empty) return exit
    this.note(`--fail-if-empty: ${what}: exit 4`)
    return ExitCode.notFound
  }

  /**
   * The operator's own command line, to take up a run the server cut short, and what it cannot
   * repeat verbatim: an --output file this run created (a second run refuses to overwrite it), a
   * password the line prints scrubbed.
   */
  private resumeAdvice(outputFile: string | undefined): {command: string; caveats: string[]} {
    const command = resumeCommand(this.config.bin, this.id ?? '', this.argv)
    const scrubbed = this.scrub(command)
    return {
      command: scrubbed,
      caveats: [
        ...(outputFile !== undefined && !outputFile.includes('{timestamp}')
          ? [`give --output a new name: ${outputFile} holds this run's items, and airlock never overwrites a file`]
          : []),
        ...(scrubbed === command
          ? []
          : ['the password is printed as ***: put it back, or give it as PGPASSWORD, a password file or a profile']),
      ],
    }
  }

  private failedAfter(error: unknown, finished: unknown): never {
    if (finished) this.cutShort = finished
    throw error
  }

  /** For a loop that runs until Ctrl-C (audit-locks --watch): returns "was it asked to stop?"; a second signal exits at once. */
  protected untilInterrupted(): () => boolean {
    this.interrupts.startBatch(
      () => undefined,
      () => undefined,
    )
    return this.interrupts.requested
  }

  /** A warning: in the envelope under --json, on stderr otherwise. */
  protected note(message: string): void {
    this.collectedWarnings.push(message)
    if (!this.jsonMode) process.stderr.write(`warning: ${this.scrub(message)}\n`)
  }

  /** A warning the human rendering already shows: only recorded for the envelope. */
  protected recordWarning(message: string): void {
    this.collectedWarnings.push(message)
  }

  /** Progress and log lines: always stderr, never under --json. */
  protected progress(message: string): void {
    if (!this.jsonMode) process.stderr.write(`${this.scrub(message)}\n`)
  }

  protected onCleanup(cleanup: () => Promise<void>): void {
    this.cleanups.push(cleanup)
  }

  protected scrub(text: string): string {
    return redact(text, this.secrets)
  }

  /**
   * oclif's parse, with every failure in it (unknown flag, bad integer, failed option check,
   * a flag's own parse function) turned into a one-line usage error: exit 2, never exit 1.
   */
  // oclif's own signature; its flag and argument maps are typed `any` there.
  /* eslint-disable @typescript-eslint/no-explicit-any */
  protected override async parse<
    F extends Interfaces.OutputFlags<any>,
    B extends Interfaces.OutputFlags<any>,
    A extends Interfaces.OutputArgs<any>,
  >(options?: Interfaces.Input<F, B, A>, argv?: string[]): Promise<Interfaces.ParserOutput<F, B, A>> {
    /* eslint-enable @typescript-eslint/no-explicit-any */
    try {
      const parsed = await super.parse(options, argv)
      const flags = parsed.flags as {json?: boolean; ndjson?: boolean; verbose?: boolean}
      this.outputMode = flags.json ? 'json' : flags.ndjson ? 'ndjson' : 'human'
      // On stderr in every output mode: stdout stays one JSON document or the NDJSON stream.
      if (flags.verbose) this.statementLog = (line) => process.stderr.write(`${this.scrub(line)}\n`)
      return parsed
    } catch (error) {
      // The flags did not parse, so the mode comes from the raw arguments: a script that asked for
      // --json still gets its error as an envelope.
      if (this.argv.includes('--json')) this.outputMode = 'json'
      // oclif's messages quote flag values ("--database-url=postgresql://u:pw@h/db cannot also be
      // provided when using --embedded"): a URL's password is scrubbed like any other secret.
      for (const arg of this.argv) {
        const password = passwordOf(arg.startsWith('--') ? arg.slice(arg.indexOf('=') + 1) : arg)
        if (password) this.secrets.add(password)
      }
      if (error instanceof AirlockError) throw error
      const first = (error instanceof Error ? error.message : String(error))
        .replace(/\s+/g, ' ')
        .replace(/See more help with --help/i, '')
        .trim()
      throw new AirlockError(
        'USAGE',
        ExitCode.usage,
        `${first} (see airlock ${this.id?.replaceAll(':', ' ') ?? ''} --help)`,
      )
    }
  }

  public async run(): Promise<void> {
    let exit: ExitCode = ExitCode.internal
    // Until the flags are parsed, the mode comes from the raw arguments (a signal can come first).
    this.outputMode = this.argv.includes('--json') ? 'json' : this.argv.includes('--ndjson') ? 'ndjson' : 'human'
    this.interrupts = new Interrupts((signal) =>
      this.progress(`${signal}: finishing the transactions in flight, taking no new ones…`),
    )
    try {
      // A signal before the batch (loading, connecting, counting, the prompt) ends the command here.
      const outcome = await Promise.race([this.execute(), this.interrupts.beforeBatch])
      exit = outcome.exit ?? ExitCode.ok
      // The command is done: a signal from here on keeps this exit (and prints nothing more).
      process.exitCode = exit
      this.interrupts.dispose()
      if (this.jsonMode) {
        const envelope: SuccessEnvelope<R> = {status: exit, result: outcome.result, warnings: this.collectedWarnings}
        this.writeStdout(JSON.stringify(envelope))
      } else if (this.outputMode === 'human') {
        const text = this.render(outcome.result, this.outputMode)
        if (text) this.writeStdout(text)
      }
    } catch (error) {
      exit = this.reportError(error)
    } finally {
      // Decided before the cleanups, so a signal during them exits with it (Interrupts.dispose).
      process.exitCode = exit
      this.interrupts.dispose()
      const cleanups = (async () => {
        for (const cleanup of this.cleanups.reverse()) await cleanup().catch(() => undefined)
      })()
      // Interrupted before the batch, a pool may still wait on a statement (a lock wait): closing it
      // would wait that long too. Give the cleanups a second; the server ends the session when the
      // process exits.
      const interruptedEarly = this.interrupts.requested() && !this.interrupts.inBatch()
      await (interruptedEarly
        ? Promise.race([cleanups, new Promise((resolve) => setTimeout(resolve, 1000).unref())])
        : cleanups)
    }

    process.exitCode = exit
    // Interrupted before the batch: what was still loading or connecting is abandoned, not awaited.
    if (exit === ExitCode.interrupted && this.interrupts.requested()) process.exit(exit)
  }

  /** The NDJSON line an error ends a stream (or an --output file) with. */
  private errorLine(error: unknown): string {
    return JSON.stringify({type: 'error', ...this.toErrorEnvelope(error)})
  }

  private reportError(error: unknown): ExitCode {
    const envelope = this.toErrorEnvelope(error)
    const finished = this.cutShort
    if (this.jsonMode) {
      this.writeStdout(JSON.stringify(finished ? {...envelope, result: finished} : envelope))
    } else {
      // NDJSON: the finished items are streamed already; the stream ends with how it ended. Human:
      // the finished items' table first, then the error.
      if (this.outputMode === 'ndjson') this.writeStdout(this.errorLine(error))
      else if (finished) {
        const text = this.render(finished as R, 'human')
        if (text) this.writeStdout(text)
      }
      const lines = [`Error: ${envelope.error.message}`, ...envelope.error.actions.map((action) => `  → ${action}`)]
      process.stderr.write(lines.join('\n') + '\n')
      if (envelope.error.code === 'INTERNAL' && process.env.AIRLOCK_DEBUG && error instanceof Error) {
        process.stderr.write(this.scrub(String(error.stack)) + '\n')
      }
    }

    return envelope.status as ExitCode
  }

  private toErrorEnvelope(error: unknown): ErrorEnvelope {
    if (error instanceof AirlockError) {
      return {
        status: error.exit,
        error: {
          name: error.name,
          code: error.code,
          message: this.scrub(error.message),
          actions: this.actionsFor(error.actions).map((a) => this.scrub(a)),
        },
      }
    }

    const known = databaseFailureOf(error)
    if (known) {
      return {
        status: known.exit,
        error: {
          name: 'AirlockError',
          code: known.code,
          message: this.scrub(known.message),
          actions: this.actionsFor(known.actions),
        },
      }
    }

    const message = error instanceof Error ? error.message : String(error)
    return {
      status: ExitCode.internal,
      error: {
        name: 'InternalError',
        code: 'INTERNAL',
        message: this.scrub(`Unexpected failure (a bug in airlock): ${message}`),
        actions: ['Re-run with AIRLOCK_DEBUG=1 for the stack trace and report it.'],
      },
    }
  }

  /** What to do next, without "run airlock doctor" when the command that failed is doctor. */
  private actionsFor(actions: readonly string[]): string[] {
    return this.id === 'doctor' ? actions.filter((action) => !isDoctorAction(action)) : [...actions]
  }

  private writeStdout(text: string): void {
    process.stdout.write(text.endsWith('\n') ? text : text + '\n')
  }
}

export type InferredFlags<T extends typeof Command> = Interfaces.InferredFlags<
  (typeof AirlockCommand)['baseFlags'] & T['flags']
>

/**
 * --output's name for this run ({timestamp} filled in: a cron job's fixed command line writes a
 * new file each night), refused before anyone is asked and before anything is written when it
 * cannot be created new.
 */
export async function newOutputName(name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined
  const expanded = expandOutputName(name, '--output')
  const unwritable = await whyNotWritable(expanded)
  if (unwritable) throw usageError(`--output: ${unwritable}. Nothing was written.`)
  return expanded
}

/**
 * What a run cut short by a lost server says: how many items were done, failed (and of those,
 * left unknown by a COMMIT in flight) and never reached, and the command that takes it up.
 */
function lostServerError(tally: Tally, selected: number, resume: {command: string; caveats: string[]}): AirlockError {
  const failed = tally.counts.get('failed') ?? 0
  const unknown =
    tally.commitUnknown > 0
      ? ` (${tally.commitUnknown} unknown: the COMMIT was sent and the connection lost; the next run reads whether it committed)`
      : ''
  return unreachableError(
    `The database server went away during the batch: of ${selected} selected, ${tally.selected - failed} done, ${failed} failed${unknown}, ${Math.max(0, selected - tally.selected)} never reached. No new item was started after the first that could not reach it; each line above says what became of its item.`,
    [
      `When the server is back, run the same command again: every item is rechecked under its lock, so what committed reads already_success or is no longer selected${resume.caveats.length > 0 ? ` (${resume.caveats.join('; ')})` : ''}.`,
      `Resume with: ${resume.command}`,
    ],
  )
}
