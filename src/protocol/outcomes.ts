import type {StoredState, TaskInstanceKey, TaskInstanceRef} from '../airflow/taskInstance.js'
import type {Failed} from '../engine/transaction.js'

/**
 * Outcomes are data. Each writer names its own (complete: completed / already_success /
 * conflict; replay-events: replayed / nothing_missing / changed) beside its code; the protocol
 * adds the two every writer shares.
 */
export type NotFound = {outcome: 'not_found'; detail?: string}

/**
 * Why an id finds nothing though the task instance may exist: Airflow 3 gives a task instance a
 * new id when it is cleared and archives the old one in task_instance_history once per try
 * (TaskInstanceHistory.record_ti; a second clear within the same try is not archived again), so an
 * id is followed to the current try only while its archived try keeps it.
 */
export const idNotFoundDetail =
  "no task instance and no archived try has this id. airlock follows an earlier try's id to the current one through task_instance_history, which keeps one id per try: a task instance cleared twice within one try keeps neither earlier id. Name it by its key instead: --ti-id dag_id/run_id/task_id[map_index]"
export type {Failed}

export type ProtocolOutcome<O extends {outcome: string}> = O | NotFound | Failed

export interface Timings {
  /** Registration statements (events, alias links, queue). */
  registerMs: number
  /** SELECT … FOR UPDATE issued → returned: time spent queued behind another holder. */
  lockWaitMs: number
  /** FOR UPDATE returned → COMMIT/ROLLBACK returned: how long this item held the row lock. */
  lockHoldMs: number
  /**
   * First registration statement → COMMIT returned, for a committed item: how long its events
   * existed uncommitted (the event-to-commit window). null when nothing was committed.
   */
  stampToCommitMs: number | null
  /** The whole item, retries and backoff included. */
  totalMs: number
}

export interface ItemResult<O extends {outcome: string}> {
  ref: TaskInstanceRef
  /** Known once the unlocked read found the task instance; `state` as that read saw it. */
  ti: (TaskInstanceKey & {id: string; state?: StoredState}) | null
  result: ProtocolOutcome<O>
  events: number
  queued: number
  timings: Timings
  attempts: number
  dryRun: boolean
  /** Operator-facing notes about this item (inactive assets, unqueued consumers, …). */
  warnings: string[]
  /** What a committed (or dry-run) item did beyond its events, in its JSON shape (complete --continue-run: continue_run). */
  report?: Record<string, unknown>
}

/**
 * An item that failed because the server could not be reached or the session was lost, after the
 * engine's retries, or because the server accepts no writes (SQLSTATE 25006: a failover put a
 * standby behind the address, or the database was made read-only mid-run): every item after it
 * would fail the same way, so the batch takes no new one (runBatch's `lostServer`).
 */
export const lostServer = (item: {result: {outcome: string; kind?: string | undefined}}): boolean =>
  item.result.outcome === 'failed' && (item.result.kind === 'unreachable' || item.result.kind === 'read_only')
