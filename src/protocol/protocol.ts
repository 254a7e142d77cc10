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
import {runTransaction, type Decision, type Failed, type WorkTransaction} from '../engine/transaction.js'
import type {LockedTaskInstance, TaskInstanceStore} from '../store/families/taskInstances.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {describeHolder, type LockWaits} from './lockWaits.js'
import {idNotFoundDetail, type ItemResult, type ProtocolOutcome} from './outcomes.js'
import type {PlannedWrite} from './plan.js'
import {sessionTag} from './sessionTag.js'

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
  /**
   * Its transactions run their statements on generic plans from the first execution
   * (TransactionLocals.genericPlans): for a writer whose statements PostgreSQL settles on the
   * generic plan for anyway, so only the first five executions per connection change.
   */
  genericPlans?: boolean
  /** Step 1: stop early (nothing written) or undefined to go on. */
  decideBeforeRegistering(ti: TaskInstanceContext): O | undefined
  /** Step 2. */
  register(tx: Executor, ti: TaskInstanceContext, input: Input): Promise<Registration>
  /** --plan: what step 2 would write, decided on its reads alone (writers that offer a plan). */
  plan?(ex: Executor, ti: TaskInstanceContext, input: Input): Promise<PlannedWrite<O>>
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
    /** The locked row's state, try and row version. */
    locked: LockedTaskInstance,
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
  /**
   * The run is stopping (a signal): no new attempt or lock-wait slice starts, a wait for the row
   * lock is cancelled on the server and rolled back (the item `failed`, kind `interrupted`, nothing
   * written); a transaction past the lock runs on to its COMMIT or ROLLBACK.
   */
  stop?: AbortSignal | undefined
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

/** What one attempt learned and measured: each attempt (a retry too) starts from a fresh one. */
interface Attempt<Registration, Receipt> {
  ti?: TaskInstanceContext | undefined
  registration?: Registration | undefined
  receipt?: Receipt | undefined
  registerMs: number
  lockWaitMs: number
  lockedAt?: number | undefined
  settledAt?: number | undefined
  stampedAt?: number | undefined
  commitIssued: boolean
}

const freshAttempt = <Registration, Receipt>(): Attempt<Registration, Receipt> => ({
  registerMs: 0,
  lockWaitMs: 0,
  commitIssued: false,
})

/** What one item carries across its attempts. */
interface Item {
  /**
   * Switches to the task instance's key once its id turned out to be an earlier try's: Airflow 3
   * gives every try a new id, so the row is gone by id, not changed. The item then reports the
   * current try (completed, or a conflict with its state), never a bare not_found.
   */
  current: TaskInstanceRef
  /** The task instance as the last attempt that read it saw it. */
  known: TaskInstanceContext | undefined
  /** The writer's last "start again" under the lock: its outcome ends the item if retries run out. */
  lastRetry: RetryFromStart | undefined
  /** Row locks this item waited for, to clear from lockWaits however it ends. */
  waitedOn: Set<string>
  /** The task instance id its transactions tag themselves with: the id named, then the id each read found. */
  taggedId: string | undefined
  /**
   * How long it has waited for that row's lock in transactions that ended in a lock timeout (a
   * slice, or an attempt) without getting it: carried in the tag, so audit-locks can report the
   * whole wait, not the current slice's.
   */
  waitedMs: number
}

type Airflow = Pick<AirflowDatabase<TaskInstanceStore>, 'db' | 'store'>

export async function runProtocol<O extends {outcome: string}, Input, Registration, Receipt>(
  airflow: Airflow,
  ref: TaskInstanceRef,
  input: Input,
  writer: Writer<O, Input, Registration, Receipt>,
  options: ProtocolOptions,
): Promise<ItemResult<O>> {
  const item: Item = {
    current: ref,
    known: undefined,
    lastRetry: undefined,
    waitedOn: new Set(),
    taggedId: 'tiId' in ref ? ref.tiId : undefined,
    waitedMs: 0,
  }
  let attempt = freshAttempt<Registration, Receipt>()
  const tag = () => sessionTag(writer.verb, item.taggedId ?? describeRef(item.current), item.waitedMs)
  const transaction = runTransaction<ProtocolOutcome<O>>(airflow.db, {
    locals: {
      lockTimeoutMs: options.lockTimeoutMs,
      statementTimeoutMs: options.statementTimeoutMs,
      applicationName: tag(),
      ...(writer.genericPlans ? {genericPlans: true} : {}),
    },
    applicationName: tag,
    dryRun: options.dryRun,
    retry: options.retry,
    ...(options.lockSliceMs === null ? {} : {lockSliceMs: options.lockSliceMs ?? lockWaitSliceMs}),
    stop: options.stop,
    waitingFor: 'the row lock',
    retryAlso: (error) => error instanceof RetryFromStart,
    unknownCommitAdvice: 'running again is safe (the recheck reports already_success if it committed)',
    beginAttempt() {
      item.known = attempt.ti ?? item.known
      attempt = freshAttempt()
    },
    settled() {
      attempt.settledAt ??= performance.now()
    },
    run: (tx) => runAttempt(tx, airflow, item, attempt, input, writer, options),
    wasCommitted: (ex) =>
      writer.wasCommitted(ex, attempt.ti!, attempt.registration as Registration, attempt.receipt as Receipt),
  })
  const transacted = await transaction.finally(() => {
    for (const id of item.waitedOn) options.lockWaits?.done(id)
  })
  const result = await explainFailure(transacted.result, item.lastRetry, attempt.ti, airflow)
  return itemResult(
    ref,
    result,
    {attempts: transacted.attempts, totalMs: transacted.totalMs},
    airflow,
    item,
    attempt,
    writer,
    options,
  )
}

/** Steps 1 to 4 of one attempt, in the writer's order (or Airflow's, for the benchmark). */
async function runAttempt<O extends {outcome: string}, Input, Registration, Receipt>(
  tx: WorkTransaction<ProtocolOutcome<O>>,
  {db, store}: Airflow,
  item: Item,
  attempt: Attempt<Registration, Receipt>,
  input: Input,
  writer: Writer<O, Input, Registration, Receipt>,
  options: ProtocolOptions,
): Promise<Decision<ProtocolOutcome<O>>> {
  const ti = await readCurrent(tx, store, item, writer.readsOutlets)
  attempt.ti = ti
  if (!ti)
    return {
      rollback: 'tiId' in item.current ? {outcome: 'not_found', detail: idNotFoundDetail} : {outcome: 'not_found'},
    }
  if (ti.id !== item.taggedId) {
    // Named by key, or a new try since: BEGIN's tag could not name the row this transaction is
    // about to lock. One round trip, once per item (later transactions begin with the id).
    item.taggedId = ti.id
    item.waitedMs = 0
    await tx.setApplicationName(sessionTag(writer.verb, ti.id))
  }
  const early = writer.decideBeforeRegistering(ti)
  if (early) return {rollback: early}

  const register = async () => {
    const begin = performance.now()
    attempt.stampedAt = begin
    attempt.registration = await writer.register(tx, ti, input)
    attempt.registerMs = performance.now() - begin
  }
  let locked
  if (options.order === 'lock_first') {
    locked = await lockRow(tx, {db, store}, ti, item, attempt, options)
    await register()
  } else {
    await register()
    const refused = writer.decideAfterRegistering?.(attempt.registration as Registration)
    if (refused) return {rollback: refused}
    locked = await lockRow(tx, {db, store}, ti, item, attempt, options)
  }

  if (!locked) {
    // Gone by id between the read and the lock: a new try (new id) or a deleted run. Read it
    // again by key from the start; what was registered for the old try rolls back.
    item.current = {key: {dagId: ti.dagId, runId: ti.runId, taskId: ti.taskId, mapIndex: ti.mapIndex}}
    item.taggedId = undefined
    item.waitedMs = 0
    throw new RetryFromStart(
      'the task instance got a new try (a new id) between the unlocked read and the lock, on every attempt',
    )
  }
  if (locked.tryNumber !== ti.tryNumber) throw new RetryFromStart()
  const decision = await writer
    .decideUnderLock(tx, locked.state, ti, attempt.registration as Registration, locked)
    .catch((error: unknown) => {
      if (error instanceof RetryFromStart) item.lastRetry = error
      throw error
    })
  if (decision !== 'commit') return {rollback: decision}
  attempt.receipt = await writer.apply(tx, ti, attempt.registration as Registration)
  // COMMIT here rather than after returning, so the hold clock stops when the server answers.
  attempt.commitIssued = true
  await tx.commit(writer.committed)
  attempt.settledAt = performance.now()
  return {commit: writer.committed}
}

/** Step 1: the task instance by id, or by key when the id turned out to be an earlier try's. */
async function readCurrent(
  tx: Executor,
  store: Airflow['store'],
  item: Item,
  withOutlets: boolean,
): Promise<TaskInstanceContext | undefined> {
  const ti = await store.readTaskInstance(tx, item.current, {withOutlets})
  if (ti || !('tiId' in item.current)) return ti
  const key = await store.readArchivedTaskInstanceKey(tx, item.current.tiId)
  if (!key) return undefined
  item.current = {key}
  return store.readTaskInstance(tx, item.current, {withOutlets})
}

/**
 * Step 3, timed: how long the row lock was waited for, and when it was granted. The one statement
 * a stopping run gives up (see ProtocolOptions.stop): before it, registration has only written
 * what the rollback takes back; after it, the recheck and COMMIT are short and run on.
 */
async function lockRow<Registration, Receipt>(
  tx: Pick<WorkTransaction<unknown>, 'queryUntilStopped'>,
  {db, store}: Airflow,
  context: TaskInstanceContext,
  item: Item,
  attempt: Attempt<Registration, Receipt>,
  options: ProtocolOptions,
) {
  const begin = performance.now()
  options.lockWaits?.waiting(context.id, formatKey(context))
  item.waitedOn.add(context.id)
  try {
    const locked = await store.lockTaskInstance({query: (statement) => tx.queryUntilStopped(statement)}, context.id)
    attempt.lockedAt = performance.now()
    options.lockWaits?.done(context.id)
    item.waitedMs = 0
    return locked
  } catch (error) {
    // A slice (or an attempt) that timed out: the next transaction waits on for the same row.
    if (db.classify(error).kind === 'lock_timeout') item.waitedMs += performance.now() - begin
    throw error
  } finally {
    // Also when the wait ended in a lock timeout: a failed item says where its time went.
    attempt.lockWaitMs = performance.now() - begin
  }
}

/**
 * The item's outcome in the operator's terms: retries exhausted on the writer's "start again"
 * end in its outcome, and a lock timeout names who held the row (best effort: it may have let go).
 */
async function explainFailure<O extends {outcome: string}>(
  outcome: ProtocolOutcome<O>,
  lastRetry: RetryFromStart | undefined,
  ti: TaskInstanceContext | undefined,
  {db, store}: Airflow,
): Promise<ProtocolOutcome<O>> {
  if (outcome.outcome !== 'failed') return outcome
  const failed = outcome as Failed
  if (lastRetry?.outcomeWhenExhausted && failed.message === lastRetry.message)
    return lastRetry.outcomeWhenExhausted as O
  if (failed.kind === 'lock_timeout' && ti) {
    const holder = await store.readRowHolder(db.executor, ti.id).catch(() => undefined)
    failed.message += holder
      ? `; the row is held by ${describeHolder(holder)}; airlock audit-locks shows what it waits for`
      : '; airlock audit-locks shows which session holds what'
  }
  return outcome
}

/** The item's report: what was written, the task instance it names, and where its time went. */
async function itemResult<O extends {outcome: string}, Input, Registration, Receipt>(
  ref: TaskInstanceRef,
  result: ProtocolOutcome<O>,
  {attempts, totalMs}: {attempts: number; totalMs: number},
  {db, store}: Airflow,
  item: Item,
  attempt: Attempt<Registration, Receipt>,
  writer: Writer<O, Input, Registration, Receipt>,
  options: ProtocolOptions,
): Promise<ItemResult<O>> {
  const written = result.outcome === writer.committed.outcome
  // An item that failed before its COMMIT was sent wrote nothing: no counts or notes of an attempt
  // that was rolled back; its timings stay (they say where the time went). A COMMIT lost in
  // flight keeps what the attempt measured.
  const failedBeforeCommit = result.outcome === 'failed' && !attempt.commitIssued
  const counts: ReturnType<typeof writer.counts> =
    attempt.registration === undefined || failedBeforeCommit
      ? {events: 0, queued: 0, warnings: []}
      : writer.counts(attempt.registration)
  // A failed item names its task instance: from any attempt's read, or read now on a fresh
  // connection when every attempt failed before reading it (best effort: the server may be gone).
  // Not when the server is unreachable and the selection saw the key: the read would only wait
  // out the connect timeout to name what the line is named by anyway.
  let named = attempt.ti ?? item.known
  const namedBySelection = 'tiId' in item.current && item.current.seen !== undefined
  const unreachable = result.outcome === 'failed' && (result as Failed).kind === 'unreachable'
  if (!named && result.outcome === 'failed' && 'tiId' in item.current && !(namedBySelection && unreachable)) {
    named = await store.readTaskInstance(db.executor, item.current, {withOutlets: false}).catch(() => undefined)
  }
  const {registerMs, lockWaitMs, lockedAt, settledAt, stampedAt} = attempt

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
