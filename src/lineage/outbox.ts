import {sendEvent, type Delivery, type SendPolicy} from './send.js'
import type {LineageSpool} from './spool.js'

/** What became of a run's COMPLETE events once it stopped waiting for them. */
export interface LineageDelivery {
  /** Confirmed by the backend (2xx) and removed from the spool. */
  sent: number
  /** Sent whole with no answer (a timeout, a connection lost, the wait over): kept apart in the spool. */
  maybe_delivered: number
  /** Could not have arrived (after the retries), or refused by the backend: kept in the spool. */
  failed: number
  /** Never sent (the backend taken for down, the queue full, the wait over): kept in the spool. */
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
  | {outcome: 'maybe_delivered' | 'failed'; why: string}
  | {outcome: 'not_tried'; why?: string}
  | {outcome: 'skipped'; why: string}

/**
 * An event the outbox takes: `load` writes it to the spool, if it is not there yet, and returns
 * its run id (undefined: there is nothing to send, e.g. a resend's file another run confirmed
 * meanwhile). Loads run one at a time, off the completions' path.
 */
export interface OutboxEntry {
  /** Names the entry to `onSettled`: a task instance id, or a spooled run id. */
  key: string
  /** The task instance's key, for the first failure's words. */
  label: string
  load: () => Promise<Loaded>
}

/** A loaded entry: the run id its spooled event is under, why the provider would send none, or nothing left to send. */
type Loaded = {runId: string} | {skipped: string} | undefined

/**
 * POSTs in flight at once. A backend answering in 2 s then takes about 2 s, not 6, beyond the
 * last of a dozen completions; a thousand take 2 minutes of sending beside the batch, which
 * `--lineage-wait` bounds at the end. The backend sees at most this many requests from a run.
 */
export const sendConcurrency = 16

/** After this many deliveries in a row that were not confirmed, the backend is taken for down. */
const breakAfter = 3

/**
 * The bounded asynchronous queue between the completions and the lineage backend: a completion
 * hands over its entry and goes on at once. Two stages work beside the batch: one loader builds
 * and spools each event, one at a time (so it holds at most one database connection, and every
 * event handed over is on disk before the run ends), and up to `concurrency` senders POST what
 * the loader spooled, re-reading each from the spool (so a backlog costs file names, not bodies,
 * in memory). Memory is bounded: at most `capacity` entries wait; an entry beyond that waits to be
 * spooled and is left untried. After the backend was taken for down, entries are spooled untried.
 * Waiting for the rest ends at a deadline: what is being sent is cut short (maybe delivered once
 * its body went out), what waits to be sent stays in the spool untried, and what the loader
 * still holds is spooled first.
 */
export class LineageOutbox {
  private readonly toLoad: OutboxEntry[] = []
  private readonly toSend: Array<{entry: OutboxEntry; runId: string}> = []
  private loaderRunning = false
  private sending = 0
  private notConfirmedInARow = 0
  private down = false
  private loading: Promise<unknown> = Promise.resolve()
  private readonly stopping = new AbortController()
  private readonly counts = {sent: 0, maybe_delivered: 0, failed: 0, not_tried: 0}
  private skipped = 0
  private firstFailure: string | undefined
  private idleWaiters: Array<() => void> = []

  constructor(
    private readonly target: {url: string; apiKey: string | undefined},
    readonly spool: LineageSpool,
    private readonly policy: SendPolicy,
    private readonly limits: {concurrency: number; capacity: number} = {
      concurrency: sendConcurrency,
      capacity: 100_000,
    },
    /** Told what became of each entry taken (resend lists them one by one). */
    private readonly onSettled?: (key: string, outcome: SettledOutcome) => void,
  ) {}

  /**
   * Takes an entry: `queued` to be sent, or `spooled` (written to the spool, not tried by this
   * run). Returns at once but when `capacity` entries already wait: then it waits for this one to
   * be spooled.
   */
  async enqueue(entry: OutboxEntry): Promise<'queued' | 'spooled'> {
    if (this.toLoad.length + this.toSend.length >= this.limits.capacity) {
      await this.spoolUntried(entry)
      return 'spooled'
    }
    this.toLoad.push(entry)
    this.runLoader()
    return this.down || this.stopping.signal.aborted ? 'spooled' : 'queued'
  }

  /**
   * Waits until every event handed over was sent, or `waitMs` passed: then what is being sent is
   * cut short and what waits to be sent stays in the spool; what the loader holds is spooled.
   */
  async close(waitMs: number): Promise<LineageDelivery> {
    if (!this.idle()) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([this.whenIdle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))])
      clearTimeout(timer)
    }
    this.stopping.abort()
    for (const waiting of this.toSend.splice(0)) this.notTried(waiting.entry, 'the run stopped waiting')
    await this.whenIdle()
    return {
      ...this.counts,
      spool: this.spool.dir,
      ...(this.firstFailure ? {first_failure: this.firstFailure} : {}),
      ...(this.skipped > 0 ? {skipped: this.skipped} : {}),
    }
  }

  private idle(): boolean {
    return !this.loaderRunning && this.toLoad.length === 0 && this.toSend.length === 0 && this.sending === 0
  }

  private whenIdle(): Promise<void> {
    return this.idle() ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  private checkIdle(): void {
    if (this.idle()) for (const resolve of this.idleWaiters.splice(0)) resolve()
  }

  /** The loader: builds and spools what was handed over, in order, then hands it to the senders. */
  private runLoader(): void {
    if (this.loaderRunning) return
    this.loaderRunning = true
    void (async () => {
      for (let entry = this.toLoad.shift(); entry; entry = this.toLoad.shift()) await this.loadOne(entry)
      this.loaderRunning = false
      this.checkIdle()
    })()
  }

  /** One load at a time, whoever asks: the spool is written in order, one connection at most. */
  private load(entry: OutboxEntry): Promise<Loaded> {
    const loaded = this.loading.then(() => entry.load())
    this.loading = loaded.catch(() => undefined)
    return loaded
  }

  private async loadOne(entry: OutboxEntry): Promise<void> {
    let loaded: Loaded
    try {
      loaded = await this.load(entry)
    } catch (error) {
      this.unloadable(entry, error)
      return
    }
    if (loaded && 'skipped' in loaded) this.skip(entry, loaded.skipped)
    // Nothing to send (a resend's file confirmed meanwhile by another run).
    else if (!loaded) this.confirmedElsewhere(entry)
    else if (this.down) this.notTried(entry, 'the backend was taken for down')
    else if (this.stopping.signal.aborted) this.notTried(entry, 'the run stopped waiting')
    else {
      this.toSend.push({entry, runId: loaded.runId})
      this.pump()
    }
  }

  private pump(): void {
    while (
      this.sending < this.limits.concurrency &&
      this.toSend.length > 0 &&
      !this.down &&
      !this.stopping.signal.aborted
    ) {
      const next = this.toSend.shift()!
      this.sending++
      void this.send(next.entry, next.runId).finally(() => {
        this.sending--
        this.pump()
        this.checkIdle()
      })
    }
  }

  private async send(entry: OutboxEntry, runId: string): Promise<void> {
    let body: string | undefined
    try {
      body = await this.spool.read(runId)
    } catch (error) {
      this.unloadable(entry, error)
      return
    }
    if (body === undefined) {
      this.confirmedElsewhere(entry)
      return
    }
    const delivery = await sendEvent(this.target, body, this.policy, this.stopping.signal)
    this.record(delivery, entry)
    // The spool follows: confirmed events go, maybe-delivered ones are kept apart.
    if (delivery === 'sent') await this.spool.remove(runId).catch(() => undefined)
    else if ('maybeDelivered' in delivery) await this.spool.markMaybeDelivered(runId).catch(() => undefined)
  }

  private record(delivery: Delivery, entry: OutboxEntry): void {
    if (delivery === 'sent') {
      this.counts.sent++
      this.notConfirmedInARow = 0
      this.onSettled?.(entry.key, {outcome: 'sent'})
      return
    }
    if ('stopped' in delivery) {
      this.notTried(entry, delivery.stopped)
      return
    }
    const [outcome, why] =
      'maybeDelivered' in delivery
        ? (['maybe_delivered', delivery.maybeDelivered] as const)
        : (['failed', delivery.failed] as const)
    this.counts[outcome]++
    this.firstFailure ??= `${entry.label}: ${outcome.replace('_', ' ')}: ${why}`
    this.onSettled?.(entry.key, {outcome, why})
    if (++this.notConfirmedInARow >= breakAfter && !this.down) {
      // The backend is taken for down: what waits to be sent stays in the spool, untried.
      this.down = true
      for (const waiting of this.toSend.splice(0)) this.notTried(waiting.entry, 'the backend was taken for down')
    }
  }

  /** An entry beyond the outbox's capacity: spooled (so nothing is lost), counted not tried. */
  private async spoolUntried(entry: OutboxEntry): Promise<void> {
    let loaded: Loaded
    try {
      loaded = await this.load(entry)
    } catch (error) {
      this.unloadable(entry, error)
      return
    }
    if (loaded && 'skipped' in loaded) this.skip(entry, loaded.skipped)
    else this.notTried(entry, 'the outbox was full')
  }

  private notTried(entry: OutboxEntry, why: string): void {
    this.counts.not_tried++
    this.onSettled?.(entry.key, {outcome: 'not_tried', why})
  }

  /** A resend's event whose file another run removed once confirmed: nothing left to send. */
  private confirmedElsewhere(entry: OutboxEntry): void {
    this.counts.sent++
    this.onSettled?.(entry.key, {outcome: 'sent'})
  }

  /** An event the provider would not send: neither spooled nor sent. */
  private skip(entry: OutboxEntry, why: string): void {
    this.skipped++
    this.onSettled?.(entry.key, {outcome: 'skipped', why})
  }

  /** An event that could not be built, spooled or read back (the task instance unreadable, a full disk): failed, said why. */
  private unloadable(entry: OutboxEntry, error: unknown): void {
    const why = `not spooled: ${error instanceof Error ? error.message : String(error)}`
    this.counts.failed++
    this.firstFailure ??= `${entry.label}: failed: ${why}`
    this.onSettled?.(entry.key, {outcome: 'failed', why})
  }
}
