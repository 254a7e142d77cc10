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
