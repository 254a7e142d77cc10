import {performance} from 'node:perf_hooks'

import {
  describeRef,
  formatKey,
  type StoredState,
  type TaskInstanceContext,
  type TaskInstanceRef,
} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import type {RetryPolicy} from '../engine/retry.js'
import {runTransaction, type Decision, type Failed} from '../engine/transaction.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'
import {describeHolder, type LockWaits} from './lockWaits.js'
import type {ItemResult, ProtocolOutcome} from './outcomes.js'

/**
 * THE write protocol, the one place that orders a task instance's write. Per task instance, one
 * READ COMMITTED transaction on the transaction engine:
 *
 *   1. read the TI, its run and DAG without a lock; early exit when it is not in an expected state
 *   2. register (events, alias links, queue rows: the writer's business)
 *   3. SELECT … FOR UPDATE the task_instance row
 *   4. recheck on the locked state: commit, or roll back with an outcome (the events just written
 *      vanish with the rollback, so a lost race leaves no duplicates)
 *
 * Registering before locking is what keeps the lock short: Airflow's order holds the row lock
 * through registration, and completions queued behind it until the API server was OOM-killed
 * (apache/airflow #66853; the reordering was proposed in #70078). `lock_first` exists only so
 * the benchmark can measure that order through this same code; no command exposes it.
 */
export interface Writer<O extends {outcome: string}, Input, Registration, Receipt> {
  verb: string
  /** Whether step 1 should read the task's declared outlets too (one round trip either way). */
  readsOutlets: boolean
  /** Step 1: stop early (nothing written) or undefined to go on. */
  decideBeforeRegistering(ti: TaskInstanceContext): O | undefined
  /** Step 2. */
  register(tx: Executor, ti: TaskInstanceContext, input: Input): Promise<Registration>
  /**
   * After step 2: an outcome to roll back with before any lock is taken (registration found
   * nothing to do, or wrote something the writer must not commit).
   */
  decideAfterRegistering?(registration: Registration): O | undefined
  /** Step 4: 'commit' to apply, or the outcome to roll back with. Decides on the LOCKED state only. */
  decideUnderLock(
    tx: Executor,
    lockedState: StoredState,
    ti: TaskInstanceContext,
    registration: Registration,
  ): Promise<'commit' | O>
  /** Step 4, commit branch: the state change; returns what proves it committed. */
  apply(tx: Executor, ti: TaskInstanceContext, registration: Registration): Promise<Receipt>
  committed: O
  /** What the item reports: counts, notes, and anything else the writer did (`report`, merged into the item's JSON). */
  counts(registration: Registration): {
    events: number
    queued: number
    warnings: string[]
    report?: Record<string, unknown> | undefined
  }
  /** After a connection lost during COMMIT: did it commit? Asked on a fresh pooled connection. */
  wasCommitted(ex: Executor, ti: TaskInstanceContext, registration: Registration, receipt: Receipt): Promise<boolean>
}

export interface ProtocolOptions {
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  retry?: RetryPolicy | undefined
  /** Benchmark only: 'lock_first' reproduces Airflow's order (lock, then register). */
  order?: 'register_first' | 'lock_first' | undefined
  /** The lock-wait slice (default lockWaitSliceMs); null waits for the whole --lock-timeout at once (the benchmark's comparison). */
  lockSliceMs?: number | null | undefined
  /** Where the batch sees which items wait for their row lock (the "who holds it" line). */
  lockWaits?: LockWaits | undefined
}

/**
 * How long a registration may wait for the row lock before it is thrown away and redone with
 * fresh timestamps. Events are stamped before the lock is taken; before 3.4 the scheduler
 * consumes them by timestamp window, so an event that commits long after its timestamp can fall
 * behind a run that already covered it (apache/airflow #54659), and 3.2+ schedulers skip the
 * queue rows the uncommitted registration holds (FOR UPDATE SKIP LOCKED). Waiting in slices
 * bounds the stamp-to-commit window to about this plus the commit, whatever --lock-timeout is.
 */
export const lockWaitSliceMs = 200

/**
 * What was registered no longer matches the locked row (the task instance was retried between
 * the unlocked read and the lock, so the audit row names a stale try; or a writer's recheck found
 * the world half-changed). Retried from step 1 like a serialization failure; writers may throw it
 * from decideUnderLock.
 */
export class RetryFromStart extends Error {
  constructor(
    reason = 'the task instance changed try between the unlocked read and the lock, on every attempt',
    /** The item's outcome when every retry ended the same way (else `failed` with the reason). */
    readonly outcomeWhenExhausted?: {outcome: string; detail?: string},
  ) {
    super(reason)
  }
}

export async function runProtocol<O extends {outcome: string}, Input, Registration, Receipt>(
  airflow: Pick<AirflowDatabase, 'db' | 'store'>,
  ref: TaskInstanceRef,
  input: Input,
  writer: Writer<O, Input, Registration, Receipt>,
  options: ProtocolOptions,
): Promise<ItemResult<O>> {
  const {db, store} = airflow
  // Switches to the task instance's key once its id turned out to be an earlier try's: Airflow 3
  // gives every try a new id, so the row is gone by id, not changed. The item then reports the
  // current try (completed, or a conflict with its state), never a bare not_found.
  let current: TaskInstanceRef = ref
  // What the last attempt learned and measured; each attempt starts from nothing.
  let ti: TaskInstanceContext | undefined
  let registration: Registration | undefined
  let receipt: Receipt | undefined
  let registerMs = 0
  let lockWaitMs = 0
  let lockedAt: number | undefined
  let settledAt: number | undefined
  let stampedAt: number | undefined
  // The task instance as the last attempt that read it saw it: each attempt starts from nothing.
  let known: TaskInstanceContext | undefined
  let commitIssued = false
  // The writer's last "start again" under the lock: its outcome ends the item if retries run out.
  let lastRetry: RetryFromStart | undefined
  // Row locks this item waited for, to clear from lockWaits however it ends.
  const waitedOn = new Set<string>()

  const register = async (tx: Executor, context: TaskInstanceContext) => {
    const begin = performance.now()
    stampedAt = begin
    registration = await writer.register(tx, context, input)
    registerMs = performance.now() - begin
  }

  const lock = async (tx: Executor, context: TaskInstanceContext) => {
    const begin = performance.now()
    options.lockWaits?.waiting(context.id, formatKey(context))
    waitedOn.add(context.id)
    try {
      const locked = await store.lockTaskInstance(tx, context.id)
      lockedAt = performance.now()
      options.lockWaits?.done(context.id)
      return locked
    } finally {
      // Also when the wait ended in a lock timeout: a failed item says where its time went.
      lockWaitMs = performance.now() - begin
    }
  }

  const transaction = runTransaction<ProtocolOutcome<O>>(db, {
    locals: {
      lockTimeoutMs: options.lockTimeoutMs,
      statementTimeoutMs: options.statementTimeoutMs,
      applicationName: `airlock:${writer.verb}:${describeRef(ref)}`,
    },
    dryRun: options.dryRun,
    retry: options.retry,
    ...(options.lockSliceMs === null ? {} : {lockSliceMs: options.lockSliceMs ?? lockWaitSliceMs}),
    retryAlso: (error) => error instanceof RetryFromStart,
    unknownCommitAdvice: 'running again is safe (the recheck reports already_success if it committed)',
    beginAttempt() {
      known = ti ?? known
      ti = registration = receipt = lockedAt = settledAt = stampedAt = undefined
      registerMs = lockWaitMs = 0
      commitIssued = false
    },
    settled() {
      settledAt ??= performance.now()
    },
    async run(tx): Promise<Decision<ProtocolOutcome<O>>> {
      ti = await store.readTaskInstance(tx, current, {withOutlets: writer.readsOutlets})
      if (!ti && 'tiId' in current) {
        const key = await store.readArchivedTaskInstanceKey(tx, current.tiId)
        if (key) {
          current = {key}
          ti = await store.readTaskInstance(tx, current, {withOutlets: writer.readsOutlets})
        }
      }

      if (!ti) return {rollback: {outcome: 'not_found'}}
      const early = writer.decideBeforeRegistering(ti)
      if (early) return {rollback: early}

      let locked
      if (options.order === 'lock_first') {
        locked = await lock(tx, ti)
        await register(tx, ti)
      } else {
        await register(tx, ti)
        const refused = writer.decideAfterRegistering?.(registration as Registration)
        if (refused) return {rollback: refused}
        locked = await lock(tx, ti)
      }

      if (!locked) {
        // Gone by id between the read and the lock: a new try (new id) or a deleted run. Read it
        // again by key from the start; what was registered for the old try rolls back.
        current = {key: {dagId: ti.dagId, runId: ti.runId, taskId: ti.taskId, mapIndex: ti.mapIndex}}
        throw new RetryFromStart(
          'the task instance got a new try (a new id) between the unlocked read and the lock, on every attempt',
        )
      }
      if (locked.tryNumber !== ti.tryNumber) throw new RetryFromStart()
      const decision = await writer
        .decideUnderLock(tx, locked.state, ti, registration as Registration)
        .catch((error: unknown) => {
          if (error instanceof RetryFromStart) lastRetry = error
          throw error
        })
      if (decision !== 'commit') return {rollback: decision}
      receipt = await writer.apply(tx, ti, registration as Registration)
      // COMMIT here rather than after returning, so the hold clock stops when the server answers.
      commitIssued = true
      await tx.commit(writer.committed)
      settledAt = performance.now()
      return {commit: writer.committed}
    },
    wasCommitted: (ex) => writer.wasCommitted(ex, ti!, registration as Registration, receipt as Receipt),
  })
  const transacted = await transaction.finally(() => {
    for (const id of waitedOn) options.lockWaits?.done(id)
  })

  const {attempts, totalMs} = transacted
  let result: ProtocolOutcome<O> = transacted.result
  if (
    result.outcome === 'failed' &&
    lastRetry?.outcomeWhenExhausted &&
    (result as Failed).message === lastRetry.message
  )
    result = lastRetry.outcomeWhenExhausted as O
  // A lock timeout names who held the row (best effort: it may have let go since).
  const failed = result.outcome === 'failed' ? (result as Failed) : undefined
  if (failed?.kind === 'lock_timeout' && ti) {
    const holder = await store.readRowHolder(db.executor, ti.id).catch(() => undefined)
    failed.message += holder
      ? `; the row is held by ${describeHolder(holder)}; airlock audit-locks shows what it waits for`
      : '; airlock audit-locks shows which session holds what'
  }

  const written = result.outcome === writer.committed.outcome
  // An item that failed before its COMMIT was sent wrote nothing: no counts or notes of an attempt
  // that was rolled back; its timings stay (they say where the time went). A COMMIT lost in
  // flight keeps what the attempt measured.
  const failedBeforeCommit = result.outcome === 'failed' && !commitIssued
  const counts: ReturnType<typeof writer.counts> =
    registration === undefined || failedBeforeCommit
      ? {events: 0, queued: 0, warnings: []}
      : writer.counts(registration)
  // A failed item names its task instance: from any attempt's read, or read now on a fresh
  // connection when every attempt failed before reading it (best effort: the server may be gone).
  let named = ti ?? known
  if (!named && result.outcome === 'failed' && 'tiId' in current) {
    named = await store.readTaskInstance(db.executor, current, {withOutlets: false}).catch(() => undefined)
  }

  return {
    ref,
    ti: named
      ? {
          id: named.id,
          dagId: named.dagId,
          runId: named.runId,
          taskId: named.taskId,
          mapIndex: named.mapIndex,
          state: named.state,
        }
      : null,
    result,
    events: written ? counts.events : 0,
    queued: written ? counts.queued : 0,
    ...(written && counts.report ? {report: counts.report} : {}),
    timings: {
      registerMs,
      lockWaitMs,
      lockHoldMs: lockedAt === undefined ? 0 : (settledAt ?? performance.now()) - lockedAt,
      // From the first registration statement (the events' clock_timestamp) to COMMIT returning.
      // Null in a dry run too: nothing was committed, so no event existed uncommitted for anyone.
      stampToCommitMs:
        written && !options.dryRun && stampedAt !== undefined && settledAt !== undefined ? settledAt - stampedAt : null,
      totalMs,
    },
    attempts,
    dryRun: options.dryRun,
    // Notes about what was written (or would be, in a dry run); a refused item wrote nothing to note.
    warnings: written ? counts.warnings : [],
  }
}
