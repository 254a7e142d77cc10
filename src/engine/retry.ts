import type {ClassifiedError, Executor, Statement} from './engine.js'
/**
 * Backoff before retrying a whole transaction after 40001 / 40P01 / 55P03: exponential with full
 * jitter, so completions that collided do not collide again in lockstep.
 */
export interface RetryPolicy {
  maxAttempts: number
  baseDelayMs: number
  maxDelayMs: number
}

export const defaultRetryPolicy: RetryPolicy = {maxAttempts: 4, baseDelayMs: 25, maxDelayMs: 1000}

export function backoffDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))
  return Math.round(ceiling / 2 + random() * (ceiling / 2))
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The pool for reads that may simply be read again: each statement retried with the same backoff
 * as a writer's transaction when the session was lost (a killed backend, a reset connection: the
 * pool discards that connection and the retry takes another) or the statement was a serialization
 * failure or deadlock victim. A selection's scan is such a read: nothing it did stays behind, so
 * one killed connection costs one page read again instead of the whole run. Anything else (a
 * timeout, a permission, bad SQL) is thrown at once, as is the last attempt's failure.
 */
export function retryingReads(
  db: {executor: Executor; classify(error: unknown): ClassifiedError},
  policy: RetryPolicy = defaultRetryPolicy,
): Executor {
  return {
    async query<Row>(statement: Statement): Promise<Row[]> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await db.executor.query<Row>(statement)
        } catch (error) {
          // A server that does not answer at all is not asked again: each try would wait the
          // whole connect timeout.
          const {kind, connectionLost} = db.classify(error)
          const again = connectionLost === true || kind === 'retryable'
          if (!again || attempt >= policy.maxAttempts) throw error
          await sleep(backoffDelay(policy, attempt))
        }
      }
    },
  }
}
