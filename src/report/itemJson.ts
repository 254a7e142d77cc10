import type {Failed, ItemResult} from '../protocol/outcomes.js'

/** A failed item's error in its JSON shape: the server's code, what happened, and whether a COMMIT was left unknown. */
export interface ErrorJson {
  sqlstate: string | null
  message: string
  /** The COMMIT was sent and the connection lost: the next run's read finds whether it committed. */
  commit_unknown?: true
  /**
   * A signal stopped the run while the item waited for its lock, its next attempt, or the server's
   * answer past the signal's grace (given up before its COMMIT was sent): rolled back, nothing written.
   */
  interrupted?: true
  /** The server accepts no writes (SQLSTATE 25006): rolled back, nothing written; running again fails the same way until it does. */
  read_only?: true
}

export const errorJson = (failed: Failed): ErrorJson => ({
  sqlstate: failed.sqlstate ?? null,
  message: failed.message,
  ...(failed.commitUnknown ? {commit_unknown: true} : {}),
  ...(failed.kind === 'interrupted' ? {interrupted: true} : {}),
  ...(failed.kind === 'read_only' ? {read_only: true} : {}),
})

export interface ItemJson {
  ti_id: string | null
  dag_id: string | null
  run_id: string | null
  task_id: string | null
  map_index: number | null
  outcome: string
  previous_state: string | null
  events: number
  queued: number
  timings: {
    register_ms: number
    lock_wait_ms: number
    lock_hold_ms: number
    stamp_to_commit_ms: number | null
    total_ms: number
  }
  error?: ErrorJson
  /** The audit `log` row a committed write left (what `airlock undo --log-id` takes back); never in a dry run. */
  log_id?: number
  /** Why an item was refused (inactive_outlet: which assets). */
  detail?: string
  /** complete --continue-run: the downstream task instances cleared and the run's state. */
  continue_run?: {
    cleared: Array<{
      ti_id: string
      new_ti_id: string | null
      task_id: string
      map_index: number
      previous_state: string | null
    }>
    dag_run: {id: number; previous_state: string | null; state: string | null}
  }
}

const ms = (value: number) => Math.round(value * 100) / 100

/** What a dry run's committed outcome is called: it was rolled back, so it "would" have happened. */
export const dryRunOutcomeNames: Readonly<Record<string, string>> = {
  completed: 'would_complete',
  replayed: 'would_replay',
  undone: 'would_undo',
  withdrawn: 'would_withdraw',
}

/** An item in its JSON shape (snake_case, as Airflow's columns; docs/exit-codes-and-json.md). */
export function toItemJson(item: ItemResult<{outcome: string}>): ItemJson {
  // The key read by the item itself, else the one it was named by or its selection saw.
  const key =
    item.ti ?? ('key' in item.ref ? {id: null, ...item.ref.key} : item.ref.seen ? {id: null, ...item.ref.seen} : null)
  const result = item.result as {
    outcome: string
    previousState?: string | null
    sqlstate?: string | null
    message?: string
    detail?: string
  }
  return {
    ti_id: item.ti?.id ?? ('tiId' in item.ref ? item.ref.tiId : null),
    dag_id: key?.dagId ?? null,
    run_id: key?.runId ?? null,
    task_id: key?.taskId ?? null,
    map_index: key?.mapIndex ?? null,
    outcome: (item.dryRun && dryRunOutcomeNames[result.outcome]) || result.outcome,
    // The state it was found in: a conflict's, or the one a completed item left.
    previous_state: result.previousState !== undefined ? result.previousState : (item.ti?.state ?? null),
    events: item.events,
    queued: item.queued,
    timings: {
      register_ms: ms(item.timings.registerMs),
      lock_wait_ms: ms(item.timings.lockWaitMs),
      lock_hold_ms: ms(item.timings.lockHoldMs),
      stamp_to_commit_ms: item.timings.stampToCommitMs === null ? null : ms(item.timings.stampToCommitMs),
      total_ms: ms(item.timings.totalMs),
    },
    ...(item.result.outcome === 'failed' ? {error: errorJson(item.result as Failed)} : {}),
    ...(result.detail ? {detail: result.detail} : {}),
    ...reportOf(item),
  }
}

/** What the writer reported; the audit row's id only when it was committed (a dry run rolled it back). */
function reportOf(item: ItemResult<{outcome: string}>): Record<string, unknown> {
  const {log_id: logId, ...report} = item.report ?? {}
  return item.dryRun || logId === undefined ? report : {log_id: logId, ...report}
}
