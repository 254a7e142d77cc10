import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {buildComplete} from './lineage.js'
import {LineageOutbox, sendConcurrency, type LineageDelivery} from './outbox.js'
import type {LineageSettings} from './settings.js'
import {LineageSpool, type SpoolState} from './spool.js'
import type {LineageStore} from '../store/families/lineage.js'

type Enabled = Extract<LineageSettings, {enabled: true}>

/** One COMPLETE event resend took: where it came from, and what became of it. */
export interface ResendItem {
  run_id: string
  /** The event's job (`{dag_id}.{task_id}`). */
  job: string | null
  /** `spool`: a file left by an earlier run; `database`: rebuilt from airlock's audit rows. */
  source: 'spool' | 'database'
  /** Its state in the spool before this resend (a rebuilt event: not delivered). */
  state: SpoolState
  ti_id: string | null
  /**
   * `held_maybe_delivered`: maybe delivered, left in the spool unsent (without
   * --include-maybe-delivered); the others as a run's summary counts them, or `would_send`.
   */
  outcome: 'sent' | 'maybe_delivered' | 'failed' | 'not_tried' | 'would_send' | 'skipped' | 'held_maybe_delivered'
  error?: string
}

export interface ResendReport {
  items: ResendItem[]
  delivery: LineageDelivery | null
  dry_run: boolean
  /** Whether maybe-delivered events were sent too (--include-maybe-delivered). */
  include_maybe_delivered: boolean
}

/**
 * Sends again what the spool holds: every COMPLETE an earlier run did not have confirmed, through
 * the same outbox as a run (its policy, its breaker), each removed once confirmed. A
 * maybe-delivered event (sent whole, no answer) may already be in the backend, where a second copy
 * is stored again: it stays in the spool, unsent, unless `includeMaybeDelivered`. A dry run lists
 * them and sends nothing.
 */
export async function resendSpool(
  settings: Enabled,
  options: {dryRun: boolean; includeMaybeDelivered: boolean},
): Promise<ResendReport> {
  const spool = await LineageSpool.open(settings.delivery.spoolDir)
  const entries: Array<{runId: string; job: string | null; state: SpoolState}> = []
  const held: ResendItem[] = []
  for (const {runId, state} of await spool.entries()) {
    const body = await spool.read(runId)
    if (body === undefined) continue
    if (state === 'maybe_delivered' && !options.includeMaybeDelivered)
      held.push({
        run_id: runId,
        job: jobOf(body),
        source: 'spool',
        state,
        ti_id: null,
        outcome: 'held_maybe_delivered',
      })
    else entries.push({runId, job: jobOf(body), state})
  }
  const report = await deliver(settings, spool, entries, 'spool', options.dryRun)
  return {
    ...report,
    items: [...report.items, ...held].sort((a, b) => (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0)),
    include_maybe_delivered: options.includeMaybeDelivered,
  }
}

/**
 * Rebuilds, from the database, the COMPLETE of every task instance whose current try airlock
 * completed in the window (its own audit row), spools it and sends it: a spool that was lost, or
 * a run whose events never reached it, costs nothing but this. The run id is a hash of the try,
 * so an event the backend already has arrives again under the same run.
 */
export async function resendFromDatabase(
  airflow: Pick<AirflowDatabase<LineageStore>, 'db' | 'store'>,
  settings: Enabled,
  window: {since: Date; until: Date; dagId?: string | undefined},
  options: {dryRun: boolean; airlockVersion: string},
): Promise<ResendReport> {
  const tiIds = await airflow.store.readAirlockCompletions(airflow.db.executor, window)
  const spool = await LineageSpool.open(settings.delivery.spoolDir)
  const entries: Array<{runId: string; job: string | null; tiId: string; state: SpoolState}> = []
  for (const tiId of tiIds) {
    // What the provider would not send (its [openlineage] filters) is not rebuilt either.
    const built = await buildComplete(airflow, tiId, settings, options.airlockVersion)
    if (!built || 'skipped' in built) continue
    const {event} = built
    const runId = (event.run as {runId: string}).runId
    if (!options.dryRun) await spool.put(runId, event)
    entries.push({runId, job: (event.job as {name: string}).name, tiId, state: 'not_delivered'})
  }
  return {...(await deliver(settings, spool, entries, 'database', options.dryRun)), include_maybe_delivered: false}
}

async function deliver(
  settings: Enabled,
  spool: LineageSpool,
  entries: ReadonlyArray<{runId: string; job: string | null; tiId?: string; state: SpoolState}>,
  source: ResendItem['source'],
  dryRun: boolean,
): Promise<Omit<ResendReport, 'include_maybe_delivered'>> {
  const items = new Map<string, ResendItem>(
    entries.map((entry) => [
      entry.runId,
      {
        run_id: entry.runId,
        job: entry.job,
        source,
        state: entry.state,
        ti_id: entry.tiId ?? null,
        outcome: 'would_send',
      },
    ]),
  )
  if (dryRun || entries.length === 0) return {items: [...items.values()], delivery: null, dry_run: dryRun}
  const outbox = new LineageOutbox(
    {url: settings.url, apiKey: settings.apiKey},
    spool,
    settings.delivery.policy,
    {concurrency: sendConcurrency, capacity: entries.length},
    (runId, settled) => {
      const item = items.get(runId)
      if (!item) return
      item.outcome = settled.outcome
      if ('why' in settled && settled.why) item.error = settled.why
    },
  )
  for (const entry of entries) {
    await outbox.enqueue({
      key: entry.runId,
      label: entry.job ?? entry.runId,
      // Already in the spool: the sender reads it from there (undefined when another run removed it).
      load: () => Promise.resolve({runId: entry.runId}),
    })
  }
  const delivery = await outbox.close(settings.delivery.waitMs)
  return {items: [...items.values()], delivery, dry_run: false}
}

function jobOf(body: string): string | null {
  try {
    const name = (JSON.parse(body) as {job?: {name?: unknown}}).job?.name
    return typeof name === 'string' ? name : null
  } catch {
    return null
  }
}
