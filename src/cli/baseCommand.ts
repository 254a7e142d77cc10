import type {Writable} from 'node:stream'

import {Command, Flags, type Interfaces} from '@oclif/core'

import type {PreparedBatch} from '../batch/prepared.js'
import {passwordOf, redact} from '../connection/url.js'
import type {Database, OpenOptions, StatementLog} from '../engine/engine.js'
import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {tableWidth} from '../output/width.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {AirflowStore} from '../store/airflowStore.js'
import {exitUnlessEmpty, writeBatch, type BatchHost, type CommandOutcome} from './batchRun.js'
import type {ConnectionFlagValues} from './connectionFlags.js'
import {errorEnvelope, type ErrorEnvelope} from './errorEnvelope.js'
import {abandonAfterMs, Interrupts} from './interrupt.js'
import {openAirflow, openDatabase, type OpenHost} from './openAirflow.js'
import {openOutputFile, type OutputMode} from './outputFile.js'
import type {BatchReport} from './renderItems.js'
import {resumeCommand, resumeLines} from './resumeCommand.js'

export type {CommandOutcome} from './batchRun.js'
export type {ErrorEnvelope} from './errorEnvelope.js'

export interface SuccessEnvelope<R> {
  status: number
  result: R
  warnings: string[]
}

/**
 * The one base command. It runs a command and owns its output modes, stdout, the `--json`
 * envelope, the secret scrubber and the exit code; opening the database (openAirflow.ts), the batch
 * run (batchRun.ts), --output (outputFile.ts) and the error text (errorEnvelope.ts) are modules it
 * hands a view of itself (`host`), so a command is its flags, one call and a rendering. oclif's own `--json` support is not used: in oclif 4 it reports every failure as
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
  /** What the modules a command is composed of see of it (built once, on first use). */
  private hostView: (OpenHost & BatchHost) | undefined
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
  protected openDatabase(
    flags: ConnectionFlagValues,
    options: OpenOptions,
  ): Promise<{db: Database; target: string; source: string}> {
    return openDatabase(this.host, flags, options)
  }

  /** Opens the Airflow database the flags name and builds its store, or exits 8 (see openAirflow.ts). */
  protected openAirflow(
    flags: ConnectionFlagValues,
    options: OpenOptions & {writes?: string},
  ): Promise<AirflowDatabase<AirflowStore>> {
    return openAirflow(this.host, flags, options)
  }

  /** Runs a prepared write batch for the operator (see batchRun.ts). */
  protected writeBatch<J extends {outcome: string}, Name extends string>(
    batch: PreparedBatch<J, Name>,
    options: {yes: boolean; outputFile?: string | undefined; quiet?: boolean; failIfEmpty?: boolean},
  ): Promise<CommandOutcome<BatchReport<J>>> {
    return writeBatch(this.host, batch, options)
  }

  /** A new --output file (checked by newOutputName), closed when the command ends. */
  protected openOutputFile(target: string): ReturnType<typeof openOutputFile> {
    return openOutputFile(target, (cleanup) => this.onCleanup(cleanup))
  }

  /** What the modules a command is composed of (opening, the batch run) ask of it. */
  private get host(): OpenHost & BatchHost {
    this.hostView ??= this.makeHost()
    return this.hostView
  }

  private makeHost(): OpenHost & BatchHost {
    // The getters read the command's state when asked: the mode is set by parse, after this exists.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const command = this
    return {
      get outputMode() {
        return command.outputMode
      },
      get terminalWidth() {
        return command.terminalWidth
      },
      get interrupts() {
        return command.interrupts
      },
      get statementLog() {
        return command.statementLog
      },
      get abandon() {
        return command.interrupts.abandon
      },
      note: (message) => this.note(message),
      recordWarning: (message) => this.recordWarning(message),
      progress: (message) => this.progress(message),
      remember: (secret) => this.secrets.add(secret),
      scrub: (text) => this.scrub(text),
      emit: (line) => this.emit(line),
      onCleanup: (cleanup) => this.onCleanup(cleanup),
      errorLine: (error) => this.errorLine(error),
      stoppedAtOnce: (partial) => this.stoppedAtOnce(partial),
      cutShort: (finished) => (this.cutShort = finished),
      commandLine: () => resumeCommand(this.config.bin, this.id ?? '', this.argv, this.ctor.flags.output?.char),
    }
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
        `Stopped at once by a second signal: ${partial ? `${partial.summary.selected} item(s) had finished (above)` : 'no item had finished'}; transactions still open were rolled back by the server. Running the same command again is safe.${partial?.resume ? `\n${resumeLines(partial)}` : ''}\n`,
      )
    }
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
    return exitUnlessEmpty(this.host, flags, empty, what, exit)
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
      this.progress(
        `${signal}: stopping: no new item or retry is started; transactions waiting for a row lock are cancelled and rolled back, those past it finish, and whatever still waits for the server ${abandonAfterMs / 1000} s from now is given up. A second signal stops at once (the server rolls back what is still open).`,
      ),
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
    return errorEnvelope(error, (text) => this.scrub(text), this.id)
  }

  private writeStdout(text: string): void {
    process.stdout.write(text.endsWith('\n') ? text : text + '\n')
  }
}

export type InferredFlags<T extends typeof Command> = Interfaces.InferredFlags<
  (typeof AirlockCommand)['baseFlags'] & T['flags']
>
