import {sendEvent, type Delivery, type SendPolicy} from './send.js'
import type {LineageSpool} from './spool.js'

/** What became of a run's COMPLETE events once it stopped waiting for them. */
export interface LineageDelivery {
  /** Confirmed by the backend (2xx) and removed from the spool. */
  sent: number
  /** May have arrived (a timeout, a connection lost after the body went out): kept in the spool. */
  unconfirmed: number
  /** Did not arrive, or were refused: kept in the spool. */
  failed: number
  /** Never tried (the backend taken for down, the queue full, the wait over): kept in the spool. */
  not_tried: number
  /** Where the events not confirmed are: `airlock lineage resend` sends them. */
  spool: string
  first_failure?: string
}

/** What became of one event an outbox took. */
export type SettledOutcome =
  {outcome: 'sent'} | {outcome: 'unconfirmed' | 'failed'; why: string} | {outcome: 'not_tried'}

/** After this many deliveries in a row that were not confirmed, the backend is taken for down. */
const breakAfter = 3

/**
 * The bounded asynchronous queue between the completions and the lineage backend: completions
 * enqueue an event already in the spool and go on at once; the outbox sends at most
 * `concurrency` at a time, so completions per second do not depend on the backend's speed.
 * Memory is bounded: it holds run ids only, at most `capacity`, and an event beyond that (or
 * after the backend was taken for down) stays in the spool untried. Waiting for it ends at a
 * deadline: what is still queued or in flight then stays in the spool.
 */
export class LineageOutbox {
  /** Run ids, each with its task instance's key for the first failure's words. */
  private readonly queue: Array<{runId: string; label: string}> = []
  private active = 0
  private notConfirmedInARow = 0
  private down = false
  private readonly stopping = new AbortController()
  private readonly counts = {sent: 0, unconfirmed: 0, failed: 0, not_tried: 0}
  private firstFailure: string | undefined
  private onIdle: (() => void) | undefined

  constructor(
    private readonly target: {url: string; apiKey: string | undefined},
    readonly spool: LineageSpool,
    private readonly policy: SendPolicy,
    private readonly limits: {concurrency: number; capacity: number} = {concurrency: 4, capacity: 100_000},
    /** Told what became of each event taken (resend lists them one by one). */
    private readonly onSettled?: (runId: string, outcome: SettledOutcome) => void,
  ) {}

  /** Takes an event already spooled: `queued` to be sent, or `spooled` (not tried by this run). */
  enqueue(runId: string, label: string): 'queued' | 'spooled' {
    if (this.down || this.stopping.signal.aborted || this.queue.length >= this.limits.capacity) {
      this.counts.not_tried++
      this.onSettled?.(runId, {outcome: 'not_tried'})
      return 'spooled'
    }
    this.queue.push({runId, label})
    this.pump()
    return 'queued'
  }

  /**
   * Waits until every queued event was sent, or `waitMs` passed: then what is still queued is
   * left untried and what is in flight is cut short, both kept in the spool.
   */
  async close(waitMs: number): Promise<LineageDelivery> {
    if (this.active > 0 || this.queue.length > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        new Promise<void>((resolve) => (this.onIdle = resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs))),
      ])
      clearTimeout(timer)
    }
    this.leaveUntried()
    if (this.active > 0) {
      this.stopping.abort()
      await new Promise<void>((resolve) => (this.onIdle = resolve))
    }
    return {...this.counts, spool: this.spool.dir, ...(this.firstFailure ? {first_failure: this.firstFailure} : {})}
  }

  private pump(): void {
    while (this.active < this.limits.concurrency && this.queue.length > 0) {
      const next = this.queue.shift()!
      this.active++
      void this.deliver(next).finally(() => {
        this.active--
        this.pump()
        if (this.active === 0 && this.queue.length === 0) this.onIdle?.()
      })
    }
  }

  private async deliver({runId, label}: {runId: string; label: string}): Promise<void> {
    if (this.down) {
      this.counts.not_tried++
      this.onSettled?.(runId, {outcome: 'not_tried'})
      return
    }
    const body = await this.spool.read(runId).catch(() => undefined)
    // Removed meanwhile: another run (a resend) confirmed it.
    if (body === undefined) {
      this.counts.sent++
      this.onSettled?.(runId, {outcome: 'sent'})
      return
    }
    const delivery = await sendEvent(this.target, body, this.policy, this.stopping.signal)
    this.record(delivery, label)
    this.onSettled?.(
      runId,
      delivery === 'sent'
        ? {outcome: 'sent'}
        : 'unconfirmed' in delivery
          ? {outcome: 'unconfirmed', why: delivery.unconfirmed}
          : {outcome: 'failed', why: delivery.failed},
    )
    if (delivery === 'sent') await this.spool.remove(runId).catch(() => undefined)
  }

  private record(delivery: Delivery, label: string): void {
    if (delivery === 'sent') {
      this.counts.sent++
      this.notConfirmedInARow = 0
      return
    }
    const [kind, why] =
      'unconfirmed' in delivery
        ? (['unconfirmed', delivery.unconfirmed] as const)
        : (['failed', delivery.failed] as const)
    this.counts[kind]++
    this.firstFailure ??= `${label}: ${kind}: ${why}`
    if (++this.notConfirmedInARow >= breakAfter) this.takeDown()
  }

  /** The backend is taken for down: nothing more is tried, everything queued stays in the spool. */
  private takeDown(): void {
    this.down = true
    this.leaveUntried()
  }

  /** Everything still queued stays in the spool, untried by this run. */
  private leaveUntried(): void {
    for (const {runId} of this.queue.splice(0)) {
      this.counts.not_tried++
      this.onSettled?.(runId, {outcome: 'not_tried'})
    }
  }
}
