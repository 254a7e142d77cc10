import {performance} from 'node:perf_hooks'

import type {Knex} from 'knex'

import {setTransactionLocals} from '../db/setTransactionLocals.js'
import {retryableSqlStates, sqlStateOf} from '../db/sqlstate.js'
import type {ProtocolOutcome} from './outcomes.js'
import {backoffDelay, defaultRetryPolicy, sleep, type RetryPolicy} from './retry.js'
import {RollbackWith} from './rollbackWith.js'

/**
 * The protocol's second entry point, for writes that are not a task instance state change:
 * re-emitting an event by id or from an export, removing a duplicate. Same rules as runProtocol:
 * handler-form transaction at READ COMMITTED, SET LOCAL timeouts and an application_name first,
 * whole-transaction retries on 40001 / 40P01 / 55P03, a dry run that ends in ROLLBACK, and a
 * COMMIT lost in flight resolved by re-reading, never by redoing.
 */
export interface EventWriteOptions {
  applicationName: string
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  retry?: RetryPolicy
}

export interface EventWrite<O extends {outcome: string}> {
  /** The work; returns the outcome. Only `committedOutcome` commits, anything else rolls back. */
  run(trx: Knex.Transaction): Promise<O>
  committedOutcome: string
  /** After a connection lost during COMMIT: did it commit? Asked on a fresh connection. */
  wasCommitted(knex: Knex, outcome: O): Promise<boolean>
}

export async function runEventWrite<O extends {outcome: string}>(knex: Knex, write: EventWrite<O>, options: EventWriteOptions): Promise<{result: ProtocolOutcome<O>; attempts: number; totalMs: number}> {
  const started = performance.now()
  const policy = options.retry ?? defaultRetryPolicy
  for (let attempt = 1; ; attempt++) {
    let pending: O | undefined
    try {
      const result = await knex.transaction(
        async (trx) => {
          await setTransactionLocals(trx, options)
          const outcome = await write.run(trx)
          if (outcome.outcome !== write.committedOutcome || options.dryRun) throw new RollbackWith(outcome)
          pending = outcome
          return outcome
        },
        {isolationLevel: 'read committed'},
      )
      return {result, attempts: attempt, totalMs: performance.now() - started}
    } catch (error) {
      if (error instanceof RollbackWith) return {result: error.outcome as O, attempts: attempt, totalMs: performance.now() - started}
      const sqlstate = sqlStateOf(error) ?? null
      if (pending) {
        // Everything ran; only COMMIT's answer is missing.
        const committed = await write.wasCommitted(knex, pending).catch(() => undefined)
        const reason = error instanceof Error ? error.message : String(error)
        if (committed) return {result: pending, attempts: attempt, totalMs: performance.now() - started}
        const message = committed === false ? `connection lost during COMMIT (${reason}); a re-read shows nothing was committed: safe to run again` : `connection lost during COMMIT (${reason}); outcome unknown`
        return {result: {outcome: 'failed', sqlstate, message}, attempts: attempt, totalMs: performance.now() - started}
      }

      if (sqlstate && retryableSqlStates.has(sqlstate) && attempt < policy.maxAttempts) {
        await sleep(backoffDelay(policy, attempt))
        continue
      }

      return {result: {outcome: 'failed', sqlstate, message: error instanceof Error ? error.message : String(error)}, attempts: attempt, totalMs: performance.now() - started}
    }
  }
}
