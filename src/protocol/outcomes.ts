import type {StoredState, TaskInstanceKey, TaskInstanceRef} from '../airflow/taskInstance.js'

/**
 * Outcomes are data (STYLE §4). Each writer names its own (complete: completed / already_success
 * / conflict; replay-events: replayed / nothing_missing / changed); the protocol adds the two
 * every writer shares.
 */
export type NotFound = {outcome: 'not_found'}
export type Failed = {outcome: 'failed'; sqlstate: string | null; message: string}

export type ProtocolOutcome<O extends {outcome: string}> = O | NotFound | Failed

export type CompleteOutcome =
  | {outcome: 'completed'}
  | {outcome: 'already_success'}
  | {outcome: 'conflict'; previousState: StoredState}

export interface Timings {
  /** Registration statements (events, alias links, queue). */
  registerMs: number
  /** SELECT … FOR UPDATE issued → returned: time spent queued behind another holder. */
  lockWaitMs: number
  /** FOR UPDATE returned → COMMIT/ROLLBACK returned: how long this item held the row lock. */
  lockHoldMs: number
  /** The whole item, retries and backoff included. */
  totalMs: number
}

export interface ItemResult<O extends {outcome: string}> {
  ref: TaskInstanceRef
  /** Known once the unlocked read found the task instance. */
  ti: (TaskInstanceKey & {id: string}) | null
  result: ProtocolOutcome<O>
  events: number
  queued: number
  timings: Timings
  attempts: number
  dryRun: boolean
  /** Operator-facing notes about this item (inactive assets, unqueued consumers, …). */
  warnings: string[]
}

export type ReplayOutcome =
  | {outcome: 'replayed'}
  | {outcome: 'nothing_missing'}
  /** The task instance is not (or no longer) success: nothing replayed. */
  | {outcome: 'changed'; previousState: StoredState}
