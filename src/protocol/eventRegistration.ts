import {activeOutlets, describeOutlet, type TaskInstanceContext} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import type {OutletEventInput} from '../selection/workItem.js'
import type {LogSubject, AuditLogStore} from '../store/families/audit.js'
import type {
  AuditRow,
  ConsumerDecision,
  InsertedEvent,
  NewAssetEvent,
  RegisteredEvent,
  RegistrationStore,
} from '../store/families/registration.js'
import {downstreamOf, type Downstream} from './downstream.js'
import type {StoreCapabilities} from '../store/types.js'

/** The store families an event registration uses. */
export type EventRegistrationStore = StoreCapabilities & RegistrationStore & AuditLogStore

export interface Registration {
  events: InsertedEvent[]
  consumers: ConsumerDecision[]
  warnings: string[]
  /** Every consumer DAG the events reach, as the scheduler's next step will see it once this commits. */
  downstream: Downstream[]
}

export const emptyRegistration = (): Registration => ({events: [], consumers: [], warnings: [], downstream: []})

/** Events written, with the aliases each went through, before their consumers are queued. */
export interface EmittedEvents {
  events: InsertedEvent[]
  aliasesOfEvent: Map<number, number[]>
  warnings: string[]
  /** The audit row written with them (emitOutletEvents' `audit`). */
  logId: number
  /** With a before-image: the transaction id of the task instance's row version it read. */
  imageXmin: string | null
}

/**
 * An outlet_events entry airlock must not write: an alias the task does not declare, or an asset
 * named by one string that matches no asset or several. Thrown during registration, so the item
 * ends `failed` with this message and nothing written.
 */
export class OutletEventRefused extends Error {}

/**
 * Protocol step 2, first half, as Airflow's success path does it
 * (`TaskInstance.register_asset_changes_in_db`, airflow-core/src/airflow/models/taskinstance.py):
 *
 * - one event per declared outlet that resolves to an ACTIVE asset: an asset by (name, uri), each
 *   `Asset.ref` by name or uri, so an asset declared both ways gets two events, as there (inactive
 *   or unresolved ones are skipped with a warning; the outlets come with the unlocked read). Before
 *   3.3 each carries the extra of the last `outlet_events` entry naming it and the run's partition
 *   key (`asset_event_extras = {key: event["extra"] …}`, `partition_key = ti.dag_run.partition_key`);
 *   from 3.3 (apache/airflow #66782, #67718) each entry is one event per partition key it gives
 *   (`payloads_by_asset`), with the run's key where it gives none, and an outlet no entry names
 *   gets one event with the run's key;
 * - for the emissions through aliases (`outlet_events` entries with `alias`; only aliases the task
 *   declares count), one event per (asset, asset extra, extra), separate from any direct event of
 *   that asset, with the run's partition key, linked to every alias that emitted it; a target
 *   asset that does not exist is created with its `asset` row only (store.ensureAliasAssets) and
 *   linked to its aliases as `AssetManager._add_asset_alias_association` does.
 *
 * The audit row naming the events is written in the statement that inserts them (`audit`, given
 * how many events there are). One statement without aliases, five with, whatever the number of
 * outlets.
 */
export async function emitOutletEvents(
  store: EventRegistrationStore,
  tx: Executor,
  ti: TaskInstanceContext,
  input: {outletEvents: readonly OutletEventInput[]; defaultExtra: string},
  audit: (events: number) => AuditRow,
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
    warnings.push(`asset ${describeOutlet(outlet)} of ${where} is not active: no event (${inactiveOutletRule})`)
  }

  const perEventKeys = store.capabilities.eventPartitionKeys
  refusePartitionKeys(perEventKeys, input.outletEvents, where)
  const {events, aliasEntries} = directEvents(ti, input, perEventKeys, warnings)
  const groups = await aliasEmissions(store, tx, ti, aliasEntries, input.defaultExtra)
  // A declared alias with no asset_alias row yet is created, as Airflow does; without a
  // serialized DAG airlock cannot tell which aliases the task declares, so it creates none.
  const declaredInUse = ti.outletsFrom === 'serialized_dag' ? [...new Set(groups.flatMap((g) => g.aliases))].sort() : []
  const resolved = await store.ensureAliasAssets(
    tx,
    groups.flatMap((g) =>
      g.aliases.map((aliasName) => ({aliasName, assetName: g.name, assetUri: g.uri, assetExtra: g.assetExtra})),
    ),
    declaredInUse,
  )
  const aliasIds = new Map(resolved.map((r) => [`${r.aliasName}\u0000${r.assetName}\u0000${r.assetUri}`, r]))
  const groupEvents = groups.flatMap((g) => {
    const ids = g.aliases.flatMap((alias) => aliasIds.get(`${alias}\u0000${g.name}\u0000${g.uri}`) ?? [])
    if (ids.length === 0) {
      warnings.push(`asset alias ${g.aliases.join(', ')} does not exist: no event for ${g.name} (${g.uri})`)
      return []
    }

    return [
      {assetId: ids[0]!.assetId, extra: g.extra, partitionKey: ti.partitionKey, aliasIds: ids.map((r) => r.aliasId)},
    ]
  })

  const written = [...events, ...groupEvents]
  const {events: inserted, logId, imageXmin} = await store.insertAssetEvents(tx, ti, written, audit(written.length))
  // The rows come back in the order they were inserted (ORDER BY the input's ordinality).
  const aliasesOfEvent = new Map(groupEvents.map((g, index) => [inserted[events.length + index]!.eventId, g.aliasIds]))
  await store.insertAliasEventLinks(
    tx,
    [...aliasesOfEvent].flatMap(([eventId, ids]) => ids.map((aliasId) => ({aliasId, eventId}))),
  )

  return {events: inserted, aliasesOfEvent, warnings, logId, imageXmin}
}

/**
 * What an inactive outlet means in Airflow, for the warning: from 3.0.2 (apache/airflow #50773, in
 * its release notes) a worker fails a task whose outlet is inactive before running it; at success,
 * `register_asset_changes_in_db` (airflow/models/taskinstance.py) raises at its end in 3.0.0–3.0.6
 * (from 3.0.2 the task instance ends FAILED) and logs "Task has inactive assets" and carries on
 * from 3.1.0 (apache/airflow #55714, in 3.1.0 through 3.3.2).
 */
const inactiveOutletRule =
  'a worker would have failed this task before running it; at success Airflow 3.1+ skips it with a warning, as airlock does, and 3.0 fails the task; --strict-outlets refuses instead'

/**
 * Partition keys per event are written from 3.3 only, and never on alias emissions (3.3.1 raises:
 * apache/airflow #69312, backported as #69515; 3.3.0 drops them): a line asking for either is
 * refused whole, nothing written, rather than writing events its release never would.
 */
function refusePartitionKeys(perEvent: boolean, entries: readonly OutletEventInput[], where: string): void {
  const keyed = entries.filter((e) => e.partitionKeys)
  if (keyed.length === 0) return
  if (!perEvent) {
    throw new OutletEventRefused(
      `outlet_events give partition keys for ${where}, which Airflow writes per event from 3.3 only (add_partitions); on this release every event carries the run's partition key; nothing written`,
    )
  }

  const throughAlias = keyed.find((e) => e.alias)
  if (throughAlias) {
    throw new OutletEventRefused(
      `outlet_events attach partition keys to an emission through alias ${throughAlias.alias}: Airflow refuses that (3.3.1+) and alias events carry the run's partition key; nothing written`,
    )
  }
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
  store: EventRegistrationStore,
  tx: Executor,
  ti: TaskInstanceContext,
  entries: ReadonlyArray<OutletEventInput & {alias: string}>,
  defaultExtra: string,
): Promise<Array<{name: string; uri: string; assetExtra: string; extra: string; aliases: string[]}>> {
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
  const groups = new Map<string, {name: string; uri: string; assetExtra: string; extra: string; aliases: string[]}>()
  for (const entry of entries) {
    let target: {name: string; uri: string; extra?: Record<string, unknown>}
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

    // Airflow groups by (asset, json.dumps(dest_asset_extra, sort_keys=True), json.dumps(extra,
    // sort_keys=True)) and writes the event's extra as json.loads of that dump (from 3.1.3,
    // apache/airflow #57352; 3.1.5 added the asset's extra, #58038): keys sorted at every level.
    const extra = sortedJson(entry.extra ?? JSON.parse(defaultExtra))
    const assetExtra = sortedJson(target.extra ?? {})
    const key = JSON.stringify([target.name, target.uri, assetExtra, extra])
    const group = groups.get(key) ?? {name: target.name, uri: target.uri, assetExtra, extra, aliases: []}
    if (!group.aliases.includes(entry.alias)) group.aliases.push(entry.alias)
    groups.set(key, group)
  }

  return [...groups.values()]
}

/** JSON text with object keys sorted at every level, as Python's json.dumps(…, sort_keys=True) orders them. */
export function sortedJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => [k, sortKeys(v)]),
  )
}

/** The consumer DAGs that ended as `kind`, each once, sorted. */
export function consumerDags(consumers: readonly ConsumerDecision[], kind: ConsumerDecision['kind']): string[] {
  return [...new Set(consumers.filter((c) => c.kind === kind).map((c) => c.dagId))].sort()
}

/**
 * Protocol step 2, last: the consumers' queue rows. Last on purpose: their key locks are the
 * contended ones (every completion feeding the same DAG upserts the same keys), so they are held
 * for the shortest time before the task_instance lock and COMMIT.
 *
 * What a release queues depends on the event's partition key (`AssetManager._queue_dagruns`), so
 * the events are queued by key: one statement for the usual single key, one more per other key
 * (3.3 fan-out). From 3.3 a key-less event that partition-aware DAGs listen to is logged as
 * `_queue_partitioned_dags` logs it (missingPartitionKeyRows).
 *
 * The downstream preview (`options.downstream`) is read by the last of those statements, so it
 * costs no round trip of its own: it sees every queue row the item wrote, still before the lock.
 * `options.plan` (`--plan`) runs the same decision on SELECT alone (store.planConsumers): the
 * events are the planned ones, with stand-in ids, and nothing is written.
 */
export async function queueEventConsumers(
  store: EventRegistrationStore,
  tx: Executor,
  ti: TaskInstanceContext,
  emitted: Omit<EmittedEvents, 'logId' | 'imageXmin'>,
  options: {downstream: boolean; plan?: boolean} = {downstream: true},
): Promise<Registration> {
  const {events: inserted, aliasesOfEvent} = emitted
  const warnings = [...emitted.warnings]
  const byKey = new Map<string | null, InsertedEvent[]>()
  for (const event of inserted) byKey.set(event.partitionKey, [...(byKey.get(event.partitionKey) ?? []), event])
  // The downstream preview rides in the last queue statement, after every queue row of the item:
  // the consumers of all its events' assets and aliases.
  const preview = options.downstream
    ? {assetIds: inserted.map((e) => e.assetId), aliasIds: [...new Set([...aliasesOfEvent.values()].flat())]}
    : null
  const consumers: ConsumerDecision[] = []
  let downstream: Downstream[] = []
  for (const [index, [partitionKey, events]] of [...byKey].entries()) {
    // An event emitted through several aliases queues the consumers of each.
    // --plan decides with the same statement on SELECT alone, and writes no log row.
    const queue = options.plan ? store.planConsumers : store.queueConsumers
    const queued = await queue(
      tx,
      events.flatMap((e): RegisteredEvent[] => {
        const aliases = aliasesOfEvent.get(e.eventId) ?? []
        return aliases.length === 0
          ? [{eventId: e.eventId, assetId: e.assetId, aliasId: null}]
          : aliases.map((aliasId) => ({eventId: e.eventId, assetId: e.assetId, aliasId}))
      }),
      partitionKey,
      {dagId: ti.dagId, taskId: ti.taskId},
      index === byKey.size - 1 ? preview : null,
    )
    const decisions = queued.decisions
    consumers.push(...decisions)
    if (queued.downstream) downstream = downstreamOf(queued.downstream)
    warnings.push(...consumerWarnings(decisions, partitionKey))
    if (partitionKey === null && store.capabilities.missingPartitionKeyLog && !options.plan) {
      for (const row of missingPartitionKeyRows(ti, events, aliasesOfEvent, decisions))
        await store.insertLogRow(tx, row.subject, row.event, row.extra)
    }
  }

  return {events: inserted, consumers, warnings, downstream}
}

function consumerWarnings(decisions: readonly ConsumerDecision[], partitionKey: string | null): string[] {
  const dagsOf = (kind: ConsumerDecision['kind']) => consumerDags(decisions, kind).join(', ')
  const warnings: string[] = []
  const mapped = dagsOf('partition_mapper')
  if (mapped) {
    warnings.push(
      `events carry partition key ${partitionKey ?? ''}: Airflow queues ${mapped} through their partition mappers, which airlock cannot run; not queued`,
    )
  }

  const skipped = dagsOf('not_queued_by_airflow')
  if (skipped) {
    warnings.push(
      partitionKey === null
        ? `not queued, as Airflow does not queue a DAG with a partitioned timetable for an event without a partition key: ${skipped}`
        : `not queued, as Airflow does not queue a DAG without a partitioned timetable for an event with partition key ${partitionKey}: ${skipped}`,
    )
  }

  return warnings
}

/**
 * The `log` rows Airflow 3.3 writes for key-less events that partition-aware DAGs listen to, one
 * per event (`AssetManager._queue_partitioned_dags`, airflow-core/src/airflow/assets/manager.py, read
 * in a main copy between 3.3.0 and 3.4.0: `Log(event="missing partition key", extra=msg,
 * task_instance=ti)`, the message an f-string of the listening DAG ids as a Python list, the asset
 * id and the event's source). The listening DAGs are those scheduled on the event's asset, or on
 * an alias it went through, that the release does not queue; Airflow lists them in set order,
 * airlock sorted. `Log(task_instance=ti)` takes the key, map index, try number and logical date
 * from the task instance, and no owner (the API server's task instance has no task).
 */
function missingPartitionKeyRows(
  ti: TaskInstanceContext,
  events: readonly InsertedEvent[],
  aliasesOfEvent: ReadonlyMap<number, number[]>,
  decisions: readonly ConsumerDecision[],
): Array<{subject: LogSubject; event: string; extra: string}> {
  const listening = decisions.filter((d) => d.kind === 'not_queued_by_airflow')
  return events.flatMap((event) => {
    const aliases = aliasesOfEvent.get(event.eventId) ?? []
    const dags = [
      ...new Set(
        listening
          .filter((d) => d.assetId === event.assetId && (d.aliasId === null || aliases.includes(d.aliasId)))
          .map((d) => d.dagId),
      ),
    ].sort()
    if (dags.length === 0) return []
    const list = `[${dags.map((dag) => `'${dag}'`).join(', ')}]`
    return [
      {
        subject: {...ti, owners: null},
        event: 'missing partition key',
        extra:
          `Listening Dags are partition-aware but the run has no partition key (listening_dags=${list}, ` +
          `asset_id=${event.assetId}, run_id=${ti.runId}, dag_id=${ti.dagId}, task_id=${ti.taskId})`,
      },
    ]
  })
}

/**
 * The events of the task's own outlets (not through an alias), per the release's rule for
 * `outlet_events` entries; the alias entries are handed back for aliasEmissions.
 */
function directEvents(
  ti: TaskInstanceContext,
  input: {outletEvents: readonly OutletEventInput[]; defaultExtra: string},
  perEventKeys: boolean,
  warnings: string[],
): {events: NewAssetEvent[]; aliasEntries: Array<OutletEventInput & {alias: string}>} {
  const where = `${ti.dagId}.${ti.taskId}`
  const active = activeOutlets(ti)
  const payloads = new Map<number, Array<{extra: string; partitionKeys: Array<string | null>}>>()
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
    if (!outlet) {
      warnings.push(
        `outlet_events names ${describeTarget(entry.asset)}, which is not an active outlet of ${where}: ignored`,
      )
      continue
    }

    const payload = {
      extra: entry.extra ? JSON.stringify(entry.extra) : input.defaultExtra,
      partitionKeys: entry.partitionKeys ?? [null],
    }
    // Before 3.3 the last entry for an asset gives its extra; from 3.3 every entry is an event.
    payloads.set(outlet.assetId, perEventKeys ? [...(payloads.get(outlet.assetId) ?? []), payload] : [payload])
  }

  const silent = [{extra: input.defaultExtra, partitionKeys: [null]}]
  const events: NewAssetEvent[] = active.flatMap((o) =>
    (payloads.get(o.assetId) ?? silent).flatMap((payload) =>
      payload.partitionKeys.map((key) => ({
        assetId: o.assetId,
        extra: payload.extra,
        partitionKey: key ?? ti.partitionKey,
      })),
    ),
  )
  return {events, aliasEntries}
}
