import {activeOutlets, describeOutlet, type TaskInstanceContext} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import type {OutletEventInput} from '../selection/workItem.js'
import type {AirflowStore, ConsumerDecision, InsertedEvent, NewAssetEvent, RegisteredEvent} from '../store/airflowStore.js'

export interface Registration {
  events: InsertedEvent[]
  consumers: ConsumerDecision[]
  warnings: string[]
}

export const emptyRegistration = (): Registration => ({events: [], consumers: [], warnings: []})

/** Events written, with the aliases each went through, before their consumers are queued. */
export interface EmittedEvents {
  events: InsertedEvent[]
  aliasesOfEvent: Map<number, number[]>
  warnings: string[]
}

/**
 * An outlet_events entry airlock must not write: an alias the task does not declare, or an asset
 * named by one string that matches no asset or several. Thrown during registration, so the item
 * ends `failed` with this message and nothing written.
 */
export class OutletEventRefused extends Error {}

/**
 * Protocol step 2, first half, as Airflow's success path does it
 * (`TaskInstance.register_asset_changes_in_db`, airflow-core/src/airflow/models/taskinstance.py,
 * Airflow 3.x as read at main; not yet checked tag by tag):
 *
 * - one event per declared outlet that resolves to an ACTIVE asset: an asset by (name, uri), each
 *   `Asset.ref` by name or uri, so an asset declared both ways gets two events, as there (inactive
 *   or unresolved ones are skipped with a warning; the outlets come with the unlocked read);
 * - for the emissions through aliases (`outlet_events` entries with `alias`; only aliases the task
 *   declares count), one event per (asset, extra), separate from any direct event of that asset,
 *   linked to every alias that emitted that (asset, extra); a target asset that does not exist is
 *   created with its `asset` row only, as `AssetModel(name=…, uri=…)` there, and linked to its
 *   aliases as `AssetManager._add_asset_alias_association` does.
 *
 * One statement without aliases, five with, whatever the number of outlets.
 */
export async function emitOutletEvents(
  store: AirflowStore,
  tx: Executor,
  ti: TaskInstanceContext,
  input: {outletEvents: readonly OutletEventInput[]; defaultExtra: string},
): Promise<EmittedEvents> {
  const warnings: string[] = []
  const outlets = ti.outlets
  const where = `${ti.dagId}.${ti.taskId}`
  if (ti.outletsFrom === 'task_outlet_asset_reference') {
    warnings.push(
      `${where}: no serialized DAG for its DAG version (${ti.dagVersionId ?? 'none'}); its outlets were read from task_outlet_asset_reference, which lists only concrete assets (no Asset.ref, no aliases)`,
    )
  }

  for (const outlet of outlets.filter((o) => !o.active || o.assetId === null)) {
    warnings.push(
      `asset ${describeOutlet(outlet)} of ${where} is not active: no event (Airflow would fail the task instance; --strict-outlets refuses it instead)`,
    )
  }

  const active = activeOutlets(ti)
  const extraByAsset = new Map<number, string>()
  const aliasEntries: Array<OutletEventInput & {alias: string}> = []
  for (const entry of input.outletEvents) {
    if (entry.alias) {
      aliasEntries.push({...entry, alias: entry.alias})
      continue
    }

    const named = typeof entry.asset === 'string' ? entry.asset : undefined
    const matches = (o: {name: string; uri: string}) =>
      named === undefined
        ? typeof entry.asset !== 'string' && o.name === entry.asset.name && o.uri === entry.asset.uri
        : o.name === named || o.uri === named
    const outlet = active.find(matches)
    if (!outlet) warnings.push(`outlet_events names ${describeTarget(entry.asset)}, which is not an active outlet of ${where}: ignored`)
    else if (entry.extra) extraByAsset.set(outlet.assetId, JSON.stringify(entry.extra))
  }

  const events: NewAssetEvent[] = active.map((o) => ({assetId: o.assetId, extra: extraByAsset.get(o.assetId) ?? input.defaultExtra}))
  const groups = await aliasEmissions(store, tx, ti, aliasEntries, input.defaultExtra)
  // A declared alias with no asset_alias row yet is created, as Airflow does; without a
  // serialized DAG airlock cannot tell which aliases the task declares, so it creates none.
  const declaredInUse = ti.outletsFrom === 'serialized_dag' ? [...new Set(groups.flatMap((g) => g.aliases))].sort() : []
  const resolved = await store.ensureAliasAssets(
    tx,
    groups.flatMap((g) => g.aliases.map((aliasName) => ({aliasName, assetName: g.name, assetUri: g.uri}))),
    declaredInUse,
  )
  const aliasIds = new Map(resolved.map((r) => [`${r.aliasName}\u0000${r.assetName}\u0000${r.assetUri}`, r]))
  const groupEvents = groups.flatMap((g) => {
    const ids = g.aliases.flatMap((alias) => aliasIds.get(`${alias}\u0000${g.name}\u0000${g.uri}`) ?? [])
    if (ids.length === 0) {
      warnings.push(`asset alias ${g.aliases.join(', ')} does not exist: no event for ${g.name} (${g.uri})`)
      return []
    }

    return [{assetId: ids[0]!.assetId, extra: g.extra, aliasIds: ids.map((r) => r.aliasId)}]
  })

  const inserted = await store.insertAssetEvents(tx, ti, [...events, ...groupEvents], ti.partitionKey)
  // RETURNING gives the rows in the order they were inserted (ORDER BY the input's ordinality).
  const aliasesOfEvent = new Map(groupEvents.map((g, index) => [inserted[events.length + index]!.eventId, g.aliasIds]))
  await store.insertAliasEventLinks(
    tx,
    [...aliasesOfEvent].flatMap(([eventId, ids]) => ids.map((aliasId) => ({aliasId, eventId}))),
  )

  return {events: inserted, aliasesOfEvent, warnings}
}

/** An alias emission's target, as the entry names it. */
function describeTarget(asset: OutletEventInput['asset']): string {
  return typeof asset === 'string' ? asset : `${asset.name} (${asset.uri})`
}

/**
 * The alias emissions grouped as Airflow groups them: by (asset name, asset uri, extra), with the
 * aliases that emitted each. Only aliases the task declares count; a target named by one string
 * must match exactly one existing asset (its name or its uri): a name and a uri are never guessed.
 */
async function aliasEmissions(
  store: AirflowStore,
  tx: Executor,
  ti: TaskInstanceContext,
  entries: ReadonlyArray<OutletEventInput & {alias: string}>,
  defaultExtra: string,
): Promise<Array<{name: string; uri: string; extra: string; aliases: string[]}>> {
  if (entries.length === 0) return []
  const where = `${ti.dagId}.${ti.taskId}`
  if (ti.outletsFrom === 'serialized_dag') {
    const undeclared = [...new Set(entries.map((e) => e.alias))].filter((alias) => !ti.declaredAliases.includes(alias))
    if (undeclared.length > 0) {
      throw new OutletEventRefused(
        `outlet_events emit through ${undeclared.join(', ')}, which ${where} does not declare as an outlet (declared aliases: ${ti.declaredAliases.join(', ') || 'none'}); nothing written`,
      )
    }
  }

  const strings = [...new Set(entries.flatMap((e) => (typeof e.asset === 'string' ? [e.asset] : [])))]
  const candidates = await store.findAssetsByNameOrUri(tx, strings)
  const groups = new Map<string, {name: string; uri: string; extra: string; aliases: string[]}>()
  for (const entry of entries) {
    let target: {name: string; uri: string}
    if (typeof entry.asset === 'string') {
      const found = candidates.get(entry.asset) ?? []
      if (found.length !== 1) {
        throw new OutletEventRefused(
          `outlet_events: "${entry.asset}" (through alias ${entry.alias}) ${found.length === 0 ? 'matches no asset' : `matches ${found.length} assets`}; name the target as {"name": …, "uri": …}; nothing written`,
        )
      }

      target = found[0]!
    } else {
      target = entry.asset
    }

    const extra = entry.extra ? canonicalExtra(entry.extra) : defaultExtra
    const key = JSON.stringify([target.name, target.uri, extra])
    const group = groups.get(key) ?? {name: target.name, uri: target.uri, extra, aliases: []}
    if (!group.aliases.includes(entry.alias)) group.aliases.push(entry.alias)
    groups.set(key, group)
  }

  return [...groups.values()]
}

/** The extra's JSON with its top-level keys sorted: Airflow groups alias emissions by the extra's items, whatever their order. */
function canonicalExtra(extra: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(extra).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
}

/** The consumer DAGs that ended as `kind`, each once, sorted. */
export function consumerDags(consumers: readonly ConsumerDecision[], kind: ConsumerDecision['kind']): string[] {
  return [...new Set(consumers.filter((c) => c.kind === kind).map((c) => c.dagId))].sort()
}

/**
 * Protocol step 2, last: the consumers' queue rows. Last on purpose: their key locks are the
 * contended ones (every completion feeding the same DAG upserts the same keys), so they are held
 * for the shortest time before the task_instance lock and COMMIT.
 */
export async function queueEventConsumers(store: AirflowStore, tx: Executor, ti: TaskInstanceContext, emitted: EmittedEvents): Promise<Registration> {
  const {events: inserted, aliasesOfEvent} = emitted
  const warnings = [...emitted.warnings]
  // An event emitted through several aliases queues the consumers of each.
  const consumers = await store.queueConsumers(
    tx,
    inserted.flatMap((e): RegisteredEvent[] => {
      const aliases = aliasesOfEvent.get(e.eventId) ?? []
      return aliases.length === 0
        ? [{eventId: e.eventId, assetId: e.assetId, aliasId: null}]
        : aliases.map((aliasId) => ({eventId: e.eventId, assetId: e.assetId, aliasId}))
    }),
    ti.partitionKey,
    {dagId: ti.dagId, taskId: ti.taskId},
  )
  const dagsOf = (kind: ConsumerDecision['kind']) => consumerDags(consumers, kind).join(', ')
  const mapped = dagsOf('partition_mapper')
  if (mapped) {
    warnings.push(
      `events carry partition key ${ti.partitionKey ?? ''}: Airflow queues ${mapped} through their partition mappers, which airlock cannot run; not queued`,
    )
  }

  const skipped = dagsOf('not_queued_by_airflow')
  if (skipped) {
    warnings.push(
      ti.partitionKey === null
        ? `not queued, as Airflow does not queue a DAG with a partitioned timetable for an event without a partition key: ${skipped}`
        : `not queued, as Airflow does not queue a DAG without a partitioned timetable for an event with partition key ${ti.partitionKey}: ${skipped}`,
    )
  }

  return {events: inserted, consumers, warnings}
}
