import {setMaxListeners} from 'node:events'

import {AirlockError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'

/** What bin/run.js leaves on globalThis: a signal that came while oclif was still loading. */
interface EarlySignals {
  airlockEarlySignal?: string
  airlockReleaseEarlySignals?: () => void
}

/**
 * The signal bin/run.js remembered while oclif loaded, for what ends without an airlock command to
 * take it up (the command_not_found hook exits through oclif, before bin/run.js's last lines).
 */
export const earlySignal = (): string | undefined => (globalThis as EarlySignals).airlockEarlySignal

/**
 * How long the first signal of a batch lets the items in flight finish before giving up on the
 * server (Interrupts.abandon). A statement or COMMIT answers in milliseconds on a live path; one
 * still unanswered after this is on a path that may never answer (a frozen network), and waiting
 * on it would hold the exit forever.
 */
export const abandonAfterMs = 3000

/** After the command decided its exit (the summary printed): that exit, or 130 when none was decided. */
const lateSignal = () => process.exit(process.exitCode ?? ExitCode.interrupted)

export const interruptedError = (signal: string) =>
  new AirlockError(
    'INTERRUPTED',
    ExitCode.interrupted,
    `Interrupted (${signal}) before any item was started: nothing was written.`,
    ['Run the same command again when ready.'],
  )

/**
 * SIGINT / SIGTERM at any moment of a command, from the first line of bin/run.js on:
 * - before a batch starts (loading, connecting, counting, at the prompt): the command stops at
 *   once with exit 130 and an INTERRUPTED error (an envelope under --json); nothing was written;
 * - during a batch, the first signal asks workers to take no new item and the items in flight to
 *   start no new attempt: a transaction waiting for a row lock is cancelled and rolled back (its
 *   item reported interrupted), one past the lock commits or rolls back on its own; then the
 *   summary is printed, exit 130. What still waits for the server abandonAfterMs later is given
 *   up (`abandon`): its connection ended, its item interrupted, or unknown if its COMMIT was
 *   sent, so a statement that never returns cannot hold the exit;
 * - a second signal during a batch prints what has finished so far (the --json envelope, the
 *   --ndjson summary) and exits at once; the server rolls back whatever was still open.
 */
export class Interrupts {
  private signal: string | undefined
  private readonly stopping = new AbortController()
  /**
   * Fires on the first signal during a batch (its reason: the signal's name): the items in flight
   * start no new attempt and give up their row-lock waits (BatchHooks.stop). Every item in flight
   * listens on it (its lock statement, its backoff), so it takes any number of listeners: Node's
   * default of 10 would warn on stderr past --concurrency 10.
   */
  readonly stop: AbortSignal = withoutListenerLimit(this.stopping.signal)
  private readonly abandoning = new AbortController()
  /**
   * Fires abandonAfterMs after `stop` (its reason: the signal's name), unless the command is done
   * by then: the database gives up every round trip still waiting for its answer
   * (OpenOptions.abandon). Every round trip in flight listens on it.
   */
  readonly abandon: AbortSignal = withoutListenerLimit(this.abandoning.signal)
  private abandonTimer: NodeJS.Timeout | undefined
  private batch: {onSecond: () => void; onFirst?: ((signal: string) => void) | undefined} | undefined
  private rejectSetup!: (error: Error) => void
  private disposed = false
  /** Rejects with interruptedError when a signal comes before the batch starts. */
  readonly beforeBatch: Promise<never>
  private readonly handler = (signal: string) => {
    if (!this.batch) {
      this.signal ??= signal
      this.rejectSetup(interruptedError(signal))
      return
    }

    if (this.signal === undefined) {
      this.signal = signal
      ;(this.batch.onFirst ?? this.onFirstInBatch)(signal)
      this.stopping.abort(signal)
      this.abandonTimer = setTimeout(() => this.abandoning.abort(signal), abandonAfterMs)
      return
    }

    this.batch.onSecond()
    process.exit(ExitCode.interrupted)
  }

  constructor(private readonly onFirstInBatch: (signal: string) => void) {
    this.beforeBatch = new Promise<never>((_, reject) => (this.rejectSetup = reject))
    // Only the race in the base command awaits it; a rejection nobody awaits is not a crash.
    this.beforeBatch.catch(() => undefined)
    const early = globalThis as EarlySignals
    // Ours before the early ones go (see dispose: never a moment without a listener).
    process.on('SIGINT', this.handler)
    process.on('SIGTERM', this.handler)
    early.airlockReleaseEarlySignals?.()
    if (early.airlockEarlySignal) this.handler(early.airlockEarlySignal)
  }

  /**
   * The batch (or a watch loop) begins: signals stop it gracefully from now on (`onFirst` replaces
   * the batch's message). Throws if one already came.
   */
  startBatch(onSecond: () => void, onFirst?: (signal: string) => void): void {
    if (this.signal !== undefined) throw interruptedError(this.signal)
    this.batch = {onSecond, onFirst}
  }

  readonly requested = (): boolean => this.signal !== undefined

  readonly inBatch = (): boolean => this.batch !== undefined

  /**
   * The batch is over and its exit decided, before its summary is printed: from now on a signal
   * exits with `exit` at once (as after dispose), never with 130 as a second signal in a batch
   * would. Between the summary and the command's end (an --output file closing, lineage being
   * sent) the operator has already been told the outcome; a signal must not change it.
   */
  settle(exit: number): void {
    process.exitCode = exit
    this.dispose()
  }

  /**
   * The command is done (its summary printed) and cleans up. A signal from now on must not end
   * the process by the signal itself, which a supervisor reads differently from an exit code: it
   * exits at once with the exit the command decided (130 when it was interrupted; exit 6's
   * findings are not lost to a late SIGTERM), leaving the pools to the server.
   */
  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    clearTimeout(this.abandonTimer)
    // The new listeners first: Node restores a signal's default action (death by it) the moment its
    // last listener goes, so removing first would leave that window open.
    process.on('SIGINT', lateSignal)
    process.on('SIGTERM', lateSignal)
    process.off('SIGINT', this.handler)
    process.off('SIGTERM', this.handler)
  }
}

function withoutListenerLimit(signal: AbortSignal): AbortSignal {
  setMaxListeners(0, signal)
  return signal
}
