import {performance} from 'node:perf_hooks'

import type {RowHolder} from '../store/families/taskInstances.js'

/**
 * The items waiting for their task instance's row lock right now, each since its first slice:
 * a wait redone in slices (see lockWaitSliceMs) is one wait to the operator, from the first
 * registration to the lock.
 */
export class LockWaits {
  private readonly started = new Map<string, {label: string; since: number}>()

  waiting(tiId: string, label: string): void {
    if (!this.started.has(tiId)) this.started.set(tiId, {label, since: performance.now()})
  }

  done(tiId: string): void {
    this.started.delete(tiId)
  }

  /** The wait that has lasted longest, if any. */
  longest(): {tiId: string; label: string; waitedMs: number} | undefined {
    let oldest: {tiId: string; label: string; since: number} | undefined
    for (const [tiId, wait] of this.started) if (!oldest || wait.since < oldest.since) oldest = {tiId, ...wait}
    return oldest && {tiId: oldest.tiId, label: oldest.label, waitedMs: performance.now() - oldest.since}
  }
}

/** A wait the operator should hear about: which task instance, how long, and who holds its row (when the server says). */
export interface LockWaitReport {
  label: string
  waitedMs: number
  holder: RowHolder | undefined
}

/** Waits shorter than this are the normal cost of a busy row and are not reported. */
export const reportLockWaitsAfterMs = 1000

/**
 * Every `everyMs`, reports the longest wait past `reportLockWaitsAfterMs` with its row's holder
 * (read on a spare pooled connection), or undefined once nothing waits that long. Returns stop.
 */
export function watchLockWaits(
  waits: LockWaits,
  holderOf: (tiId: string) => Promise<RowHolder | undefined>,
  report: (wait: LockWaitReport | undefined) => void,
  everyMs = 500,
): () => void {
  let reading = false
  let reported = false
  const timer = setInterval(() => {
    if (reading) return
    const wait = waits.longest()
    if (!wait || wait.waitedMs < reportLockWaitsAfterMs) {
      if (reported) report(undefined)
      reported = false
      return
    }
    reading = true
    void holderOf(wait.tiId)
      .catch(() => undefined)
      .then((holder) => {
        reading = false
        if (!timerStopped) {
          reported = true
          report({label: wait.label, waitedMs: wait.waitedMs, holder})
        }
      })
  }, everyMs)
  timer.unref()
  let timerStopped = false
  return () => {
    timerStopped = true
    clearInterval(timer)
  }
}

/** `pid 4242 "airflow scheduler" (user airflow, idle in transaction since …)`: who holds a row, in an operator's words. */
export function describeHolder(holder: RowHolder): string {
  const name = holder.applicationName ? ` "${holder.applicationName}"` : ''
  const since = holder.since ? ` in a transaction since ${holder.since.toISOString()}` : ''
  return `pid ${holder.pid}${name} (user ${holder.user}, ${holder.state ?? 'unknown state'}${since})`
}
