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
  /** Not sent because the provider would send none (its `[openlineage]` filters); present when any. */
  skipped?: number
}

/** What became of one event an outbox took. */
export type SettledOutcome =
  | {outcome: 'sent'}
  | {outcome: 'unconfirmed' | 'failed'; why: string}
  | {outcome: 'not_tried'}
  | {outcome: 'skipped'; why: string}

/**
 * An event the outbox takes: `load` writes it to the spool, if it is not there yet, and returns
 * its run id and body (undefined: there is nothing to send, e.g. a resend's file another run
 * confirmed meanwhile). Loads run one at a time, off the completions' path.
 */
export interface OutboxEntry {
  /** Names the entry to `onSettled`: a task instance id, or a spooled run id. */
  key: string
  /** The task instance's key, for the first failure's words. */
  label: string
  load: () => Promise<Loaded>
}

/** A loaded entry: its event to send, why the provider would send none, or nothing left to send. */
type Loaded = {runId: string; body: string} | {skipped: string} | undefined

/** After this many deliveries in a row that were not confirmed, the backend is taken for down. */
const breakAfter = 3

/**
 * The bounded asynchronous queue between the completions and the lineage backend: a completion
 * hands over its entry and goes on at once; the outbox builds and spools each event (one at a
 * time, so it holds at most one database connection) and sends at most `concurrency` at a time,
 * so completions per second depend neither on the backend nor on building the events. Memory is
 * bounded: at most `capacity` entries wait; an entry beyond that, or after the backend was taken
 * for down, is spooled on the spot and left untried. Waiting for the rest ends at a deadline:
 * what is still queued is spooled, what is in flight is cut short, both kept in the spool.
 */
export class LineageOutbox {
  private readonly queue: OutboxEntry[] = []
  private active = 0
  private notConfirmedInARow = 0
  private down = false
  private loading: Promise<unknown> = Promise.resolve()
  /** The queue spooled once the backend was taken for down: close waits for it. */
  private leavingAll: Promise<void> = Promise.resolve()
  private readonly stopping = new AbortController()
  private readonly counts = {sent: 0, unconfirmed: 0, failed: 0, not_tried: 0}
  private skipped = 0
  private firstFailure: string | undefined
  private onIdle: (() => void) | undefined

  constructor(
    private readonly target: {url: string; apiKey: string | undefined},
    readonly spool: LineageSpool,
    private readonly policy: SendPolicy,
    private readonly limits: {concurrency: number; capacity: number} = {concurrency: 4, capacity: 100_000},
    /** Told what became of each entry taken (resend lists them one by one). */
    private readonly onSettled?: (key: string, outcome: SettledOutcome) => void,
  ) {}

  /** Takes an entry: `queued` to be sent, or `spooled` (written to the spool now, not tried by this run). */
  async enqueue(entry: OutboxEntry): Promise<'queued' | 'spooled'> {
    if (this.down || this.stopping.signal.aborted || this.queue.length >= this.limits.capacity) {
      await this.leave(entry)
      return 'spooled'
    }
    this.queue.push(entry)
    this.pump()
    return 'queued'
  }

  /**
   * Waits until every queued event was sent, or `waitMs` passed: then what is still queued is
   * spooled untried and what is in flight is cut short, both kept in the spool.
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
    this.stopping.abort()
    await this.leaveQueued()
    await this.leavingAll
    if (this.active > 0) await new Promise<void>((resolve) => (this.onIdle = resolve))
    return {
      ...this.counts,
      spool: this.spool.dir,
      ...(this.firstFailure ? {first_failure: this.firstFailure} : {}),
      ...(this.skipped > 0 ? {skipped: this.skipped} : {}),
    }
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

  /** One load at a time, whoever asks: the spool is written in order, one connection at most. */
  private load(entry: OutboxEntry): Promise<Loaded> {
    const loaded = this.loading.then(() => entry.load())
    this.loading = loaded.catch(() => undefined)
    return loaded
  }

  private async deliver(entry: OutboxEntry): Promise<void> {
    if (this.down || this.stopping.signal.aborted) return this.leave(entry)
    let loaded: Loaded
    try {
      loaded = await this.load(entry)
    } catch (error) {
      this.unloadable(entry, error)
      return
    }
    if (loaded && 'skipped' in loaded) {
      this.skip(entry, loaded.skipped)
      return
    }
    // Nothing to send (a resend's file confirmed meanwhile by another run).
    if (!loaded) {
      this.counts.sent++
      this.onSettled?.(entry.key, {outcome: 'sent'})
      return
    }
    const delivery = await sendEvent(this.target, loaded.body, this.policy, this.stopping.signal)
    this.record(delivery, entry.label)
    this.onSettled?.(
      entry.key,
      delivery === 'sent'
        ? {outcome: 'sent'}
        : 'unconfirmed' in delivery
          ? {outcome: 'unconfirmed', why: delivery.unconfirmed}
          : {outcome: 'failed', why: delivery.failed},
    )
    if (delivery === 'sent') await this.spool.remove(loaded.runId).catch(() => undefined)
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
    if (++this.notConfirmedInARow >= breakAfter) {
      // The backend is taken for down: what is queued is spooled and left untried.
      this.down = true
      this.leavingAll = this.leavingAll.then(() => this.leaveQueued())
    }
  }

  /** Everything still queued is spooled, untried by this run. */
  private async leaveQueued(): Promise<void> {
    for (const entry of this.queue.splice(0)) await this.leave(entry)
  }

  /** An entry this run does not try: spooled (so nothing is lost), counted not tried. */
  private async leave(entry: OutboxEntry): Promise<void> {
    try {
      const loaded = await this.load(entry)
      if (loaded && 'skipped' in loaded) {
        this.skip(entry, loaded.skipped)
        return
      }
    } catch (error) {
      this.unloadable(entry, error)
      return
    }
    this.counts.not_tried++
    this.onSettled?.(entry.key, {outcome: 'not_tried'})
  }

  /** An event the provider would not send: neither spooled nor sent. */
  private skip(entry: OutboxEntry, why: string): void {
    this.skipped++
    this.onSettled?.(entry.key, {outcome: 'skipped', why})
  }

  /** An event that could not be built or spooled (the task instance unreadable, a full disk): failed, said why. */
  private unloadable(entry: OutboxEntry, error: unknown): void {
    const why = `not spooled: ${error instanceof Error ? error.message : String(error)}`
    this.counts.failed++
    this.firstFailure ??= `${entry.label}: failed: ${why}`
    this.onSettled?.(entry.key, {outcome: 'failed', why})
  }
}
