import {runBatch} from '../batch/pool.js'
import type {BatchHooks, PreparedBatch, WriteOptions} from '../batch/prepared.js'
import {Tally} from '../batch/tally.js'
import {ExitCode} from '../exitCodes.js'
import type {Downstream} from '../protocol/downstream.js'
import {lostServer} from '../protocol/outcomes.js'
import {dryRunOutcomeNames, errorJson, type ErrorJson} from '../report/itemJson.js'
import {checkedLines, checkReadable, parseJsonLine} from '../selection/ndjsonInput.js'
import {type AuditRecord, type AuditRecordWindow, undoLogEvent, withdrawLogEvent} from '../store/families/undo.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {byDag, undoItem, type UndoItemStore, type UndoResult} from './undoItem.js'
import {undoTargetOf, type UndoTarget} from './undoTarget.js'

/** Every outcome of an undo item and the exit code it maps to: a refusal is exit 3. */
export const undoOutcomes = {
  undone: ExitCode.ok,
  already_undone: ExitCode.ok,
  consumed: ExitCode.conflict,
  // The write's queue rows withdrawn, but the run that consumed its events stands: Airflow's to handle.
  withdrawn: ExitCode.conflict,
  changed: ExitCode.conflict,
  not_airlock: ExitCode.conflict,
  not_undoable: ExitCode.conflict,
  // Transient: the scheduler held a consumer DAG's row on every attempt; running again is safe.
  busy: ExitCode.partialFailure,
  not_found: ExitCode.notFound,
  failed: ExitCode.partialFailure,
} as const

export type UndoOutcomeName = keyof typeof undoOutcomes

/** The log events airlock's writers leave (complete writes Airflow's own `success`). */
export const undoableEvents = ['success', 'airlock.replay-events', 'airlock.audit-events.fix', withdrawLogEvent]

export type UndoSelection =
  | {kind: 'log-ids'; ids: number[]}
  | {kind: 'file'; path: string}
  | {kind: 'window'; window: Omit<AuditRecordWindow, 'events'>}

export interface UndoRequest {
  selection: UndoSelection
  write: WriteOptions
  /** --withdraw-queued: a consumed write's events withdrawn from the queues that still hold them. */
  withdrawQueued?: boolean
  airlockVersion: string
  actor?: string | undefined
}

/** One undo item as JSON (docs/exit-codes-and-json.md). */
export interface UndoItemJson {
  log_id: number
  command: string | null
  dag_id: string | null
  run_id: string | null
  task_id: string | null
  map_index: number | null
  outcome: string
  undo_log_id: number | null
  deleted_event_ids: number[]
  deleted_queue_rows: Record<string, number[]>
  kept_queue_rows: Record<string, number[]>
  restored_task_instance: string | null
  /** --continue-run: the task instances its clear took, back under these (their old) ids. */
  restored_cleared: string[]
  restored_event_ids: number[]
  /** An undo of a withdrawal: the queue rows put back. */
  restored_queue_rows?: Record<string, number[]>
  consuming_runs?: Array<{event_id: number; dag_id: string; run_id: string | null}>
  /** consumed: the queue rows the write's events still hold for other consumers, whose runs will take them. */
  still_queued?: Record<string, number[]>
  /** withdrawn: the withdrawal's own audit row (undo --log-id takes it back), and the rows it withdrew. */
  withdraw_log_id?: number | null
  withdrawn_queue_rows?: Record<string, number[]>
  /** The consumer DAGs of the deleted events' assets as the scheduler sees them after the undo. */
  downstream?: Downstream[]
  /** The consumer DAGs those events had made ready that the undo leaves not ready. */
  lost_readiness?: string[]
  detail?: string
  error?: ErrorJson
  timings: {total_ms: number}
}

/**
 * `airlock undo` made ready: the audit rows read and sorted newest first (a later write is taken
 * back before the one it built on), nothing written.
 */
export async function prepareUndo(
  airflow: AirflowDatabase<UndoItemStore>,
  request: UndoRequest,
): Promise<PreparedBatch<UndoItemJson, UndoOutcomeName>> {
  const {store, db} = airflow
  const {ids, records, warnings} = await selectRecords(airflow, request.selection)
  const found = new Set(records.map((r) => r.id))
  const missing = ids.filter((id) => !found.has(id))
  const targets = records.map((record) => undoTargetOf(record, undoLogEvent)).sort((a, b) => b.record.id - a.record.id)
  const write = request.write
  const explicit = request.selection.kind !== 'window'
  const changing = targets.filter((t) => t.kind !== 'refused').length
  return {
    count: targets.length + missing.length,
    // Asked whatever the count: an undo deletes rows.
    prompt: {action: 'undo', noun: 'airlock writes', changing, always: true},
    label: 'undo',
    doneOutcomes: ['undone', 'would_undo', 'already_undone'],
    explicit,
    dryRun: write.dryRun,
    plan: write.plan,
    warnings,
    holderOf: (tiId: string) => store.readRowHolder(db.executor, tiId),
    async run({shouldStop, onItem}: BatchHooks<UndoItemJson, UndoOutcomeName>) {
      const tally = new Tally(undoOutcomes)
      const notFound = missing.map((id) => ({id, missing: true as const}))
      const {interrupted, lost} = await runBatch(
        [...notFound, ...targets],
        async (item) => {
          if ('missing' in item)
            return {
              json: notFoundJson(item.id),
              result: {outcome: 'not_found', detail: ''} as UndoResult,
            }
          const {result, totalMs} = await undoItem(airflow, item, {
            dryRun: write.dryRun,
            plan: write.plan ?? false,
            withdrawQueued: request.withdrawQueued ?? false,
            lockTimeoutMs: write.lockTimeoutMs,
            statementTimeoutMs: write.statementTimeoutMs,
            airlockVersion: request.airlockVersion,
            actor: request.actor,
          })
          return {json: toUndoItemJson(item, result, totalMs, write.dryRun), result}
        },
        {
          // One at a time, newest first: undoing a replay of a completion before the completion.
          concurrency: 1,
          shouldStop,
          lostServer: ({result}) => lostServer({result}),
          onResult: ({json, result}) => {
            const kind = result.outcome === 'failed' ? result.kind : undefined
            tally.add({result: {outcome: result.outcome, kind}, events: 0, queued: 0, warnings: []})
            onItem(json, tally)
          },
        },
      )
      return {tally, interrupted, lost}
    },
  }
}

/** The audit rows an undo acts on, and the ids asked for (to report those with no row). */
async function selectRecords(
  {store, db}: AirflowDatabase<UndoItemStore>,
  selection: UndoSelection,
): Promise<{ids: number[]; records: AuditRecord[]; warnings: string[]}> {
  if (selection.kind === 'window') {
    const records = await store.readAuditRecordWindow(db.executor, {...selection.window, events: undoableEvents})
    return {ids: [], records, warnings: []}
  }
  const {ids, warnings} =
    selection.kind === 'log-ids' ? {ids: selection.ids, warnings: []} : await logIdsOfFile(selection.path)
  const unique = [...new Set(ids)]
  const twice = ids.length - unique.length
  if (twice > 0) warnings.push(`${twice} log id${twice === 1 ? ' was' : 's were'} named twice: each is undone once`)
  return {ids: unique, records: await store.readAuditRecords(db.executor, unique), warnings}
}

/** The longest result line undo reads (the preview's lists of a very wide consumer fit). */
const resultLineBytes = 256 * 1024 * 1024

/**
 * The audit rows a result file names: each item line of `--output`/`--ndjson` of complete or
 * replay-events carries its committed write's `log_id`. Lines without one (a refused or dry-run
 * item, the summary) are counted and left.
 */
async function logIdsOfFile(path: string): Promise<{ids: number[]; warnings: string[]}> {
  await checkReadable(path, '--from-file')
  const ids: number[] = []
  let without = 0
  // An item line carries the downstream preview's lists (every asset a consumer waits for), which
  // for a consumer of thousands of assets runs to megabytes: the line limit is a result file's.
  for await (const {text, line} of checkedLines(path, '--from-file', resultLineBytes)) {
    const parsed = parseJsonLine(text, `--from-file ${path} line ${line}`, [
      'give a result file of complete or replay-events (--output or --ndjson)',
    ])
    const record = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>
    if (record.type === 'summary') continue
    if (typeof record.log_id === 'number' && Number.isInteger(record.log_id) && record.log_id > 0)
      ids.push(record.log_id)
    else without++
  }

  const warnings =
    without > 0
      ? [
          `${path}: ${without} line${without === 1 ? '' : 's'} name${without === 1 ? 's' : ''} no committed write (no log_id: refused, dry-run, or not an item): left alone`,
        ]
      : []
  if (ids.length === 0 && without === 0) warnings.push(`${path} is empty: nothing to undo`)
  return {ids, warnings}
}

function notFoundJson(id: number): UndoItemJson {
  return {
    ...emptyJson(id),
    outcome: 'not_found',
    detail: `no audit log row has id ${id}`,
  }
}

const emptyJson = (id: number): UndoItemJson => ({
  log_id: id,
  command: null,
  dag_id: null,
  run_id: null,
  task_id: null,
  map_index: null,
  outcome: '',
  undo_log_id: null,
  deleted_event_ids: [],
  deleted_queue_rows: {},
  kept_queue_rows: {},
  restored_task_instance: null,
  restored_cleared: [],
  restored_event_ids: [],
  timings: {total_ms: 0},
})

function toUndoItemJson(target: UndoTarget, result: UndoResult, totalMs: number, dryRun: boolean): UndoItemJson {
  const {record} = target
  const base: UndoItemJson = {
    ...emptyJson(record.id),
    command: target.command,
    dag_id: record.dagId,
    run_id: record.runId,
    task_id: record.taskId,
    map_index: record.mapIndex,
    outcome: (dryRun && dryRunOutcomeNames[result.outcome]) || result.outcome,
    timings: {total_ms: Math.round(totalMs * 100) / 100},
  }
  switch (result.outcome) {
    case 'undone':
      return {
        ...base,
        undo_log_id: dryRun ? null : result.undoLogId,
        deleted_event_ids: result.deletedEventIds,
        deleted_queue_rows: byDag(result.deletedQueueRows),
        kept_queue_rows: byDag(result.keptQueueRows),
        restored_task_instance: result.restoredTaskInstance,
        restored_cleared: result.restoredCleared,
        restored_event_ids: result.restoredEventIds,
        ...(result.restoredQueueRows.length > 0 ? {restored_queue_rows: byDag(result.restoredQueueRows)} : {}),
        downstream: result.downstream,
        lost_readiness: result.lostReadiness,
      }
    case 'already_undone':
      return {...base, undo_log_id: result.undoLogId, detail: `undone already by log row ${result.undoLogId}`}
    case 'consumed':
      return {
        ...base,
        consuming_runs: result.runs.map((r) => ({event_id: r.eventId, dag_id: r.dagId, run_id: r.runId})),
        still_queued: byDag(result.stillQueued),
        detail: result.detail,
      }
    case 'withdrawn':
      return {
        ...base,
        consuming_runs: result.runs.map((r) => ({event_id: r.eventId, dag_id: r.dagId, run_id: r.runId})),
        withdraw_log_id: dryRun ? null : result.withdrawLogId,
        withdrawn_queue_rows: byDag(result.withdrawnQueueRows),
        kept_queue_rows: byDag(result.keptQueueRows),
        detail: result.detail,
      }
    case 'failed':
      return {...base, error: errorJson(result)}
    default:
      return {...base, detail: result.detail}
  }
}
