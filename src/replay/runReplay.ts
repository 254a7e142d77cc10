import {performance} from 'node:perf_hooks'

import {ExitCode} from '../exitCodes.js'
import {runBatch} from '../protocol/batch.js'
import {runProtocol} from '../protocol/protocol.js'
import {toItemJson, type ItemJson} from '../report/itemJson.js'
import {Tally} from '../report/tally.js'
import type {LockWaits} from '../protocol/lockWaits.js'
import {openItemSource, type ItemSource, type SelectionRequest} from '../selection/itemSource.js'
import type {SelectionBreakdown} from '../selection/selection.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'
import type {Checkpoint} from './checkpoint.js'
import {eventsById, eventsFromFile, validateEventFile, type EventWork} from './eventSources.js'
import {reemitEvent, type EventItem} from './reemitEvent.js'
import {replayMissingWriter} from './replayMissingWriter.js'

export type ReplayMode =
  {kind: 'missing'; selection: SelectionRequest} | {kind: 'event-id'; ids: number[]} | {kind: 'file'; path: string; skipExisting: boolean}

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
  asset: string
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  outcome: string
  new_event_id: number | null
  existing_event_id: number | null
  events: number
  queued: number
  timings: {total_ms: number}
  error?: {sqlstate: string | null; message: string}
}

export interface ReplayRun {
  mode: ReplayMode
  defaultExtra: string
  concurrency: number
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  airlockVersion: string
  actor?: string | undefined
  includeMarkedSuccess?: boolean | undefined
  includeUnknown?: boolean | undefined
  checkpoint: Checkpoint
  shouldStop: () => boolean
  onItem: (item: ItemJson | EventItemJson, tally: Tally<ReplayOutcomeName>) => void
  /** Items waiting for their task instance's row lock, for the batch's "who holds it" line. */
  lockWaits?: LockWaits | undefined
  /** Missing mode: the selection countReplay opened (and counted), so it is not counted twice. */
  source?: ItemSource | undefined
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
    filter: {...selection.filter, states: ['success'], timeColumn: 'end_date', missingEventsOnly: true, afterId: resumeAfter},
  }
}

/** How many items a replay will touch, and a selection's runs, for the confirmation prompt (checked input, nothing written). */
export async function countReplay(
  airflow: AirflowDatabase,
  mode: ReplayMode,
  checkpoint: Checkpoint,
): Promise<{count: number; breakdown?: SelectionBreakdown | undefined; source?: ItemSource | undefined}> {
  if (mode.kind === 'event-id') return {count: new Set(mode.ids).size}
  if (mode.kind === 'file') return {count: await validateEventFile(mode.path)}
  const selection = missingSelection(mode.selection, checkpoint.resumeFrom ?? undefined)
  if (mode.selection.tiIds.length > 0 && selection.tiIds.length === 0) return {count: 0}
  // The opened source goes to runReplay: the missing-events selection is counted once, not again
  // before its first page.
  const source = await openItemSource(airflow, selection)
  return {count: source.count, breakdown: source.breakdown, source}
}

export async function runReplay(airflow: AirflowDatabase, run: ReplayRun): Promise<{tally: Tally<ReplayOutcomeName>; interrupted: boolean}> {
  const tally = new Tally(replayOutcomes)
  const {mode, checkpoint} = run
  const record = (json: ItemJson | EventItemJson, countable: Parameters<Tally<ReplayOutcomeName>['add']>[0]) => {
    tally.add(countable)
    run.onItem(json, tally)
  }

  if (mode.kind === 'missing') {
    const writer = replayMissingWriter(airflow.store, {
      defaultExtra: run.defaultExtra,
      airlockVersion: run.airlockVersion,
      actor: run.actor,
      includeMarkedSuccess: run.includeMarkedSuccess,
      includeUnknown: run.includeUnknown,
    })
    const selection = missingSelection(mode.selection, checkpoint.resumeFrom ?? undefined)
    if (mode.selection.tiIds.length > 0 && selection.tiIds.length === 0) return {tally, interrupted: false}
    const source = run.source ?? (await openItemSource(airflow, selection))
    const numbered = withSequence(source.items, (item) => ('tiId' in item.ref ? item.ref.tiId : ''), checkpoint)
    const {interrupted} = await runBatch(
      numbered,
      async ({item, sequence}) => {
        const result = await runProtocol(airflow, item.ref, undefined, writer, {
          lockTimeoutMs: run.lockTimeoutMs,
          statementTimeoutMs: run.statementTimeoutMs,
          dryRun: run.dryRun,
          lockWaits: run.lockWaits,
        })
        await checkpoint.finish(sequence, result.result.outcome !== 'failed')
        return result
      },
      {concurrency: run.concurrency, shouldStop: run.shouldStop, onResult: (item) => record(toItemJson(item), item)},
    )
    await checkpoint.save()
    return {tally, interrupted}
  }

  const resume = checkpoint.resumeFrom === null ? null : Number(checkpoint.resumeFrom)
  const works: AsyncIterable<EventWork> =
    mode.kind === 'event-id'
      ? eventsById(airflow, mode.ids, resume)
      : eventsFromFile(airflow, mode.path, {skipExisting: mode.skipExisting, afterLine: resume})
  const settings = {
    mode: mode.kind,
    lockTimeoutMs: run.lockTimeoutMs,
    statementTimeoutMs: run.statementTimeoutMs,
    dryRun: run.dryRun,
    airlockVersion: run.airlockVersion,
    actor: run.actor,
  } as const
  const numbered = withSequence(works, (work) => work.cursor, checkpoint)
  const {interrupted} = await runBatch(
    numbered,
    async ({item: work, sequence}) => {
      const started = performance.now()
      const item: EventItem =
        work.kind === 'emit'
          ? await reemitEvent(airflow, work.spec, settings)
          : {
              label: work.label,
              spec: null,
              result: {outcome: work.outcome, message: work.message},
              events: 0,
              queued: 0,
              warnings: [`${work.label}: ${work.message}`],
              totalMs: performance.now() - started,
            }
      await checkpoint.finish(sequence, item.result.outcome !== 'failed')
      return item
    },
    {concurrency: run.concurrency, shouldStop: run.shouldStop, onResult: (item) => record(toEventItemJson(item), item)},
  )
  await checkpoint.save()
  return {tally, interrupted}
}

async function* withSequence<T>(
  items: AsyncIterable<T>,
  cursorOf: (item: T) => string,
  checkpoint: Checkpoint,
): AsyncGenerator<{item: T; sequence: number}> {
  for await (const item of items) yield {item, sequence: checkpoint.take(cursorOf(item))}
}

function toEventItemJson(item: EventItem): EventItemJson {
  const {spec, result} = item
  return {
    source: item.label,
    event_id: spec?.originalEventId ?? null,
    asset: spec?.assetName ?? '',
    source_dag_id: spec?.source?.dagId ?? null,
    source_run_id: spec?.source?.runId ?? null,
    source_task_id: spec?.source?.taskId ?? null,
    source_map_index: spec?.source?.mapIndex ?? null,
    outcome: result.outcome,
    new_event_id: result.outcome === 'replayed' ? result.newEventId : null,
    existing_event_id: result.outcome === 'skipped_existing' ? result.existingEventId : null,
    events: item.events,
    queued: item.queued,
    timings: {total_ms: Math.round(item.totalMs * 100) / 100},
    ...('message' in result && result.message ? {error: {sqlstate: 'sqlstate' in result ? result.sqlstate : null, message: result.message}} : {}),
  }
}
