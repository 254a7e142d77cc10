import {activeOutlets, describeOutlet, type TaskInstanceContext} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import type {OutletEventInput} from '../selection/workItem.js'
import type {AirflowStore, ConsumerDecision, InsertedEvent, NewAssetEvent} from '../store/airflowStore.js'

export interface Registration {
  events: InsertedEvent[]
  consumers: ConsumerDecision[]
  warnings: string[]
}

export const emptyRegistration = (): Registration => ({events: [], consumers: [], warnings: []})

/** Events written, with the alias each went through, before their consumers are queued. */
export interface EmittedEvents {
  events: InsertedEvent[]
  aliasOfEvent: Map<number, number>
  warnings: string[]
}

/**
 * Protocol step 2, first half, as Airflow's success path does it
 * (`TaskInstance.register_asset_changes_in_db`, airflow-core/src/airflow/models/taskinstance.py):
 * one event per declared outlet that resolves to an ACTIVE asset, an asset by (name, uri) and
 * each `Asset.ref` by name or uri, so an asset declared both ways gets two events, as there
 * (inactive or unresolved ones skipped, with a warning; the outlets come with the unlocked read),
 * and events through aliases with their link rows. One statement without aliases, five with,
 * whatever the number of outlets.
 */
export async function emitOutletEvents(
  store: AirflowStore,
  tx: Executor,
  ti: TaskInstanceContext,
  input: {outletEvents: readonly OutletEventInput[]; defaultExtra: string},
): Promise<EmittedEvents> {
  const warnings: string[] = []
  const outlets = ti.outlets
  if (ti.outletsFrom === 'task_outlet_asset_reference') {
    warnings.push(
      `${ti.dagId}.${ti.taskId}: no serialized DAG for its DAG version (${ti.dagVersionId ?? 'none'}); its outlets were read from task_outlet_asset_reference, which lists only concrete assets (no Asset.ref, no aliases)`,
    )
  }

  for (const outlet of outlets.filter((o) => !o.active || o.assetId === null)) {
    warnings.push(
      `asset ${describeOutlet(outlet)} of ${ti.dagId}.${ti.taskId} is not active: no event (Airflow would fail the task instance; --strict-outlets refuses it instead)`,
    )
  }

  const active = activeOutlets(ti)
  const extraByAsset = new Map<number, string>()
  const aliasEntries: OutletEventInput[] = []
  for (const entry of input.outletEvents) {
    if (entry.alias) {
      aliasEntries.push(entry)
      continue
    }

    const outlet =
      active.find((o) => o.name === entry.asset || o.uri === entry.asset) ?? outlets.find((o) => o.name === entry.asset || o.uri === entry.asset)
    if (!outlet?.assetId) warnings.push(`outlet_events names ${entry.asset}, which is not an outlet of ${ti.dagId}.${ti.taskId}: ignored`)
    else if (entry.extra) extraByAsset.set(outlet.assetId, JSON.stringify(entry.extra))
  }

  const aliased = await store.ensureAliasAssets(
    tx,
    aliasEntries.map((entry) => {
      const known = outlets.find((o) => o.name === entry.asset || o.uri === entry.asset)
      return {aliasName: entry.alias!, assetName: known?.name ?? entry.asset, assetUri: known?.uri ?? entry.asset}
    }),
  )
  for (const entry of aliasEntries) {
    if (!aliased.some((a) => a.aliasName === entry.alias)) warnings.push(`asset alias ${entry.alias} does not exist: no event for ${entry.asset}`)
  }

  const aliasExtra = new Map(aliasEntries.filter((e) => e.extra).map((e) => [`${e.alias}\u0000${e.asset}`, JSON.stringify(e.extra)]))
  const events: NewAssetEvent[] = active.map((o) => ({assetId: o.assetId, extra: extraByAsset.get(o.assetId) ?? input.defaultExtra}))
  for (const emission of aliased) {
    if (events.some((e) => e.assetId === emission.assetId)) continue
    const extra =
      aliasExtra.get(`${emission.aliasName}\u0000${emission.assetName}`) ?? aliasExtra.get(`${emission.aliasName}\u0000${emission.assetUri}`)
    events.push({assetId: emission.assetId, extra: extra ?? input.defaultExtra})
  }

  const inserted = await store.insertAssetEvents(tx, ti, events, ti.partitionKey)
  const eventByAsset = new Map(inserted.map((e) => [e.assetId, e.eventId]))
  const links = aliased.flatMap((a) => {
    const eventId = eventByAsset.get(a.assetId)
    return eventId === undefined ? [] : [{aliasId: a.aliasId, eventId}]
  })
  await store.insertAliasEventLinks(tx, links)

  return {events: inserted, aliasOfEvent: new Map(links.map((l) => [l.eventId, l.aliasId])), warnings}
}

/**
 * Protocol step 2, last: the consumers' queue rows. Last on purpose: their key locks are the
 * contended ones (every completion feeding the same DAG upserts the same keys), so they are held
 * for the shortest time before the task_instance lock and COMMIT.
 */
export async function queueEventConsumers(store: AirflowStore, tx: Executor, ti: TaskInstanceContext, emitted: EmittedEvents): Promise<Registration> {
  const {events: inserted, aliasOfEvent} = emitted
  const warnings = [...emitted.warnings]
  const consumers = await store.queueConsumers(
    tx,
    inserted.map((e) => ({eventId: e.eventId, assetId: e.assetId, aliasId: aliasOfEvent.get(e.eventId) ?? null})),
    ti.partitionKey,
  )
  const unqueued = consumers.filter((c) => c.kind !== 'queued')
  if (unqueued.length > 0) {
    const dags = [...new Set(unqueued.map((c) => c.dagId))].sort().join(', ')
    warnings.push(
      ti.partitionKey === null
        ? `consumers with a partitioned timetable need Airflow's partition mappers and were not queued: ${dags}`
        : `events carry partition key ${ti.partitionKey}: Airflow queues their consumers through its partition mappers, which airlock cannot run; not queued: ${dags}`,
    )
  }

  return {events: inserted, consumers, warnings}
}
