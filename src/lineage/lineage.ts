import type {ItemResult} from '../protocol/outcomes.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'
import {completeEvent} from './event.js'
import {sendEvent, type LineageOutcome} from './send.js'
import type {LineageSettings} from './settings.js'

/** After this many failures in a row the backend is taken for down: the rest are not tried. */
const breakAfter = 3

/**
 * Finishes a committed item's lineage, after its COMMIT and never inside a transaction: reads
 * what the event is built from, sends it (or, in a dry run, says what it would send), and records
 * the outcome on the item (`lineage`, and `lineage_event` in a dry run). Never throws and never
 * changes the item's outcome: a lineage backend that is down is reported, not a failed completion.
 */
export class LineageSender {
  private failuresInARow = 0

  constructor(
    private readonly airflow: Pick<AirflowDatabase, 'db' | 'store'>,
    private readonly settings: LineageSettings,
    private readonly airlockVersion: string,
    private readonly committedOutcome: string,
  ) {}

  async finish<O extends {outcome: string}>(item: ItemResult<O>): Promise<ItemResult<O>> {
    if (item.result.outcome !== this.committedOutcome || !item.ti) return item
    const outcome = await this.outcomeFor(item.ti.id, item.dryRun)
    const {lineage, event} = outcome
    return {
      ...item,
      report: {...item.report, lineage: describe(lineage), ...(event && item.dryRun ? {lineage_event: event} : {})},
    }
  }

  private async outcomeFor(tiId: string, dryRun: boolean): Promise<{lineage: LineageOutcome; event?: unknown}> {
    if (!this.settings.enabled) return {lineage: 'disabled'}
    const {db, store} = this.airflow
    const facts = await store.readLineageFacts(db.executor, tiId).catch(() => undefined)
    if (!facts) return {lineage: {failed: 'the task instance could not be read back after its commit'}}
    // A dry run rolled back: the end date it would record is now, its outputs are not readable.
    const endMicros = facts.endMicros ?? BigInt(Date.now()) * 1000n
    const event = completeEvent(
      {...facts, endDate: {epochMicros: endMicros}, runInstant: {epochMicros: facts.runMicros}},
      {namespace: this.settings.namespace, airlockVersion: this.airlockVersion},
    )
    if (dryRun) return {lineage: 'would_send', event}
    if (this.failuresInARow >= breakAfter) {
      return {lineage: {failed: `not tried: the last ${breakAfter} events to this backend failed`}}
    }
    const lineage = await sendEvent(this.settings, event)
    this.failuresInARow = lineage === 'sent' ? 0 : this.failuresInARow + 1
    return {lineage, event}
  }
}

const describe = (outcome: LineageOutcome) => (typeof outcome === 'string' ? outcome : `failed (${outcome.failed})`)
