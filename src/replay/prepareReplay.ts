import {performance} from 'node:perf_hooks'

import {runBatch} from '../batch/pool.js'
import {lostServer} from '../protocol/outcomes.js'
import type {BatchHooks, PreparedBatch, WriteOptions} from '../batch/prepared.js'
import {Tally} from '../batch/tally.js'
import {usageError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {LineageSender, lineageReport} from '../lineage/lineage.js'
import {lineageWarnings, type LineageSettings} from '../lineage/settings.js'
import {plannerOf, planProtocol, type PlanStore} from '../protocol/plan.js'
import {runProtocol} from '../protocol/protocol.js'
import {errorJson, toItemJson, type ErrorJson, type ItemJson} from '../report/itemJson.js'
import {readFindingsFile, type FindingsInput} from '../selection/findingsFile.js'
import {openItemSource, type ItemSource, type SelectionRequest} from '../selection/itemSource.js'
import type {WorkItem} from '../selection/workItem.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {EventStore} from '../store/families/events.js'
import type {LineageStore} from '../store/families/lineage.js'
import {Checkpoint, fingerprintOf} from './checkpoint.js'
import {eventsById, eventsFromFile, validateEventFile, type EventWork} from './eventSources.js'
import {reemitEvent, type EventItem, type ReemitStore} from './reemitEvent.js'
import {replayMissingWriter, type ReplayMissingStore} from './replayMissingWriter.js'

/** The store families replay-events uses, in its three modes. */
type ReplayStore = ReplayMissingStore & ReemitStore & PlanStore & EventStore & LineageStore

export type ReplayMode =
  | {kind: 'missing'; selection: SelectionRequest; fromFindings?: boolean}
  | {kind: 'event-id'; ids: number[]}
  | {kind: 'file'; path: string; skipExisting: boolean; limit?: number | undefined}

/** Every outcome of a replay item (task instance or event) and the exit code it maps to. */
export const replayOutcomes = {
  replayed: ExitCode.ok,
  nothing_missing: ExitCode.ok,
  not_emitted: ExitCode.ok,
  unknown: ExitCode.ok,
  changed: ExitCode.conflict,
  skipped_existing: ExitCode.ok,
  not_found: ExitCode.notFound,
  unknown_asset: ExitCode.partialFailure,
  failed: ExitCode.partialFailure,
} as const

export type ReplayOutcomeName = keyof typeof replayOutcomes

/** An item of an event-level replay (by id or from a file), as JSON. */
export interface EventItemJson {
  source: string
  event_id: number | null
  /** Null when the event id does not exist. */
  asset: string | null
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  outcome: string
  new_event_id: number | null
  /** The audit `log` row of a committed re-emit (what `airlock undo --log-id` takes back). */
  log_id?: number
  existing_event_id: number | null
  events: number
  queued: number
  timings: {total_ms: number}
  error?: ErrorJson
}

export interface ReplayRequest {
  mode: ReplayMode
  /** JSON text of replayed events' extra (missing mode). */
  defaultExtra: string
  /** Which tries a missing-mode replay writes for besides lost ones. */
  accepts: {includeMarkedSuccess?: boolean | undefined; includeUnknown?: boolean | undefined}
  /** --checkpoint: where the run got to, tied to this request. */
  checkpointFile?: string | undefined
  write: WriteOptions
  airlockVersion: string
  actor?: string | undefined
  /** Where each replayed item's OpenLineage COMPLETE goes (after its commit; missing mode). */
  lineage?: LineageSettings | undefined
  /** --lineage-for-replays: send the COMPLETE of a replayed try, which its worker's listener already sent. */
  lineageForReplays?: boolean | undefined
  /** The downstream preview of each missing-mode item (--no-downstream: off). Default on. */
  downstream?: boolean | undefined
}

/**
 * Missing mode's real selection: successful task instances (--since/--until on end_date) with an
 * active outlet lacking its event, after the checkpoint's cursor. The count for the confirmation
 * and the run use this one definition.
 */
function missingSelection(selection: SelectionRequest, resumeAfter: string | undefined): SelectionRequest {
  return {
    ...selection,
    tiIds: [...selection.tiIds].sort().filter((id) => !resumeAfter || id > resumeAfter),
    filter: {
      ...selection.filter,
      states: ['success'],
      timeColumn: 'end_date',
      missingEventsOnly: true,
      afterId: resumeAfter,
    },
  }
}

/**
 * `airlock replay-events` made ready: the checkpoint opened (a resumed run skips what is done),
 * the input checked and counted (the missing-events selection is opened once and kept for the
 * run, never counted twice), nothing written.
 */
export async function prepareReplay(
  airflow: AirflowDatabase<ReplayStore>,
  request: ReplayRequest,
): Promise<PreparedBatch<ItemJson | EventItemJson, ReplayOutcomeName>> {
  const findings = request.mode.kind === 'file' ? await readFindingsFile(request.mode.path, '--from-file') : undefined
  if (request.mode.kind === 'file' && findings) return prepareFindings(airflow, request, request.mode, findings)
  const {mode, write} = request
  // What a replay writes depends on which evidence it accepts: a resumed run must accept the same.
  const accepts = {
    ...(request.accepts.includeMarkedSuccess ? {includeMarkedSuccess: true} : {}),
    ...(request.accepts.includeUnknown ? {includeUnknown: true} : {}),
  }
  const checkpoint = await Checkpoint.open(
    request.checkpointFile,
    fingerprintOf({mode, defaultExtra: request.defaultExtra, ...accepts}),
  )
  const notes =
    checkpoint.resumeFrom === null
      ? []
      : [`resuming from ${request.checkpointFile ?? ''}: ${checkpoint.resumedDone} items already done`]
  const base = {
    label: 'replay-events',
    doneOutcomes: ['replayed', 'would_replay', 'nothing_missing', 'not_emitted', 'unknown', 'skipped_existing'],
    dryRun: write.dryRun,
    notes,
    holderOf: (tiId: string) => airflow.store.readRowHolder(airflow.db.executor, tiId),
  }
  if (mode.kind !== 'missing') {
    if (mode.kind === 'file' && mode.limit !== undefined)
      throw usageError(
        '--limit takes task instances; an export file is re-emitted whole (split the file to replay part of it).',
      )
    if (write.plan)
      throw usageError(
        '--plan plans missing mode (and an audit findings file); an export is re-emitted as it is: --dry-run shows what would be written.',
      )
    const count = mode.kind === 'event-id' ? new Set(mode.ids).size : await validateEventFile(mode.path)
    return {
      ...base,
      count,
      prompt: {action: 're-emit', noun: 'events'},
      explicit: true,
      warnings: [],
      run: (hooks) => replayEvents(airflow, request, checkpoint, hooks),
    }
  }

  const selection = missingSelection(mode.selection, checkpoint.resumeFrom ?? undefined)
  // Every named task instance already done by the resumed run: nothing left to open.
  const keys = mode.selection.tiKeys?.length ?? 0
  const named = mode.selection.tiIds.length + keys > 0 || Boolean(mode.fromFindings)
  // Keys are not resumed by the cursor (an id): a resumed run rechecks them, which writes nothing twice.
  const done = named && selection.tiIds.length === 0 && keys === 0
  const source: ItemSource = done
    ? {count: 0, items: emptyItems(), explicit: true}
    : await openItemSource(airflow, selection)
  const sendsLineage = Boolean(request.lineage && request.lineageForReplays && !write.plan)
  const writer = replayMissingWriter(airflow.store, {
    defaultExtra: request.defaultExtra,
    airlockVersion: request.airlockVersion,
    actor: request.actor,
    downstream: request.downstream,
    ...request.accepts,
  })
  return {
    ...base,
    count: source.count,
    breakdown: source.breakdown,
    prompt: {action: 'replay the missing events of', noun: 'task instances'},
    plan: write.plan,
    explicit: named,
    warnings: [...(source.warnings ?? []), ...replayLineageWarnings(request, sendsLineage)],
    run: (hooks) =>
      replayMissing(airflow, write, writer, source, checkpoint, hooks, {
        sender: sendsLineage
          ? new LineageSender(airflow, request.lineage!, request.airlockVersion, 'replayed')
          : undefined,
        settings: request.lineage,
        downstream: request.downstream ?? true,
      }),
  }
}

/**
 * An audit's findings file: its missing_events (and missing_unknown) task instances replayed as
 * --ti-id would replay them, each re-decided under its lock on the evidence the database holds
 * then; findings of other classes are said and left to the command that repairs them.
 */
async function prepareFindings(
  airflow: AirflowDatabase<ReplayStore>,
  request: ReplayRequest,
  file: {path: string; skipExisting: boolean; limit?: number | undefined},
  findings: FindingsInput,
): Promise<PreparedBatch<ItemJson | EventItemJson, ReplayOutcomeName>> {
  if (file.skipExisting)
    throw usageError(
      `--skip-existing is for an export's events; ${file.path} holds audit findings, and each task instance is replayed only for what is still missing.`,
    )
  const selection = {tiIds: findings.tiIds, filter: {runIds: [], taskIds: [], limit: file.limit}}
  const batch = await prepareReplay(airflow, {...request, mode: {kind: 'missing', selection, fromFindings: true}})
  const notes = Object.entries(findings.skipped).map(
    ([cls, n]) =>
      `${file.path}: ${n} ${cls} finding${n === 1 ? '' : 's'} left alone (${repairOf[cls] ?? 'not a replay'})`,
  )
  if (!findings.complete)
    notes.push(
      `${file.path} has no summary line: the audit that wrote it did not finish, so it may list only some of the findings`,
    )
  if (findings.unknown > 0 && !request.accepts.includeUnknown)
    notes.push(
      `${file.path}: ${findings.unknown} missing_unknown finding${findings.unknown === 1 ? '' : 's'} will read "unknown" (the database cannot tell lost from marked success); --include-unknown replays them`,
    )
  return {...batch, warnings: [...batch.warnings, ...notes]}
}

/** Who repairs a finding class replay-events does not. */
const repairOf: Record<string, string> = {
  duplicate: 'audit-events --fix removes unconsumed duplicates',
  orphan_missing_ti: 'an event whose task instance is gone: nothing to replay',
  orphan_not_success: 'an event of a try that did not succeed: nothing to replay',
  queue_orphan: 'queue rows pointing at something gone: see docs/audit-events.md',
}

/** Missing mode: each selected task instance through the protocol, its outcome checkpointed. */
async function replayMissing(
  airflow: AirflowDatabase<ReplayStore>,
  write: ReplayRequest['write'],
  writer: ReturnType<typeof replayMissingWriter>,
  source: ItemSource,
  checkpoint: Checkpoint,
  {shouldStop, onItem, lockWaits, stop}: BatchHooks<ItemJson | EventItemJson, ReplayOutcomeName>,
  {
    sender: lineage,
    settings: lineageSettings,
    downstream,
  }: {
    sender: LineageSender | undefined
    settings: LineageSettings | undefined
    downstream: boolean
  },
) {
  const tally = new Tally(replayOutcomes)
  const numbered = withSequence(source.items, (item) => ('tiId' in item.ref ? item.ref.tiId : ''), checkpoint)
  const {interrupted, lost} = await runBatch(
    numbered,
    async ({item, sequence}) => {
      const result = write.plan
        ? await planProtocol(airflow, item.ref, undefined, plannerOf(writer), {downstream})
        : await runProtocol(airflow, item.ref, undefined, writer, {
            lockTimeoutMs: write.lockTimeoutMs,
            statementTimeoutMs: write.statementTimeoutMs,
            dryRun: write.dryRun,
            lockWaits,
            stop,
          })
      await checkpoint.finish(sequence, result.result.outcome !== 'failed')
      return lineage ? lineage.finish(result) : result
    },
    {
      concurrency: write.concurrency,
      shouldStop,
      lostServer,
      onResult: (item) => {
        tally.add(item)
        onItem(toItemJson(item), tally)
      },
    },
  )
  await checkpoint.save()
  return {tally, interrupted, lost, lineage: await lineageReport(lineage, lineageSettings)}
}

/** Event mode (by id or from a file): each event emitted again through its own transaction. */
async function replayEvents(
  airflow: AirflowDatabase<ReplayStore>,
  request: ReplayRequest,
  checkpoint: Checkpoint,
  {shouldStop, onItem}: BatchHooks<ItemJson | EventItemJson, ReplayOutcomeName>,
): Promise<{tally: Tally<ReplayOutcomeName>; interrupted: boolean; lost: boolean}> {
  const {mode, write} = request
  if (mode.kind === 'missing') throw new Error('replayEvents is for event mode')
  const tally = new Tally(replayOutcomes)
  const resume = checkpoint.resumeFrom === null ? null : Number(checkpoint.resumeFrom)
  const works: AsyncIterable<EventWork> =
    mode.kind === 'event-id'
      ? eventsById(airflow, mode.ids, resume)
      : eventsFromFile(airflow, mode.path, {skipExisting: mode.skipExisting, afterLine: resume})
  const settings = {
    mode: mode.kind,
    lockTimeoutMs: write.lockTimeoutMs,
    statementTimeoutMs: write.statementTimeoutMs,
    dryRun: write.dryRun,
    airlockVersion: request.airlockVersion,
    actor: request.actor,
  } as const
  const numbered = withSequence(works, (work) => work.cursor, checkpoint)
  const {interrupted, lost} = await runBatch(
    numbered,
    async ({item: work, sequence}) => {
      const started = performance.now()
      const item: EventItem =
        work.kind === 'emit'
          ? await reemitEvent(airflow, work.spec, settings)
          : {
              label: work.label,
              names: work.names,
              result: {outcome: work.outcome, message: work.message},
              events: 0,
              queued: 0,
              warnings: [`${work.label}: ${work.message}`],
              totalMs: performance.now() - started,
            }
      await checkpoint.finish(sequence, item.result.outcome !== 'failed')
      return item
    },
    {
      concurrency: write.concurrency,
      shouldStop,
      lostServer,
      onResult: (item) => {
        tally.add(item)
        onItem(toEventItemJson(item, write.dryRun), tally)
      },
    },
  )
  await checkpoint.save()
  return {tally, interrupted, lost}
}

/**
 * Why a replay sends no COMPLETE by default: a missing-mode replay writes the lost events of a
 * try whose success Airflow recorded, and the provider's listener sent that try's COMPLETE when
 * it did (plugins/listener.py `on_task_instance_success`); a second one for the same run is
 * stored again by the backend (Marquez keeps both events and a second COMPLETED state of the run;
 * docs/lineage.md).
 */
/** Lineage configured in a way airlock does not send, or (by default) the note that a replay sends none. */
function replayLineageWarnings(request: ReplayRequest, sendsLineage: boolean): string[] {
  if (sendsLineage) return lineageWarnings(request.lineage)
  return request.lineage?.enabled && !request.write.plan ? [noReplayLineage] : []
}

const noReplayLineage =
  "OpenLineage: no COMPLETE is sent for a replayed try: Airflow's listener sent one when the try succeeded (--lineage-for-replays sends another)"

async function* emptyItems(): AsyncGenerator<WorkItem> {}

async function* withSequence<T>(
  items: AsyncIterable<T>,
  cursorOf: (item: T) => string,
  checkpoint: Checkpoint,
): AsyncGenerator<{item: T; sequence: number}> {
  for await (const item of items) yield {item, sequence: checkpoint.take(cursorOf(item))}
}

/**
 * An event item as JSON. In a dry run what would be written reads `would_replay` and names no new
 * event id: the id it got was rolled back and does not exist.
 */
function toEventItemJson(item: EventItem, dryRun: boolean): EventItemJson {
  const {names, result} = item
  return {
    source: item.label,
    event_id: names.eventId,
    asset: names.asset,
    source_dag_id: names.source?.dagId ?? null,
    source_run_id: names.source?.runId ?? null,
    source_task_id: names.source?.taskId ?? null,
    source_map_index: names.source?.mapIndex ?? null,
    outcome: dryRun && result.outcome === 'replayed' ? 'would_replay' : result.outcome,
    new_event_id: result.outcome === 'replayed' && !dryRun ? result.newEventId : null,
    ...(result.outcome === 'replayed' && !dryRun ? {log_id: result.logId} : {}),
    existing_event_id: result.outcome === 'skipped_existing' ? result.existingEventId : null,
    events: item.events,
    queued: item.queued,
    timings: {total_ms: Math.round(item.totalMs * 100) / 100},
    ...(result.outcome === 'failed'
      ? {error: errorJson(result)}
      : 'message' in result && result.message
        ? {error: {sqlstate: null, message: result.message}}
        : {}),
  }
}
