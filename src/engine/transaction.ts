import {performance} from 'node:perf_hooks'

import {
  LockWaitInterrupted,
  RoundTripAbandoned,
  type ClassifiedError,
  type Database,
  type ErrorClass,
  type Executor,
  type Statement,
  type TransactionLocals,
} from './engine.js'
import {backoffDelay, defaultRetryPolicy, sleep, type RetryPolicy} from './retry.js'

/** An item that could not be done: after the last retry, or for a reason no retry fixes. */
export type Failed = {
  outcome: 'failed'
  sqlstate: string | null
  message: string
  kind?: ErrorClass
  /** The COMMIT was sent and the connection lost before its answer, and no re-read could tell. */
  commitUnknown?: boolean
}

/** What one run of the work decided: keep what it wrote, or undo it and report an outcome. */
export type Decision<O> = {commit: O} | {rollback: O}

/** The transaction a writer's work runs in. */
export interface WorkTransaction<O> extends Executor {
  /**
   * COMMIT now, with the outcome it stands for (in a dry run: ROLLBACK with that outcome). For
   * work that must time the commit exactly; otherwise return a `commit` decision.
   */
  commit(outcome: O): Promise<void>
  /** Tag the rest of this transaction anew, once the work knows what it works on. */
  setApplicationName(applicationName: string): Promise<void>
  /**
   * A statement that waits for a lock, given up (and the transaction rolled back, the item
   * `interrupted`) when the work's `stop` fires while it waits; without `stop`, a plain query.
   */
  queryUntilStopped<Row>(statement: Statement): Promise<Row[]>
}

export interface TransactionWork<O> {
  locals: TransactionLocals
  /** A dry run is the same path ending in ROLLBACK, not a simulation. */
  dryRun: boolean
  retry?: RetryPolicy | undefined
  /**
   * The work of one attempt. It may COMMIT itself (`tx.commit()`, to time the commit exactly);
   * otherwise a `commit` decision is committed when it returns. Throwing rolls back.
   */
  run(tx: WorkTransaction<O>, attempt: number): Promise<Decision<O>>
  /** Besides the engine's retryable errors, failures that mean "start again from the first statement". */
  retryAlso?(error: unknown): boolean
  /**
   * The work's own outcome for a failure it retried (retryAlso) that lasted to the last attempt
   * (undo's "busy": a scheduler held the row every time), instead of `failed` with its words.
   */
  exhausted?(error: unknown): O | undefined
  /**
   * After the connection was lost while COMMIT was in flight: did it commit? Asked on a fresh
   * pooled connection with what the attempt returned; never answered by redoing the work.
   */
  wasCommitted(executor: Executor, outcome: O): Promise<boolean>
  /** What the operator should know when even the re-read failed (whether running again is safe). */
  unknownCommitAdvice: string
  /** Called before each attempt, before a connection is taken: the writer forgets the last attempt. */
  beginAttempt?(attempt: number): void
  /**
   * The session tag of each transaction, asked after beginAttempt (default
   * locals.applicationName): for work whose tag says what an earlier transaction learned.
   */
  applicationName?(): string
  /** Called when COMMIT or ROLLBACK has returned (the protocol stops its lock-hold clock there). */
  settled?(): void
  /**
   * Wait for locks in slices of this many milliseconds: each transaction of an attempt gets
   * lock_timeout = min(slice, what is left of locals.lockTimeoutMs), and a slice that expires rolls
   * back and runs the work again at once, until the attempt's lock timeout is spent (then the lock
   * timeout counts as one retryable failure, as without slices). For work whose writes must not
   * wait long uncommitted (the protocol's events: see docs/complete.md, the event-to-commit window).
   */
  lockSliceMs?: number
  /**
   * The run is stopping (a signal): once it fires, no new attempt and no new lock-wait slice
   * starts, a wait through `queryUntilStopped` is cancelled on the server, and the item ends
   * `failed` with kind `interrupted`, rolled back. A transaction past its lock wait runs on to its
   * COMMIT or ROLLBACK. Its reason names the signal.
   */
  stop?: AbortSignal | undefined
  /** What `queryUntilStopped` waits for, in the interrupted item's words (default "a lock"). */
  waitingFor?: string
}

export interface TransactionResult<O> {
  result: O | Failed
  attempts: number
  totalMs: number
}

/** Carries a rollback decision out of the handler: the engine rolls back once, then returns it. */
class RollbackWith<O> extends Error {
  constructor(readonly outcome: O) {
    super('rolled back with an outcome')
  }
}

/**
 * The one transaction engine every writer runs on: one READ COMMITTED transaction per attempt
 * with its SET LOCALs first, the whole transaction retried with jittered backoff on what the
 * engine calls retryable (serialization failure, deadlock, lock timeout) up to the policy's
 * attempts, a dry run that rolls back, and a COMMIT lost in flight resolved by re-reading. Every
 * failure ends as data (`failed` with the server's code), never as a throw.
 */
export async function runTransaction<O>(db: Database, work: TransactionWork<O>): Promise<TransactionResult<O>> {
  const started = performance.now()
  const policy = work.retry ?? defaultRetryPolicy
  const done = (result: O | Failed, attempts: number): TransactionResult<O> => ({
    result,
    attempts,
    totalMs: performance.now() - started,
  })
  const stop = work.stop
  const interrupted = (during: string): Failed => ({
    outcome: 'failed',
    sqlstate: null,
    message: `interrupted (${String(stop?.reason)}) ${during}: rolled back, nothing written; running the same command again takes it up`,
    kind: 'interrupted',
  })
  const waiting = `while waiting for ${work.waitingFor ?? 'a lock'}`
  // The grace after the signal ran out with a statement unanswered: its connection was ended
  // before COMMIT was sent, so the server rolls the transaction back.
  const answering = "while waiting for the server's answer (given up before its COMMIT was sent)"
  for (let attempt = 1; ; attempt++) {
    const attemptStarted = performance.now()
    for (;;) {
      const remainingMs = work.locals.lockTimeoutMs - (performance.now() - attemptStarted)
      const sliced = work.lockSliceMs !== undefined && work.lockSliceMs < remainingMs
      const locals = sliced
        ? {...work.locals, lockTimeoutMs: work.lockSliceMs!}
        : {...work.locals, lockTimeoutMs: Math.max(1, remainingMs)}
      const step = await attemptOnce(db, work, attempt, work.lockSliceMs === undefined ? work.locals : locals)
      if ('done' in step) return done(step.done, attempt)
      if (step.kind === 'interrupted')
        return done(
          {...interrupted(step.error instanceof RoundTripAbandoned ? answering : waiting), sqlstate: step.code},
          attempt,
        )
      // A slice expired with budget left: roll back (done) and start again with fresh statements,
      // unless the run is stopping: the wait was the slice's, and no new one starts.
      if (sliced && step.kind === 'lock_timeout') {
        if (stop?.aborted) return done(interrupted(waiting), attempt)
        continue
      }
      if (step.retryable && attempt < policy.maxAttempts) {
        // No retry once the run is stopping, nor after a backoff the signal cut short.
        const before = `before retrying (${step.kind === 'lock_timeout' ? 'its lock wait timed out' : step.reason})`
        if (stop?.aborted) return done(interrupted(before), attempt)
        await sleepUnlessStopped(backoffDelay(policy, attempt), stop)
        if (stop?.aborted) return done(interrupted(before), attempt)
        break
      }

      // Retried to the last attempt: the work may name what that means to it.
      const own = step.retryable ? work.exhausted?.(step.error) : undefined
      if (own !== undefined) return done(own, attempt)
      // A session that could not be had again after the retries: the server is gone, whatever
      // the last attempt's words were (a full server is as gone to this batch as a closed port).
      const kind = step.connectionLost ? 'unreachable' : step.kind
      // Not "run again": every attempt meets the same read-only server until it accepts writes.
      const message =
        kind === 'read_only'
          ? `the server accepts no writes (${step.reason}): rolled back, nothing written; running again fails the same way until it accepts writes`
          : step.reason
      return done({outcome: 'failed', sqlstate: step.code, message, kind}, attempt)
    }
  }
}

type AttemptStep<O> =
  | {done: O | Failed}
  | {kind: ErrorClass; code: string | null; reason: string; retryable: boolean; connectionLost: boolean; error: unknown}

/** One transaction of the work: its outcome, or why it failed and whether that is worth retrying. */
async function attemptOnce<O>(
  db: Database,
  work: TransactionWork<O>,
  attempt: number,
  locals: TransactionLocals,
): Promise<AttemptStep<O>> {
  let committing: O | undefined
  work.beginAttempt?.(attempt)
  const tagged = work.applicationName ? {...locals, applicationName: work.applicationName()} : locals
  try {
    const outcome = await db.transaction(tagged, async (tx) => {
      const state = {committed: false}
      const decision = await work.run(
        {
          query: (statement) => tx.query(statement),
          queryUntilStopped: (statement) => (work.stop ? tx.queryUntil(statement, work.stop) : tx.query(statement)),
          setApplicationName: (applicationName) => tx.setApplicationName(applicationName),
          async commit(outcome) {
            if (work.dryRun) throw new RollbackWith(outcome)
            committing = outcome
            state.committed = true
            await tx.commit()
          },
        },
        attempt,
      )
      // What was committed stays committed, whatever the work said after: report that.
      if (state.committed) return committing as O
      // Only a `commit` decision outside a dry run may keep what was written.
      if ('rollback' in decision) throw new RollbackWith(decision.rollback)
      if (work.dryRun) throw new RollbackWith(decision.commit)
      committing = decision.commit
      await tx.commit()
      return decision.commit
    })
    work.settled?.()
    return {done: outcome}
  } catch (error) {
    work.settled?.()
    if (error instanceof RollbackWith) return {done: error.outcome as O}
    // Rolled back by the handler: a wait given up for a stopping run, before any COMMIT was sent.
    if (error instanceof LockWaitInterrupted && committing === undefined)
      return {
        kind: 'interrupted',
        code: error.code,
        reason: error.message,
        retryable: false,
        connectionLost: false,
        error,
      }
    const classified = db.classify(error)
    const {kind, code, connectionLost = false} = classified
    const reason = error instanceof Error ? error.message : String(error)
    if (committing !== undefined) return {done: await resolveLostCommit(db, work, committing, classified, reason)}
    // A lost session before COMMIT was sent: the server rolled the transaction back, so running
    // it again from its first statement is as safe as after a deadlock.
    return {
      kind,
      code,
      reason,
      connectionLost,
      retryable: kind === 'retryable' || kind === 'lock_timeout' || connectionLost || work.retryAlso?.(error) === true,
      error,
    }
  }
}

/** A backoff that ends early when the run is stopping. */
async function sleepUnlessStopped(ms: number, stop: AbortSignal | undefined): Promise<void> {
  if (!stop) return sleep(ms)
  await new Promise<void>((resolve) => {
    const wake = () => {
      clearTimeout(timer)
      resolve()
    }
    const timer = setTimeout(() => {
      stop.removeEventListener('abort', wake)
      resolve()
    }, ms)
    stop.addEventListener('abort', wake, {once: true})
  })
}

async function resolveLostCommit<O>(
  db: Database,
  work: TransactionWork<O>,
  outcome: O,
  {kind, code, serverSilent}: ClassifiedError,
  reason: string,
): Promise<O | Failed> {
  // Not re-read when asking could only wait: the run is stopping past its grace (the item is
  // unknown, not interrupted: something may have committed), or the server just failed to
  // answer a new connection within the connect timeout.
  if (kind === 'interrupted')
    return {
      outcome: 'failed',
      sqlstate: code,
      message: `unknown: the COMMIT was sent and no answer came before the run stopped (${reason}), so it was not re-read; ${work.unknownCommitAdvice}`,
      commitUnknown: true,
    }
  if (serverSilent)
    return {
      outcome: 'failed',
      sqlstate: code,
      message: `unknown: the COMMIT was sent and no answer came (${reason}), so it could not be re-read; ${work.unknownCommitAdvice}`,
      kind: 'unreachable',
      commitUnknown: true,
    }
  try {
    if (await work.wasCommitted(db.executor, outcome)) return outcome
    return {
      outcome: 'failed',
      sqlstate: code,
      message: `connection lost during COMMIT (${reason}); a re-read shows nothing was committed: safe to run again`,
    }
  } catch {
    // Nothing can be known until the server answers again: the batch stops here as for any
    // lost server, and the next run's own read finds what this COMMIT did.
    return {
      outcome: 'failed',
      sqlstate: code,
      message: `unknown: the COMMIT was sent and the connection lost (${reason}), and the database could not be re-read; ${work.unknownCommitAdvice}`,
      kind: 'unreachable',
      commitUnknown: true,
    }
  }
}
