import type {Tally} from '../batch/tally.js'
import {notConfirmed, type LineageDeliveryReport, type PreparedBatch} from '../batch/prepared.js'
import {readOnlyServerActions} from '../doctor/writableServer.js'
import {AirlockError, unreachableError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {LockWaits, watchLockWaits} from '../protocol/lockWaits.js'
import {planCaveat} from '../protocol/plan.js'
import {BatchOutput} from './batchOutput.js'
import {confirmBulkWrite} from './confirm.js'
import type {Interrupts} from './interrupt.js'
import {newOutputName, openOutputFile, writingFailed, type OutputMode} from './outputFile.js'
import type {ResumeLine} from './resumeCommand.js'
import {describeLockWait, renderBreakdown, type BatchReport} from './renderItems.js'

/** What a batch run asks of the command it runs in: its output, its signals, its error report. */
export interface BatchHost {
  readonly outputMode: OutputMode
  /** The width human tables fit (the breakdown before the question). */
  readonly terminalWidth: number | undefined
  readonly interrupts: Interrupts
  /** A warning: in the envelope under --json, on stderr otherwise. */
  note(message: string): void
  /** A progress line on stderr (never under --json). */
  progress(message: string): void
  scrub(text: string): string
  /** A line for stdout (an NDJSON item or summary). */
  emit(line: string): void
  onCleanup(cleanup: () => Promise<void>): void
  /** The NDJSON line an error ends a stream (or an --output file) with. */
  errorLine(error: unknown): string
  /** A second signal in a batch: what has finished, said before the process exits at once. */
  stoppedAtOnce(partial: BatchReport<unknown> | undefined): void
  /** The report of a batch a failure cut short, for the error's report to list. */
  cutShort(finished: unknown): void
  /** The operator's own command line (unscrubbed), to take up a run a signal or the server cut short. */
  commandLine(): ResumeLine
}

/** What a command hands back: the result that becomes `--json`'s `result`, and its exit code. */
export interface CommandOutcome<R> {
  result: R
  exit?: ExitCode
}

/**
 * Runs a prepared write batch for the operator: what it acts on, then the question (or the
 * refusal without --yes off a terminal), progress on stderr, items streamed or kept by output
 * mode and copied to --output, SIGINT/SIGTERM finishing the transactions in flight, and the
 * tally's exit. `quiet`: the batch is part of another report (audit-events --fix): its items are
 * kept for it, nothing is streamed.
 */
export async function writeBatch<J extends {outcome: string}, Name extends string>(
  host: BatchHost,
  batch: PreparedBatch<J, Name>,
  options: {yes: boolean; outputFile?: string | undefined; quiet?: boolean; failIfEmpty?: boolean},
): Promise<CommandOutcome<BatchReport<J>>> {
  const outputFile = await newOutputName(options.outputFile)
  for (const warning of batch.warnings) host.note(warning)
  for (const note of batch.notes ?? []) host.progress(note)
  await confirmBatch(host, batch, options.yes)
  const file = outputFile ? await openOutputFile(outputFile, (cleanup) => host.onCleanup(cleanup)) : undefined
  const output = new BatchOutput<J>(
    options.quiet ? 'json' : host.outputMode,
    batch.plan ? `${batch.label} (plan)` : batch.dryRun ? `${batch.label} (dry run)` : batch.label,
    batch.count,
    batch.doneOutcomes,
    (line) => host.emit(line),
    file,
  )
  output.passedOver(batch.notSelected)
  // What has finished, for a second signal that exits at once.
  let latest: Tally<Name> | undefined
  // A run a signal stops says how to take it up (a batch inside another report leaves that to it).
  const resumeOnSignal = () => (options.quiet ? undefined : resumeAdvice(host))
  host.interrupts.startBatch(() =>
    host.stoppedAtOnce(latest && output.finish(latest, batch.dryRun, true, true, resumeOnSignal())),
  )
  const lockWaits = new LockWaits()
  const stopWatching = batch.holderOf
    ? watchLockWaits(lockWaits, batch.holderOf, (wait) =>
        output.status(wait && host.scrub(describeLockWait(wait)), wait && `${wait.label} ${wait.holder?.pid ?? ''}`),
      )
    : () => undefined
  const failedAfter = (error: unknown, finished: unknown): never => {
    if (finished) host.cutShort(finished)
    throw error
  }
  const {tally, interrupted, lost, lineage} = await batch
    .run({
      shouldStop: host.interrupts.requested,
      stop: host.interrupts.stop,
      onItem: (json, tally) => {
        latest = tally
        output.add(json, tally)
      },
      lockWaits,
    })
    // The batch itself failed (the database went away): what finished is committed or rolled
    // back whatever came after, so the report of the failure lists it.
    .catch((error: unknown) =>
      failedAfter(error, options.quiet ? undefined : output.fail(latest, batch.dryRun, host.errorLine(error))),
    )
    .finally(stopWatching)
  for (const warning of tally.warnings()) host.note(warning)
  // The server went away, or stopped taking writes: one event, exit 7 (9 for a read-only server),
  // reported as a batch the database cut short (the error envelope, or the stream's error line,
  // with every item that finished).
  const resume = lost ? resumeAdvice(host) : undefined
  const error =
    resume &&
    (tally.refusedReadOnly > 0
      ? readOnlyServerError(tally, batch.count, resume)
      : lostServerError(tally, batch.count, resume))
  if (error) failedAfter(error, !options.quiet && output.fail(tally, batch.dryRun, host.errorLine(error)))
  if (lineage) output.delivered(lineage.delivery)
  const exit = batchExit(host, tally, batch, interrupted, options.failIfEmpty === true, lineage)
  // A batch that is the whole command: its summary is the command's, so its exit stands from
  // here (a quiet batch is part of a command that settles its own exit).
  if (!options.quiet) host.interrupts.settle(exit)
  const report = output.finish(tally, batch.dryRun, interrupted, true, interrupted ? resumeOnSignal() : undefined)
  // The items are in the database whatever became of their copy (a full disk): said, not a failure.
  await file
    ?.close()
    .catch((error: unknown) => host.note(`${writingFailed(file.path, error)}, the run's items are above`))
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
async function confirmBatch(
  host: BatchHost,
  batch: Pick<PreparedBatch<{outcome: string}, string>, 'count' | 'prompt' | 'dryRun' | 'breakdown' | 'notSelected'>,
  yes: boolean,
): Promise<void> {
  const asking = !yes && !batch.dryRun && ((batch.prompt.changing ?? batch.count) > 1 || batch.prompt.always)
  if (batch.breakdown && host.outputMode === 'human' && (asking || batch.dryRun) && batch.count > 0) {
    process.stderr.write(
      `${host.scrub(renderBreakdown(batch.breakdown, batch.count, host.terminalWidth, batch.notSelected))}\n\n`,
    )
  }
  await confirmBulkWrite({
    count: batch.count,
    changing: batch.prompt.changing,
    action: batch.prompt.action,
    noun: batch.prompt.noun,
    yes,
    dryRun: batch.dryRun,
    machineOutput: host.outputMode !== 'human',
    always: batch.prompt.always,
  })
}

/** A finished batch's exit: 130 when interrupted, 4 for an empty selection under --fail-if-empty, else its items'. */
function batchExit<Name extends string>(
  host: Pick<BatchHost, 'note'>,
  tally: Tally<Name>,
  batch: {count: number; label: string; explicit: boolean; warnings: readonly string[]},
  interrupted: boolean,
  failIfEmpty: boolean,
  lineage?: {delivery: LineageDeliveryReport; required: boolean},
): ExitCode {
  if (interrupted) return ExitCode.interrupted
  // An empty batch has no lineage to require: the empty selection's exit is the batch's.
  const exit = exitUnlessEmpty(
    host,
    {'fail-if-empty': failIfEmpty},
    batch.count === 0,
    `${batch.label} selected nothing`,
    tally.exit({explicit: batch.explicit}),
    batch.warnings.length > 0,
  )
  const kept = lineage ? notConfirmed(lineage.delivery) : 0
  if (lineage?.required && kept > 0 && exit !== ExitCode.partialFailure) {
    host.note(
      `--lineage-required: ${kept} OpenLineage COMPLETE event${kept === 1 ? ' was' : 's were'} not confirmed (kept in ${lineage.delivery.spool}): exit 5`,
    )
    return ExitCode.partialFailure
  }
  return exit
}

/**
 * --fail-if-empty: exit 4, said in a warning, when the selection matched nothing; without it the
 * exit the command decided, with a warning that nothing matched (unless the selection said so).
 */
export function exitUnlessEmpty(
  host: Pick<BatchHost, 'note'>,
  flags: {'fail-if-empty'?: boolean},
  empty: boolean,
  what: string,
  exit: ExitCode,
  /** The selection already said it matched nothing (a batch's own warning). */
  said = false,
): ExitCode {
  if (!empty) return exit
  if (!flags['fail-if-empty']) {
    // Exit 0, as --fail-if-empty's help promises, but never silently: a cron job's log says why.
    if (!said) host.note(`${what}: nothing to do`)
    return exit
  }
  host.note(`--fail-if-empty: ${what}: exit 4`)
  return ExitCode.notFound
}

/**
 * The operator's own command line, to take up a run a signal or the server cut short, and what
 * it does not repeat verbatim: the --output file this run created (the line names a new one: a
 * second run never overwrites a file), a password it prints scrubbed.
 */
function resumeAdvice(host: BatchHost): {command: string; caveats: string[]} {
  const {command, output} = host.commandLine()
  const scrubbed = host.scrub(command)
  return {
    command: scrubbed,
    caveats: [
      ...(output && output.now !== output.was
        ? [
            `its items go to a new file, ${output.now} ({timestamp} filled in when it starts): ${output.was} keeps this run's`,
          ]
        : []),
      ...(scrubbed === command
        ? []
        : ['the password is printed as ***: put it back, or give it as PGPASSWORD, a password file or a profile']),
    ],
  }
}

/**
 * What a run cut short by a server that stopped accepting writes says (a failover put a standby
 * behind the address, default_transaction_read_only was turned on): the items it refused wrote
 * nothing, and running again meets the same refusal until the server accepts writes, so it is
 * exit 9, never exit 5's "running again is safe".
 */
function readOnlyServerError(
  tally: Tally,
  selected: number,
  resume: {command: string; caveats: string[]},
): AirlockError {
  const failed = tally.counts.get('failed') ?? 0
  return new AirlockError(
    'READ_ONLY_SERVER',
    ExitCode.readOnly,
    `The server stopped accepting writes during the batch (SQLSTATE 25006: a standby behind the address after a failover, or default_transaction_read_only turned on): of ${selected} selected, ${tally.selected - failed} done, ${failed} failed (${tally.refusedReadOnly} refused as read-only: rolled back, nothing written), ${Math.max(0, selected - tally.selected)} never reached. No new item was started after the first the server refused; each line above says what became of its item.`,
    [
      ...readOnlyServerActions(),
      `Once it accepts writes, run the same command again: every item is rechecked under its lock, so what committed reads already_success or is no longer selected${resume.caveats.length > 0 ? ` (${resume.caveats.join('; ')})` : ''}.`,
      `Resume with: ${resume.command}`,
    ],
  )
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
