import {performance} from 'node:perf_hooks'

import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import {describeRef, type StoredState, type TaskInstanceContext, type TaskInstanceRef} from '../airflow/taskInstance.js'
import {driverConnectionOf, type DriverConnection} from '../db/driverConnection.js'
import {lockTaskInstance} from '../db/lockTaskInstance.js'
import {readTaskInstance} from '../db/readTaskInstance.js'
import {retryableSqlStates, sqlStateOf} from '../db/sqlstate.js'
import type {ItemResult, ProtocolOutcome} from './outcomes.js'
import {backoffDelay, defaultRetryPolicy, sleep, type RetryPolicy} from './retry.js'
import {RollbackWith} from './rollbackWith.js'

/**
 * THE write protocol (DESIGN §1), the only place airlock opens a write transaction. Per task
 * instance, one READ COMMITTED transaction:
 *
 *   1. read the TI, its run and DAG without a lock; early exit when it is not in an expected state
 *   2. register (events, alias links, queue rows: the writer's business)
 *   3. SELECT … FOR UPDATE the task_instance row
 *   4. recheck on the locked state: commit, or roll back with an outcome (the events just written
 *      vanish with the rollback, so a lost race leaves no duplicates)
 *
 * Registering before locking is what keeps the lock short: Airflow's old order held the row lock
 * through registration, and completions queued behind it until the API server was OOM-killed
 * (apache/airflow #66853, fixed by #70078). `lock_first` exists only so the benchmark can measure
 * that old order through this same code; no command exposes it.
 */
export interface Writer<O extends {outcome: string}, Input, Registration, Receipt> {
  verb: string
  /** Whether step 1 should read the task's declared outlets too (one round trip either way). */
  readsOutlets: boolean
  /** Step 1: stop early (nothing written) or undefined to go on. */
  decideBeforeRegistering(ti: TaskInstanceContext): O | undefined
  /** Step 2. */
  register(trx: Knex.Transaction, ti: TaskInstanceContext, input: Input): Promise<Registration>
  /** After step 2: an outcome when registration found nothing to do (then no lock is taken). */
  nothingToDo?(registration: Registration): O | undefined
  /** Step 4: 'commit' to apply, or the outcome to roll back with. Decides on the LOCKED state only. */
  decideUnderLock(trx: Knex.Transaction, lockedState: StoredState, ti: TaskInstanceContext, registration: Registration): Promise<'commit' | O>
  /**
   * Step 4, commit branch: the state change, on the transaction's driver connection (the lock
   * window is kept free of knex's per-statement overhead); returns what proves it committed.
   */
  apply(conn: DriverConnection, ti: TaskInstanceContext, registration: Registration): Promise<Receipt>
  committed: O
  counts(registration: Registration): {events: number; queued: number; warnings: string[]}
  /** After a connection lost during COMMIT: did it commit? Asked on a fresh connection. */
  wasCommitted(knex: Knex, ti: TaskInstanceContext, registration: Registration, receipt: Receipt): Promise<boolean>
}

export interface ProtocolOptions {
  capabilities: Capabilities
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  retry?: RetryPolicy
  /** Benchmark only: 'lock_first' reproduces Airflow's old order (lock, then register). */
  order?: 'register_first' | 'lock_first'
}

/**
 * What was registered no longer matches the locked row (the task instance was retried between
 * the unlocked read and the lock, so the audit row names a stale try; or a writer's recheck found
 * the world half-changed). Retried from step 1 like a serialization failure; writers may throw it
 * from decideUnderLock.
 */
export class RetryFromStart extends Error {
  constructor(reason = 'the task instance changed try between the unlocked read and the lock, on every attempt') {
    super(reason)
  }
}

interface Attempt<O extends {outcome: string}> {
  result: ProtocolOutcome<O>
  ti: TaskInstanceContext | null
  counts: {events: number; queued: number; warnings: string[]}
  registerMs: number
  lockWaitMs: number
  lockHoldMs: number
}

export async function runProtocol<O extends {outcome: string}, Input, Registration, Receipt>(
  knex: Knex,
  ref: TaskInstanceRef,
  input: Input,
  writer: Writer<O, Input, Registration, Receipt>,
  options: ProtocolOptions,
): Promise<ItemResult<O>> {
  const started = performance.now()
  const policy = options.retry ?? defaultRetryPolicy
  let attempt = 0
  for (;;) {
    attempt++
    let outcome: Attempt<O>
    try {
      outcome = await attemptOnce(knex, ref, input, writer, options)
    } catch (error) {
      const sqlstate = sqlStateOf(error) ?? null
      const retryable = (sqlstate !== null && retryableSqlStates.has(sqlstate)) || error instanceof RetryFromStart
      if (retryable && attempt < policy.maxAttempts) {
        await sleep(backoffDelay(policy, attempt))
        continue
      }

      const message = error instanceof Error ? error.message : String(error)
      outcome = {result: {outcome: 'failed', sqlstate, message}, ti: null, counts: {events: 0, queued: 0, warnings: []}, registerMs: 0, lockWaitMs: 0, lockHoldMs: 0}
    }

    const {ti} = outcome
    const written = outcome.result.outcome === writer.committed.outcome
    return {
      ref,
      ti: ti ? {id: ti.id, dagId: ti.dagId, runId: ti.runId, taskId: ti.taskId, mapIndex: ti.mapIndex} : null,
      result: outcome.result,
      events: written ? outcome.counts.events : 0,
      queued: written ? outcome.counts.queued : 0,
      timings: {registerMs: outcome.registerMs, lockWaitMs: outcome.lockWaitMs, lockHoldMs: outcome.lockHoldMs, totalMs: performance.now() - started},
      attempts: attempt,
      dryRun: options.dryRun,
      warnings: outcome.counts.warnings,
    }
  }
}

async function attemptOnce<O extends {outcome: string}, Input, Registration, Receipt>(
  knex: Knex,
  ref: TaskInstanceRef,
  input: Input,
  writer: Writer<O, Input, Registration, Receipt>,
  options: ProtocolOptions,
): Promise<Attempt<O>> {
  let ti: TaskInstanceContext | null = null
  let registration: Registration | undefined
  let receipt: Receipt | undefined
  let registerMs = 0
  let lockWaitMs = 0
  let lockedAt: number | undefined
  let committing = false
  let committedAt: number | undefined
  const counts = () => (registration === undefined ? {events: 0, queued: 0, warnings: []} : writer.counts(registration))
  const finish = (result: ProtocolOutcome<O>): Attempt<O> => ({
    result,
    ti,
    counts: counts(),
    registerMs,
    lockWaitMs,
    lockHoldMs: lockedAt === undefined ? 0 : (committedAt ?? performance.now()) - lockedAt,
  })

  const register = async (trx: Knex.Transaction, context: TaskInstanceContext) => {
    const begin = performance.now()
    registration = await writer.register(trx, context, input)
    registerMs = performance.now() - begin
  }

  const lock = async (conn: DriverConnection, context: TaskInstanceContext) => {
    const begin = performance.now()
    const locked = await lockTaskInstance(conn, context.id)
    lockedAt = performance.now()
    lockWaitMs = lockedAt - begin
    return locked
  }

  try {
    const result = await knex.transaction(
      async (trx) => {
        const locals = {...options, applicationName: `airlock:${writer.verb}:${'tiId' in ref ? ref.tiId : describeRef(ref)}`}
        const conn = await driverConnectionOf(trx)
        ti = (await readTaskInstance(conn, ref, {capabilities: options.capabilities, withOutlets: writer.readsOutlets, locals})) ?? null
        if (!ti) return {outcome: 'not_found'} as const
        const early = writer.decideBeforeRegistering(ti)
        if (early) return early

        let locked
        if (options.order === 'lock_first') {
          locked = await lock(conn, ti)
          await register(trx, ti)
        } else {
          await register(trx, ti)
          const idle = writer.nothingToDo?.(registration as Registration)
          if (idle) return idle
          locked = await lock(conn, ti)
        }

        if (!locked) throw new RollbackWith<ProtocolOutcome<O>>({outcome: 'not_found'})
        if (locked.tryNumber !== ti.tryNumber) throw new RetryFromStart()
        const decision = await writer.decideUnderLock(trx, locked.state, ti, registration as Registration)
        if (decision !== 'commit') throw new RollbackWith<ProtocolOutcome<O>>(decision)
        receipt = await writer.apply(conn, ti, registration as Registration)
        // A dry run is this same path ending in ROLLBACK, not a simulation (STYLE §2).
        if (options.dryRun) throw new RollbackWith<ProtocolOutcome<O>>(writer.committed)
        committing = true
        // COMMIT inside the handler (knex then resolves with this value and does not commit
        // again), so the hold clock stops when the server answers, not after knex's bookkeeping.
        await trx.commit(writer.committed)
        committedAt = performance.now()
        return writer.committed
      },
      {isolationLevel: 'read committed'},
    )
    return finish(result)
  } catch (error) {
    if (error instanceof RollbackWith) return finish(error.outcome as ProtocolOutcome<O>)
    if (committing && ti && registration !== undefined && receipt !== undefined) {
      return finish(await resolveIndeterminate(knex, writer, ti, registration, receipt, error))
    }

    throw error
  }
}

/**
 * The connection died while COMMIT was in flight: the transaction may or may not have committed.
 * Never redo blindly; re-read on a fresh connection and report what is true.
 */
async function resolveIndeterminate<O extends {outcome: string}, Input, Registration, Receipt>(
  knex: Knex,
  writer: Writer<O, Input, Registration, Receipt>,
  ti: TaskInstanceContext,
  registration: Registration,
  receipt: Receipt,
  cause: unknown,
): Promise<ProtocolOutcome<O>> {
  const reason = cause instanceof Error ? cause.message : String(cause)
  try {
    if (await writer.wasCommitted(knex, ti, registration, receipt)) return writer.committed
    return {outcome: 'failed', sqlstate: sqlStateOf(cause) ?? null, message: `connection lost during COMMIT (${reason}); a re-read shows nothing was committed: safe to run again`}
  } catch {
    return {outcome: 'failed', sqlstate: sqlStateOf(cause) ?? null, message: `connection lost during COMMIT (${reason}) and the database could not be re-read: outcome unknown; running again is safe (the recheck reports already_success if it committed)`}
  }
}
