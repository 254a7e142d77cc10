import {clearSubset, taskGraph} from '../airflow/serializedDag.js'
import {runTransaction, type Decision, type Failed} from '../engine/transaction.js'
import type {Executor} from '../engine/engine.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import type {Downstream} from '../protocol/downstream.js'
import {sessionTag} from '../protocol/sessionTag.js'
import {
  type ConsumingRun,
  type EventConsumerLocks,
  undoLogEvent,
  type UndoQueueEffect,
  type UndoStore,
  withdrawLogEvent,
} from '../store/families/undo.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {type QueueRow, type UndoTarget, withdrawCommand} from './undoTarget.js'
import {undoDownstream, type UndoDownstream} from './undoDownstream.js'
import type {StoreCapabilities} from '../store/types.js'
import type {EventStore} from '../store/families/events.js'
import type {AuditLogStore} from '../store/families/audit.js'
import type {TaskInstanceStore} from '../store/families/taskInstances.js'
import type {DownstreamStore} from '../store/families/downstream.js'
import type {ClearStore} from '../store/families/clear.js'

/** The store families an undo of one audit row uses. */
export type UndoItemStore = StoreCapabilities &
  UndoStore &
  EventStore &
  AuditLogStore &
  TaskInstanceStore &
  DownstreamStore &
  ClearStore

/** What undo reports per audit row. */
export type UndoOutcome =
  | {
      outcome: 'undone'
      undoLogId: number
      deletedEventIds: number[]
      deletedQueueRows: QueueRow[]
      keptQueueRows: QueueRow[]
      restoredTaskInstance: string | null
      /** --continue-run: the task instances its clear took, back under their old ids. */
      restoredCleared: string[]
      restoredEventIds: number[]
      /** An undo of a withdrawal: the queue rows put back. */
      restoredQueueRows: QueueRow[]
      downstream: Downstream[]
      /** The consumer DAGs the deleted events had made ready, ready no longer: the scheduler will not run them for this write. */
      lostReadiness: string[]
    }
  /** An undo of this row committed already (this one wrote nothing). */
  | {outcome: 'already_undone'; undoLogId: number}
  /**
   * A run took its events: undo cannot take back a run. `stillQueued`: the queue rows the write's
   * events still hold for other consumers, whose runs will take them (--withdraw-queued).
   */
  | {outcome: 'consumed'; runs: ConsumingRun[]; stillQueued: QueueRow[]; detail: string}
  /**
   * --withdraw-queued on a consumed write: the queue rows its events still held withdrawn (before
   * 3.4 one kept where another pending event needs it), under the withdrawal's own audit row; the
   * run that consumed them stands.
   */
  | {
      outcome: 'withdrawn'
      runs: ConsumingRun[]
      withdrawLogId: number
      withdrawnQueueRows: QueueRow[]
      keptQueueRows: QueueRow[]
      detail: string
    }
  /** What airlock wrote moved on since (a retry, a clear, the scheduler, another write). */
  | {outcome: 'changed'; detail: string}
  /** A consumer DAG's row was held (the scheduler creating a run) on every attempt. */
  | {outcome: 'busy'; detail: string}
  | {outcome: 'not_airlock' | 'not_undoable'; detail: string}
  | {outcome: 'not_found'; detail: string}

export type UndoResult = UndoOutcome | Failed

export interface UndoSettings {
  dryRun: boolean
  /** --plan: decided on reads alone; nothing is locked or written. */
  plan: boolean
  /** --withdraw-queued: a consumed write's events withdrawn from the queues that still hold them. */
  withdrawQueued?: boolean
  lockTimeoutMs: number
  statementTimeoutMs: number
  airlockVersion: string
  actor?: string | undefined
}

/** Thrown while a consumer DAG's row is held: the transaction rolls back and starts again. */
class ConsumersBusy extends Error {}

/**
 * Takes back one audit row's write in one transaction, in the write protocol's order: read
 * without a lock (already undone?), then the writes that need no task instance lock (the consumer
 * DAGs' rows locked as `audit-events --fix` locks them, so no run can take the events meanwhile;
 * the events refused if a run took them, else deleted with the queue rows the write created; the
 * undo's own audit row), then the task instance's row lock, the recheck that it is still exactly
 * what airlock left, and its columns put back. Anything that moved on rolls everything back.
 */
export async function undoItem(
  airflow: Pick<AirflowDatabase<UndoItemStore>, 'db' | 'store'>,
  target: UndoTarget,
  settings: UndoSettings,
): Promise<{result: UndoResult; totalMs: number}> {
  if (target.kind === 'refused') return {result: {outcome: target.outcome, detail: target.detail}, totalMs: 0}
  const {db, store} = airflow
  if (settings.plan) {
    const started = performance.now()
    const result = await planUndo(store, db.executor, target, settings)
    return {result, totalMs: performance.now() - started}
  }
  const subject = target.kind === 'complete' ? target.tiId : `log-${target.record.id}`
  const {result, totalMs} = await runTransaction<UndoOutcome>(db, {
    locals: {
      lockTimeoutMs: settings.lockTimeoutMs,
      statementTimeoutMs: settings.statementTimeoutMs,
      applicationName: sessionTag('undo', subject),
    },
    dryRun: settings.dryRun,
    retryAlso: (error) => error instanceof ConsumersBusy,
    exhausted: (error) => (error instanceof ConsumersBusy ? {outcome: 'busy', detail: busyDetail} : undefined),
    unknownCommitAdvice: 'running the undo again is safe (it reports already_undone if it committed)',
    run: (tx) => undoWrite(store, tx, target, settings),
    wasCommitted: async (ex, outcome) =>
      (outcome.outcome === 'undone' && (await store.logRowExists(ex, outcome.undoLogId))) ||
      (outcome.outcome === 'withdrawn' && (await store.logRowExists(ex, outcome.withdrawLogId))),
  })
  return {result, totalMs}
}

type Writable = Exclude<UndoTarget, {kind: 'refused'}>
type Taken = {
  deleted: number[]
  assetIds: number[]
  aliasIds: number[]
  queue: {deleted: QueueRow[]; kept: QueueRow[]}
  /** What the undo changes downstream (undoDownstream), decided under the locks before the delete. */
  change: UndoDownstream
}

/** One attempt: the events taken back (or a fix's put back), the undo's audit row, then the rows under their locks. */
async function undoWrite(
  store: UndoItemStore,
  tx: Executor,
  target: Writable,
  settings: UndoSettings,
): Promise<Decision<UndoOutcome>> {
  const earlier = await store.findUndoOf(tx, target.record.id)
  if (earlier !== undefined) return {rollback: {outcome: 'already_undone', undoLogId: earlier}}
  if (target.kind === 'withdrawal') return undoWithdrawal(store, tx, target, settings)
  const taken = await takeBackEvents(store, tx, target, settings)
  if ('outcome' in taken) return taken.outcome === 'withdrawn' ? {commit: taken} : {rollback: taken}
  const restoredEventIds =
    target.kind === 'fix' ? await store.restoreEvents(tx, target.removedEvents, target.keptEventId) : []
  if (target.kind === 'fix' && restoredEventIds.length < target.removedEvents.length) {
    // Back already: another undo of this row committed them first (its row says so).
    const earlier = await store.findUndoOf(tx, target.record.id)
    if (earlier !== undefined) return {rollback: {outcome: 'already_undone', undoLogId: earlier}}
    const back = target.removedEvents.map((e) => Number(e.id)).filter((id) => !restoredEventIds.includes(id))
    return {
      rollback: {
        outcome: 'changed',
        detail: `events ${back.join(', ')} cannot be put back: their ids exist again, or the kept event ${target.keptEventId} whose extra they share is gone`,
      },
    }
  }
  const undoLogId = await writeUndoRow(store, tx, target, settings, taken, restoredEventIds)
  if (target.kind === 'complete') {
    const refused = await restoreUnderLock(store, tx, target, undoLogId)
    if (refused) return {rollback: refused}
  }
  return {
    commit: {
      outcome: 'undone',
      undoLogId,
      deletedEventIds: taken.deleted,
      deletedQueueRows: taken.queue.deleted,
      keptQueueRows: taken.queue.kept,
      restoredTaskInstance: target.kind === 'complete' ? target.tiId : null,
      restoredCleared: target.kind === 'complete' ? clearedIds(target) : [],
      restoredEventIds,
      restoredQueueRows: [],
      downstream: taken.change.downstream,
      lostReadiness: taken.change.lostReadiness,
    },
  }
}

/** The undo's own audit row: which row it takes back and what it deleted and restored. */
async function writeUndoRow(
  store: UndoItemStore,
  tx: Executor,
  target: Writable,
  settings: UndoSettings,
  taken: Taken,
  restoredEventIds: number[],
  restoredQueueRows: QueueRow[] = [],
): Promise<number> {
  const identity = auditIdentity()
  const {record} = target
  const {logId} = await store.insertLogRow(
    tx,
    {
      dagId: record.dagId,
      taskId: record.taskId,
      runId: record.runId,
      mapIndex: record.mapIndex,
      tryNumber: record.tryNumber,
      logicalDate: record.logicalDate,
      owners: settings.actor ?? identity.os_user,
    },
    undoLogEvent,
    JSON.stringify({
      host_name: identity.host_name,
      airlock: {
        version: settings.airlockVersion,
        command: 'undo',
        os_user: identity.os_user,
        undoes: record.id,
        undone_command: target.command,
        deleted_event_ids: taken.deleted,
        deleted_queue_rows: byDag(taken.queue.deleted),
        kept_queue_rows: byDag(taken.queue.kept),
        restored_event_ids: restoredEventIds,
        ...(target.kind === 'withdrawal' ? {restored_queue_rows: byDag(restoredQueueRows)} : {}),
        ...(target.kind === 'complete' ? {restored_task_instance: target.tiId} : {}),
        ...(target.kind === 'complete' && target.clear
          ? {restored_cleared: clearedIds(target), restored_dag_run: (target.clear.dagRun as {id: number}).id}
          : {}),
      },
    }),
  )
  return logId
}

/**
 * Steps 3 and 4 of the protocol for a completion: the task instance's row lock, the recheck on
 * the locked row (and for --continue-run the task instances it cleared and the run, in the
 * protocol's lock order), then the rows put back.
 */
async function restoreUnderLock(
  store: UndoItemStore,
  tx: Executor,
  target: Extract<UndoTarget, {kind: 'complete'}>,
  undoLogId: number,
): Promise<UndoOutcome | undefined> {
  const locked = await store.lockTaskInstance(tx, target.tiId)
  // Another undo of this row that committed while this one waited for the lock: it changed the
  // row, so this is asked before the recheck (which would call that change `changed`).
  const during = await store.findUndoOf(tx, target.record.id, undoLogId)
  if (during !== undefined) return {outcome: 'already_undone', undoLogId: during}
  if (!locked)
    return {
      outcome: 'changed',
      detail: `task instance ${target.tiId} no longer exists under that id: it was cleared or retried since (a new try gets a new id)`,
    }
  const changed = await changedSince(store, tx, target)
  if (changed) return changed
  const moved = target.clear ? await store.lockAndCompareClear(tx, target.clear.left) : []
  if (moved.length > 0) return clearMoved(moved)
  await store.restoreTaskInstance(tx, target.tiId, target.taskInstance)
  if (target.clear) await store.restoreClear(tx, target.clear)
  return undefined
}

const busyDetail =
  'a consumer DAG of its events was held by another session (a scheduler creating its run) on every attempt; run the undo again'

/**
 * The events a write made, taken back while no run can take them: the consumer DAGs' rows locked,
 * then refused when a run consumed any, else deleted with the queue rows the write created.
 */
async function takeBackEvents(
  store: UndoItemStore,
  tx: Executor,
  target: Exclude<Writable, {kind: 'withdrawal'}>,
  settings: UndoSettings,
): Promise<UndoOutcome | Taken> {
  const none = {
    deleted: [],
    assetIds: [],
    aliasIds: [],
    queue: {deleted: [], kept: []},
    change: {downstream: [], lostReadiness: []},
  }
  if (target.kind === 'fix' || target.eventIds.length === 0) return none
  const locks = await store.lockEventConsumers(tx, target.eventIds)
  if (locks.locked < locks.wanted) throw new ConsumersBusy('a consumer DAG of these events is held by another session')
  const runs = await store.readConsumingRuns(tx, target.eventIds)
  if (runs.length > 0)
    return settings.withdrawQueued
      ? withdrawQueued(store, tx, target, settings, locks, runs)
      : consumed(runs, await stillQueued(store, tx, target, locks.assetIds))
  if (locks.partitioned.length > 0) return partitionedRefusal(locks.partitioned)
  const change = await downstreamChange(store, tx, target, locks)
  const deleted = await store.deleteEvents(tx, target.eventIds)
  if (deleted.length < target.eventIds.length) {
    // Gone already: another undo committed first (its row says so), or something else deleted them.
    const earlier = await store.findUndoOf(tx, target.record.id)
    if (earlier !== undefined) return {outcome: 'already_undone', undoLogId: earlier}
    const ids = new Set(deleted.map((e) => e.id))
    return {
      outcome: 'changed',
      detail: `event${target.eventIds.length - ids.size === 1 ? '' : 's'} ${target.eventIds.filter((id) => !ids.has(id)).join(', ')} no longer exist${target.eventIds.length - ids.size === 1 ? 's' : ''} (deleted since, as audit-events --fix deletes duplicates)`,
    }
  }
  // From 3.4 a queue row names its event and went with it; before, the rows the write created.
  const queue =
    store.capabilities.queueShape === 'per_event'
      ? {deleted: [], kept: []}
      : await store.deleteCreatedQueueRows(tx, {assetIds: locks.assetIds, logId: target.record.id}, target.eventIds)
  return {deleted: deleted.map((e) => e.id), assetIds: locks.assetIds, aliasIds: locks.aliasIds, queue, change}
}

/**
 * What taking back the events changes downstream, read with them still there (the write under
 * its locks, before its delete; the plan without a lock): the consumers' facts and the queue keys
 * the undo takes, one decision (undoDownstream) for the write, --dry-run and --plan.
 */
async function downstreamChange(
  store: UndoItemStore,
  ex: Executor,
  target: Extract<Writable, {eventIds: number[]}>,
  consumers: {assetIds: number[]; aliasIds: number[]},
): Promise<UndoDownstream & {effect: UndoQueueEffect}> {
  if (consumers.assetIds.length === 0)
    return {downstream: [], lostReadiness: [], effect: {deleted: [], kept: [], lostAliases: []}}
  const before = await store.readDownstream(ex, consumers.assetIds, consumers.aliasIds)
  const effect = await store.readUndoQueueEffect(
    ex,
    {assetIds: consumers.assetIds, logId: target.record.id},
    target.eventIds,
  )
  return {...undoDownstream(before, effect), effect}
}

function consumed(runs: ConsumingRun[], queued: QueueRow[], why?: string): UndoOutcome {
  const dags = [...new Set(queued.map((r) => r.dagId))]
  const still =
    dags.length === 0
      ? ''
      : `; they are still queued for ${dags.join(', ')}, whose next runs will take them: ${why ?? '--withdraw-queued withdraws exactly those queue rows (its own audit row; undo of it puts them back)'}`
  return {
    outcome: 'consumed',
    runs,
    stillQueued: queued,
    detail: `its events were consumed by ${consumers(runs)}: undo cannot take back a run; ${runAdvice}${still}`,
  }
}

const consumers = (runs: readonly ConsumingRun[]) =>
  [...new Set(runs.map((r) => (r.runId ? `${r.dagId} run ${r.runId}` : `${r.dagId} (partition log)`)))].join(', ')

/** What to do about a run that took a write's events, in Airflow: undo cannot take it back. */
const runAdvice =
  "stop or mark it in Airflow: mark the run failed (the run's controls in the UI, or PATCH /api/v2/dags/{dag_id}/dagRuns/{run_id} with state failed), clear its task instances once the right data is there, or delete the run in the UI"

/** The queue rows a consumed write's events still hold for other consumers (readUndoQueueEffect's keys). */
async function stillQueued(
  store: UndoItemStore,
  ex: Executor,
  target: {record: {id: number}; eventIds: number[]},
  assetIds: number[],
): Promise<QueueRow[]> {
  const effect = await store.readUndoQueueEffect(ex, {assetIds, logId: target.record.id}, target.eventIds)
  return [...effect.deleted, ...effect.kept].sort((a, b) => a.dagId.localeCompare(b.dagId) || a.assetId - b.assetId)
}

/**
 * --withdraw-queued on a consumed write, under undo's locks (the consumer DAGs' rows, so no run
 * takes the events meanwhile) and after its checks: the queue rows its events still hold go as an
 * undo would delete them (before 3.4 deleteCreatedQueueRows: the rows the write created, one kept
 * with the next pending event's time where another event needs it; from 3.4 the rows naming its
 * events), recorded in the withdrawal's own audit row with their before-image. The run that
 * consumed them stands. A partitioned consumer's path takes events without those locks: refused.
 */
async function withdrawQueued(
  store: UndoItemStore,
  tx: Executor,
  target: Extract<Writable, {eventIds: number[]}>,
  settings: UndoSettings,
  locks: EventConsumerLocks,
  runs: ConsumingRun[],
): Promise<UndoOutcome> {
  const queued = await stillQueued(store, tx, target, locks.assetIds)
  if (locks.partitioned.length > 0) return consumed(runs, queued, partitionedWithdrawal(locks.partitioned))
  const rows = await store.readWriteQueueRows(tx, {assetIds: locks.assetIds, logId: target.record.id}, target.eventIds)
  if (rows.length === 0) return consumed(runs, [])
  const queue =
    store.capabilities.queueShape === 'per_event'
      ? {deleted: await store.deleteEventQueueRows(tx, target.eventIds), kept: []}
      : await store.deleteCreatedQueueRows(tx, {assetIds: locks.assetIds, logId: target.record.id}, target.eventIds)
  const identity = auditIdentity()
  const {record} = target
  const {logId} = await store.insertLogRow(
    tx,
    {
      dagId: record.dagId,
      taskId: record.taskId,
      runId: record.runId,
      mapIndex: record.mapIndex,
      tryNumber: record.tryNumber,
      logicalDate: record.logicalDate,
      owners: settings.actor ?? identity.os_user,
    },
    withdrawLogEvent,
    JSON.stringify({
      host_name: identity.host_name,
      airlock: {
        version: settings.airlockVersion,
        command: withdrawCommand,
        os_user: identity.os_user,
        withdraws: record.id,
        withdrawn_command: target.command,
        withdrawn_event_ids: target.eventIds,
        consuming_runs: runs.map((r) => ({event_id: r.eventId, dag_id: r.dagId, run_id: r.runId})),
        withdrawn_queue_rows: byDag(queue.deleted),
        kept_queue_rows: byDag(queue.kept),
        before: {version: 1, queue_rows: rows},
      },
    }),
  )
  // A dry run's row is rolled back: its id names nothing to undo.
  return withdrawn(runs, queue, logId, settings.dryRun)
}

/** A withdrawal's outcome (logId undefined: planned), and what it leaves to do in Airflow. */
function withdrawn(
  runs: ConsumingRun[],
  queue: {deleted: QueueRow[]; kept: QueueRow[]},
  logId?: number,
  dryRun = false,
): UndoOutcome {
  const dags = [...new Set([...queue.deleted, ...queue.kept].map((r) => r.dagId))]
  const row =
    logId === undefined || dryRun
      ? 'its own audit row, which undo takes back'
      : `audit row ${logId}; undo --log-id ${logId} puts the rows back while the events are there and unconsumed by those DAGs`
  return {
    outcome: 'withdrawn',
    runs,
    withdrawLogId: logId ?? 0,
    withdrawnQueueRows: queue.deleted,
    keptQueueRows: queue.kept,
    detail: `withdrawn from the queue of ${dags.join(', ')} (${row}). Not taken back: ${consumers(runs)}, which consumed its events; ${runAdvice}`,
  }
}

const partitionedWithdrawal = (dags: readonly string[]) =>
  `not withdrawn: consumer ${dags.join(', ')} has a partitioned timetable, whose partition path takes events without the locks undo holds`

/**
 * The undo of a withdrawal, under the same locks (the consumer DAGs of the withdrawn write's
 * events): the queue rows it withdrew come back when each is still valid (its DAG, its asset and
 * the write's events of that asset there, and no run of that DAG consumed them since), else
 * nothing is written (`changed`).
 */
async function undoWithdrawal(
  store: UndoItemStore,
  tx: Executor,
  target: Extract<Writable, {kind: 'withdrawal'}>,
  settings: UndoSettings,
): Promise<Decision<UndoOutcome>> {
  if (target.eventIds.length > 0) {
    const locks = await store.lockEventConsumers(tx, target.eventIds)
    if (locks.locked < locks.wanted)
      throw new ConsumersBusy('a consumer DAG of these events is held by another session')
  }
  const problems = await store.readQueueRowsUnrestorable(tx, target.queueRows, target.eventIds)
  if (problems.length > 0) return {rollback: withdrawalMoved(problems)}
  const restored = await store.restoreQueueRows(tx, target.queueRows)
  const undoLogId = await writeUndoRow(store, tx, target, settings, noneTaken, [], restored)
  return {commit: undoneWithdrawal(undoLogId, restored)}
}

const noneTaken: Taken = {
  deleted: [],
  assetIds: [],
  aliasIds: [],
  queue: {deleted: [], kept: []},
  change: {downstream: [], lostReadiness: []},
}

function withdrawalMoved(problems: readonly string[]): UndoOutcome {
  return {
    outcome: 'changed',
    detail: `the withdrawn queue rows cannot be put back: ${problems.join('; ')}; nothing written`,
  }
}

function undoneWithdrawal(undoLogId: number, restored: QueueRow[]): UndoOutcome {
  return {
    outcome: 'undone',
    undoLogId,
    deletedEventIds: [],
    deletedQueueRows: [],
    keptQueueRows: [],
    restoredTaskInstance: null,
    restoredCleared: [],
    restoredEventIds: [],
    restoredQueueRows: restored,
    downstream: [],
    lostReadiness: [],
  }
}

/**
 * Under the lock: the task instance is no longer exactly what airlock left, or the scheduler went
 * on from its success (a downstream task instance scheduled or run since, the run finished):
 * putting it back would leave those standing on a success that is gone.
 */
async function changedSince(
  store: UndoItemStore,
  tx: Executor,
  target: Extract<UndoTarget, {kind: 'complete'}>,
): Promise<UndoOutcome | undefined> {
  const compared = await store.compareTaskInstanceLeft(tx, target.tiId, target.record.id)
  if (compared && !compared.same)
    return {
      outcome: 'changed',
      detail: `task instance ${target.tiId} was written to since airlock completed it (now ${compared.state ?? 'no state'}, try ${compared.tryNumber ?? 'none'}): a retry, a clear, a heartbeat or another write; nothing undone`,
    }
  const {dagId, runId, taskId} = target.record
  if (!dagId || !runId || !taskId) return undefined
  const graph = taskGraph(await store.readLatestSerializedDag(tx, dagId))
  // Without its DAG's tasks, every other task instance of the run counts as downstream.
  const taskIds = graph?.tasks.has(taskId)
    ? [...clearSubset(graph, taskId).taskIds].filter((id) => id !== taskId)
    : null
  const moved = await store.readMovedSince(tx, {
    dagId,
    runId,
    tiId: target.tiId,
    taskIds,
    except: (target.clear?.left.taskInstances ?? []).map((t) => (t as {id: string}).id),
  })
  if (moved.length === 0) return undefined
  return {
    outcome: 'changed',
    detail: `the scheduler went on from this success: ${moved.join('; ')}; putting the task instance back would leave them standing on it: change it in Airflow; nothing undone`,
  }
}

/**
 * --plan: the same decisions on reads alone, in the same order (no lock: a run may still take the
 * events, or the scheduler move a row, before a real undo). The queue rows it would delete and
 * keep and what that changes downstream are read as the write reads them (downstreamChange).
 */
async function planUndo(
  store: UndoItemStore,
  ex: Executor,
  target: Writable,
  settings: UndoSettings,
): Promise<UndoResult> {
  const earlier = await store.findUndoOf(ex, target.record.id)
  if (earlier !== undefined) return {outcome: 'already_undone', undoLogId: earlier}
  if (target.kind === 'withdrawal') {
    const problems = await store.readQueueRowsUnrestorable(ex, target.queueRows, target.eventIds)
    if (problems.length > 0) return withdrawalMoved(problems)
    return undoneWithdrawal(0, sortedRows(target.queueRows.map((r) => ({dagId: r.dag_id, assetId: r.asset_id}))))
  }
  let change: Awaited<ReturnType<typeof downstreamChange>> | undefined
  if (target.kind !== 'fix' && target.eventIds.length > 0) {
    const runs = await store.readConsumingRuns(ex, target.eventIds)
    if (runs.length > 0) {
      const locks = await store.lockEventConsumers(ex, target.eventIds, {lock: false})
      return settings.withdrawQueued
        ? planWithdrawal(store, ex, target, locks, runs)
        : consumed(runs, await stillQueued(store, ex, target, locks.assetIds))
    }
    const consumers = await store.lockEventConsumers(ex, target.eventIds, {lock: false})
    if (consumers.partitioned.length > 0) return partitionedRefusal(consumers.partitioned)
    const present = await store.countEvents(ex, target.eventIds)
    if (present < target.eventIds.length)
      return {
        outcome: 'changed',
        detail: `${target.eventIds.length - present} of its events no longer exist (deleted since, as audit-events --fix deletes duplicates)`,
      }
    change = await downstreamChange(store, ex, target, consumers)
  }
  if (target.kind === 'complete') {
    const changed = await changedSince(store, ex, target)
    if (changed) return changed
    const moved = target.clear ? await store.lockAndCompareClear(ex, target.clear.left, {lock: false}) : []
    if (moved.length > 0) return clearMoved(moved)
  }
  return {
    outcome: 'undone',
    undoLogId: 0,
    deletedEventIds: target.kind === 'fix' ? [] : target.eventIds,
    // From 3.4 a queue row goes with its event (nothing listed), as the write reports it.
    deletedQueueRows: store.capabilities.queueShape === 'per_event' ? [] : (change?.effect.deleted ?? []),
    keptQueueRows: store.capabilities.queueShape === 'per_event' ? [] : (change?.effect.kept ?? []),
    restoredTaskInstance: target.kind === 'complete' ? target.tiId : null,
    restoredCleared: target.kind === 'complete' ? clearedIds(target) : [],
    restoredEventIds: target.kind === 'fix' ? target.removedEvents.map((e) => Number(e.id)) : [],
    restoredQueueRows: [],
    downstream: change?.downstream ?? [],
    lostReadiness: change?.lostReadiness ?? [],
  }
}

/** --plan of --withdraw-queued: the rows the withdrawal would delete and keep, read as it reads them. */
async function planWithdrawal(
  store: UndoItemStore,
  ex: Executor,
  target: Extract<Writable, {eventIds: number[]}>,
  locks: EventConsumerLocks,
  runs: ConsumingRun[],
): Promise<UndoOutcome> {
  const queued = await stillQueued(store, ex, target, locks.assetIds)
  if (locks.partitioned.length > 0) return consumed(runs, queued, partitionedWithdrawal(locks.partitioned))
  const rows = await store.readWriteQueueRows(ex, {assetIds: locks.assetIds, logId: target.record.id}, target.eventIds)
  if (rows.length === 0) return consumed(runs, [])
  if (store.capabilities.queueShape === 'per_event')
    return withdrawn(runs, {deleted: sortedRows(rows.map((r) => ({dagId: r.dag_id, assetId: r.asset_id}))), kept: []})
  const effect = await store.readUndoQueueEffect(
    ex,
    {assetIds: locks.assetIds, logId: target.record.id},
    target.eventIds,
  )
  return withdrawn(runs, {deleted: effect.deleted, kept: effect.kept})
}

const sortedRows = (rows: QueueRow[]) => rows.sort((a, b) => a.dagId.localeCompare(b.dagId) || a.assetId - b.assetId)

function partitionedRefusal(dags: readonly string[]): UndoOutcome {
  return {
    outcome: 'not_undoable',
    detail: `consumer DAG${dags.length === 1 ? '' : 's'} ${dags.join(', ')} ${dags.length === 1 ? 'has' : 'have'} a partitioned timetable, whose partition path can take the events without the DAG lock undo holds (audit-events --fix leaves such events too); take the write back in Airflow`,
  }
}

function clearMoved(moved: readonly string[]): UndoOutcome {
  return {
    outcome: 'changed',
    detail: `what --continue-run cleared moved on since: ${moved.join('; ')} (the scheduler picks a cleared run up within seconds); nothing undone`,
  }
}

/** Queue rows as the audit rows record them: asset ids by target DAG. */
export function byDag(rows: readonly QueueRow[]): Record<string, number[]> {
  const out: Record<string, number[]> = {}
  for (const row of rows) (out[row.dagId] ??= []).push(row.assetId)
  return out
}

const clearedIds = (target: Extract<UndoTarget, {kind: 'complete'}>): string[] =>
  (target.clear?.taskInstances ?? []).map((t) => (t as {id: string}).id)
