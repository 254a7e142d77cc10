import {formatKey, type TaskInstanceKey} from '../airflow/taskInstance.js'
import type {ItemResult} from '../protocol/outcomes.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {completeEvent} from './event.js'
import {LineageOutbox, type LineageDelivery} from './outbox.js'
import type {LineageRow, LineageStore} from '../store/families/lineage.js'
import {resolveTaskEmission, type TaskEmission} from './emissionPolicy.js'
import type {LineageFilters, LineageSettings} from './settings.js'
import {LineageSpool} from './spool.js'

/** What an item's `lineage` says: queued to be sent, left in the spool, off, (dry run) what it would send, or skipped as the provider skips it. */
export type LineageItemOutcome = 'queued' | 'spooled' | 'disabled' | 'would_send' | {failed: string} | {skipped: string}

/**
 * Finishes a committed item's lineage, after its COMMIT and never inside a transaction: reads
 * what the event is built from, writes it to the spool and hands it to the outbox, which sends it
 * while the batch goes on (in a dry run: says what it would send). Never throws and never
 * changes the item's outcome: a lineage backend that is slow or down is reported, not a failed
 * completion, and nothing it did not confirm is lost (`airlock lineage resend`).
 */
export class LineageSender {
  private outbox: Promise<LineageOutbox> | undefined

  constructor(
    private readonly airflow: Pick<AirflowDatabase<LineageStore>, 'db' | 'store'>,
    private readonly settings: LineageSettings,
    private readonly airlockVersion: string,
    private readonly committedOutcome: string,
  ) {}

  async finish<O extends {outcome: string}>(item: ItemResult<O>): Promise<ItemResult<O>> {
    if (item.result.outcome !== this.committedOutcome || !item.ti) return item
    const {lineage, event} = await this.outcomeFor(item.ti, item.dryRun)
    return {
      ...item,
      report: {...item.report, lineage: describe(lineage), ...(event && item.dryRun ? {lineage_event: event} : {})},
    }
  }

  /**
   * Stops taking events and waits, up to the settings' wait, for the ones queued: what the
   * backend confirmed, and what stays in the spool. Undefined when nothing was handed over.
   */
  async close(): Promise<LineageDelivery | undefined> {
    if (!this.outbox || !this.settings.enabled) return undefined
    // A spool that could not be opened mid-run (checked before the run, removed since): each item
    // already says so (failed, not spooled), and there is no outbox to wait for.
    const outbox = await this.outbox.catch(() => undefined)
    return outbox?.close(this.settings.delivery.waitMs)
  }

  private async outcomeFor(
    ti: TaskInstanceKey & {id: string},
    dryRun: boolean,
  ): Promise<{lineage: LineageItemOutcome; event?: unknown}> {
    if (!this.settings.enabled) return {lineage: 'disabled'}
    if (dryRun) {
      const built = await buildComplete(this.airflow, ti.id, this.settings, this.airlockVersion)
      if (!built) return {lineage: {failed: unreadable}}
      return 'skipped' in built ? {lineage: built} : {lineage: 'would_send', event: built.event}
    }
    let outbox: LineageOutbox
    try {
      outbox = await this.openOutbox()
    } catch (error) {
      // The spool cannot be made (a directory it may not write): said per item, and the event can
      // be rebuilt from the database (airlock lineage resend --since …).
      return {lineage: {failed: `not spooled: ${error instanceof Error ? error.message : String(error)}`}}
    }
    // Built, spooled and sent by the outbox, off this item's path.
    const settings = this.settings
    const lineage = await outbox.enqueue({
      key: ti.id,
      label: formatKey(ti),
      load: async () => {
        const built = await buildComplete(this.airflow, ti.id, settings, this.airlockVersion)
        if (!built) throw new Error(unreadable)
        if ('skipped' in built) return built
        const runId = (built.event.run as {runId: string}).runId
        await outbox.spool.put(runId, built.event)
        return {runId}
      },
    })
    return {lineage}
  }

  private openOutbox(): Promise<LineageOutbox> {
    if (!this.settings.enabled) throw new Error('lineage is off')
    const {url, apiKey, delivery} = this.settings
    this.outbox ??= LineageSpool.open(delivery.spoolDir).then(
      (spool) => new LineageOutbox({url, apiKey}, spool, delivery.policy),
    )
    return this.outbox
  }
}

/**
 * The COMPLETE for a task instance's current try, from the database, or why the provider would
 * send none; undefined when it cannot be read. A dry run rolled back: the end date it would
 * record is now (its outputs, rolled back too, cannot be read).
 */
export async function buildComplete(
  airflow: Pick<AirflowDatabase<LineageStore>, 'db' | 'store'>,
  tiId: string,
  settings: {namespace: string; filters: LineageFilters},
  airlockVersion: string,
): Promise<{event: Record<string, unknown>} | {skipped: string} | undefined> {
  const {db, store} = airflow
  const {namespace} = settings
  const facts = await store.readLineageFacts(db.executor, tiId).catch(() => undefined)
  if (!facts) return undefined
  const emission = emissionByProvider(facts, settings.filters)
  if (!emission.emit) return {skipped: emission.why ?? 'the provider emits no event for this task'}
  const endMicros = facts.endMicros ?? BigInt(Date.now()) * 1000n
  const event = completeEvent(
    {
      ...facts,
      // extract_operator_metadata false: the listener skips the extractor manager, so the
      // worker's COMPLETE carries no outputs (plugins/listener.py `_on_task_instance_success`).
      outputs: emission.extractOperatorMetadata ? facts.outputs : [],
      endDate: {epochMicros: endMicros},
      runInstant: {epochMicros: facts.runMicros},
    },
    {namespace, airlockVersion},
  )
  return {event}
}

/** A batch's lineage after its last item: the outbox closed, and whether the run must have had it all confirmed. */
export async function lineageReport(
  sender: LineageSender | undefined,
  settings: LineageSettings | undefined,
): Promise<{delivery: LineageDelivery; required: boolean} | undefined> {
  const delivery = await sender?.close()
  return delivery && settings?.enabled ? {delivery, required: settings.delivery.required} : undefined
}

/**
 * What the provider's listener decides for this task's COMPLETE (plugins/listener.py
 * `_on_task_instance_success` → utils/emission_policy.py `resolve_task_emission_policy`, 2.19.0+):
 * whether it is sent, and whether operator metadata (the outputs) is extracted. The task is read
 * from the serialized DAG of the try's version: its operator class (`_task_module` +
 * `task_type`), its `_selective_enable_ol` param and its `_openlineage_emission_policy` param.
 * Without a serialized DAG only the rules that need neither (dag, dag+task and global ones,
 * `selective_enable`) can apply.
 */
export function emissionByProvider(
  facts: Pick<LineageRow, 'dagId' | 'taskId' | 'declared'>,
  filters: LineageFilters,
): TaskEmission {
  const {declared} = facts
  return resolveTaskEmission(
    {
      dagId: facts.dagId,
      taskId: facts.taskId,
      operatorClass: declared?.operatorClass ?? null,
      selectiveEnable: declared?.selectiveEnable ?? null,
      authoring: declared?.emissionPolicyFlags ?? null,
    },
    filters,
  )
}

const unreadable = 'the task instance could not be read back after its commit'

const describe = (outcome: LineageItemOutcome) =>
  typeof outcome === 'string'
    ? outcome
    : 'skipped' in outcome
      ? `skipped (${outcome.skipped})`
      : `failed (${outcome.failed})`
