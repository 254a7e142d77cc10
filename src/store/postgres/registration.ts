import type {Capabilities} from '../../airflow/schema.js'
import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {AliasEmission, ConsumerDecision, InsertedEvent, NewAssetEvent, RegisteredEvent, ResolvedAliasEmission} from '../airflowStore.js'

/**
 * One multi-row INSERT … RETURNING for all of a task instance's events, whatever their number:
 * the arrays travel as two parameters and unnest server-side. Mirrors the asset_event row of
 * `AssetManager.register_asset_change` (airflow-core/src/airflow/assets/manager.py, Airflow 3.0): asset_id,
 * extra, the source task instance's key, and the timestamp, taken from the clock at insert time
 * (UTC, never backdated: before 3.4 the scheduler ignores events older than the last
 * asset-triggered run). From 3.2 the event carries the run's partition_key.
 */
export function insertAssetEvents(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey
  const insert = prepared(
    'insert_events',
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partition ? ', partition_key' : ''})
     select e.asset_id, e.extra::json, $1, $2, $3, $4::int, now.ts${partition ? ', $7::varchar' : ''}
       from unnest($5::int[], $6::text[]) with ordinality as e(asset_id, extra, n)
      cross join (select clock_timestamp() as ts) as now
      order by e.n
     returning id, asset_id`,
  )
  return async (ex: Executor, source: TaskInstanceKey, events: readonly NewAssetEvent[], partitionKey: string | null): Promise<InsertedEvent[]> => {
    if (events.length === 0) return []
    const values: unknown[] = [source.dagId, source.runId, source.taskId, source.mapIndex, events.map((e) => e.assetId), events.map((e) => e.extra)]
    if (partition) values.push(partitionKey)
    const rows = await ex.query<{id: number; asset_id: number}>(insert(values))
    return rows.map((row) => ({eventId: row.id, assetId: row.asset_id}))
  }
}

/** Existing assets whose name or uri is one of the given strings, by string. */
export function findAssetsByNameOrUri() {
  const find = prepared(
    'assets_by_name_or_uri',
    `select s.value, a.name, a.uri
       from unnest($1::text[]) as s(value)
       join asset a on a.name = s.value
     union
     select s.value, a.name, a.uri
       from unnest($1::text[]) as s(value)
       join asset a on a.uri = s.value
     order by 1, 2, 3`,
  )
  return async (ex: Executor, strings: readonly string[]): Promise<Map<string, Array<{name: string; uri: string}>>> => {
    const found = new Map<string, Array<{name: string; uri: string}>>()
    if (strings.length === 0) return found
    for (const row of await ex.query<{value: string; name: string; uri: string}>(find([[...strings]]))) {
      found.set(row.value, [...(found.get(row.value) ?? []), {name: row.name, uri: row.uri}])
    }

    return found
  }
}

/**
 * Events emitted through an asset alias name their asset at run time, so the asset may not exist
 * yet. As `TaskInstance.register_asset_changes_in_db` does (airflow-core/src/airflow/models/
 * taskinstance.py, Airflow 3.x as read at main: `session.add(AssetModel(name=…, uri=…))` when `register_asset_change` finds no
 * asset), a missing asset gets its `asset` row only: `group` '' (the column's default) and no
 * `asset_active` row, which only the DAG processor writes. It is linked to the alias
 * (asset_alias_asset), as `AssetManager._add_asset_alias_association` does. Two statements
 * whatever the number of emissions; emissions whose alias does not exist are not returned.
 */
export function ensureAliasAssets() {
  const input = 'unnest($1::text[], $2::text[], $3::text[]) as i(alias_name, asset_name, asset_uri)'
  const createAssets = prepared(
    'alias_create_assets',
    `insert into asset (name, uri, "group", extra, created_at, updated_at)
     select wanted.asset_name, wanted.asset_uri, '', '{}'::json, clock_timestamp(), clock_timestamp()
       from (select distinct i.asset_name, i.asset_uri from ${input} join asset_alias al on al.name = i.alias_name) as wanted
      order by 1, 2
     on conflict (name, uri) do nothing`,
  )
  const link = prepared(
    'alias_link_assets',
    `with resolved as (
       select al.id as alias_id, i.alias_name, a.id as asset_id, i.asset_name, i.asset_uri
         from ${input}
         join asset_alias al on al.name = i.alias_name
         join asset a on a.name = i.asset_name and a.uri = i.asset_uri
     ), linked as (
       insert into asset_alias_asset (alias_id, asset_id)
       select distinct alias_id, asset_id from resolved order by 1, 2
       on conflict do nothing
     )
     select * from resolved`,
  )
  return async (ex: Executor, emissions: readonly AliasEmission[]): Promise<ResolvedAliasEmission[]> => {
    if (emissions.length === 0) return []
    const arrays = [emissions.map((e) => e.aliasName), emissions.map((e) => e.assetName), emissions.map((e) => e.assetUri)]
    await ex.query(createAssets(arrays))
    const rows = await ex.query<{alias_id: number; alias_name: string; asset_id: number; asset_name: string; asset_uri: string}>(link(arrays))
    return rows.map((row) => ({
      aliasId: row.alias_id,
      aliasName: row.alias_name,
      assetId: row.asset_id,
      assetName: row.asset_name,
      assetUri: row.asset_uri,
    }))
  }
}

/** asset_alias_asset_event rows: which alias each event was emitted through (one statement). */
export function insertAliasEventLinks() {
  const insert = prepared(
    'alias_event_links',
    `insert into asset_alias_asset_event (alias_id, event_id)
     select * from unnest($1::int[], $2::int[]) as l(alias_id, event_id) order by 1, 2
     on conflict do nothing`,
  )
  return async (ex: Executor, links: ReadonlyArray<{aliasId: number; eventId: number}>): Promise<void> => {
    if (links.length === 0) return
    await ex.query(insert([links.map((l) => l.aliasId), links.map((l) => l.eventId)]))
  }
}

/**
 * Finds the DAGs scheduled on the events' assets through all four reference tables (by asset id,
 * alias, name, uri), minus paused DAGs and DAGs whose file is gone (is_stale), as
 * `AssetManager._queue_dagruns` (airflow-core/src/airflow/assets/manager.py, Airflow 3.0) selects them, and
 * queues them in asset_dag_run_queue, in one statement.
 *
 * Rows are inserted in key order: unsorted multi-row upserts from concurrent completions take
 * the key locks in different orders and deadlock. Before 3.4 the key is (asset_id,
 * target_dag_id); a row already queued keeps the newest created_at here, where 3.0's
 * `AssetManager._postgres_queue_dagruns` (INSERT … ON CONFLICT DO NOTHING) keeps the first, a
 * known departure listed in docs/airflow-versions.md. From 3.4 each event gets its own row, keyed
 * (target_dag_id, asset_event_id). The text is chosen once per capability set.
 *
 * Not queued, and returned so the caller can warn: consumers with a partitioned timetable (their
 * runs come from Airflow's partition mappers, which run only inside Airflow) and every consumer
 * of an event that carries a partition key.
 */
export function queueConsumers(
  capabilities: Pick<Capabilities, 'queueShape' | 'partitionedTimetables' | 'queueConflict' | 'referenceConsumersUnfiltered'>,
) {
  const partitioned = capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  const onConflict =
    capabilities.queueConflict === 'keep_first'
      ? 'on conflict (asset_id, target_dag_id) do nothing'
      : 'on conflict (asset_id, target_dag_id) do update set created_at = greatest(adrq.created_at, excluded.created_at)'
  const insert =
    capabilities.queueShape === 'per_event'
      ? `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at, asset_event_id)
       select asset_id, dag_id, clock_timestamp(), event_id
         from (select distinct event_id, asset_id, dag_id from consumer where queue) as q
        order by dag_id, event_id
       returning asset_id, target_dag_id`
      : `insert into asset_dag_run_queue as adrq (asset_id, target_dag_id, created_at)
       select asset_id, dag_id, clock_timestamp()
         from (select distinct asset_id, dag_id from consumer where queue) as q
        order by asset_id, dag_id
       ${onConflict}
       returning asset_id, target_dag_id`
  // Which consumers a paused or stale DAG is skipped for: id and alias references always; name
  // and uri references from 3.1 (3.0 selects those DAGs unfiltered).
  const skipped = capabilities.referenceConsumersUnfiltered
    ? `reference.kind in ('id', 'alias') and (coalesce(d.is_paused, false) or coalesce(d.is_stale, false))`
    : `coalesce(d.is_paused, false) or coalesce(d.is_stale, false)`
  const queue = prepared(
    `queue_${capabilities.queueShape}_${capabilities.queueConflict}_${capabilities.referenceConsumersUnfiltered ? 'all_refs' : 'active_refs'}`,
    `with ev as (
       select * from unnest($1::int[], $2::int[], $3::int[]) as e(event_id, asset_id, alias_id)
     ), reference as (
       select ev.event_id, ev.asset_id, r.dag_id, 'id' as kind from ev join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
       union
       select ev.event_id, ev.asset_id, r.dag_id, 'alias' from ev join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
       union
       select ev.event_id, ev.asset_id, r.dag_id, 'name' from ev join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
       union
       select ev.event_id, ev.asset_id, r.dag_id, 'uri' from ev join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
     ), consumer as (
       select distinct reference.event_id, reference.asset_id, reference.dag_id, ${partitioned} as partitioned,
              ($4::boolean and not ${partitioned}) as queue
         from reference
         join dag d on d.dag_id = reference.dag_id
        where not (${skipped})
     ), queued as (
       ${insert}
     )
     select 'queued' as kind, asset_id, target_dag_id as dag_id from queued
     union all
     select distinct case when partitioned then 'partitioned_consumer' else 'partitioned_event' end, asset_id, dag_id
       from consumer where not queue
     order by 1, 2, 3`,
  )
  return async (ex: Executor, events: readonly RegisteredEvent[], eventPartitionKey: string | null): Promise<ConsumerDecision[]> => {
    if (events.length === 0) return []
    const rows = await ex.query<{kind: ConsumerDecision['kind']; asset_id: number; dag_id: string}>(
      queue([events.map((e) => e.eventId), events.map((e) => e.assetId), events.map((e) => e.aliasId), eventPartitionKey === null]),
    )
    return rows.map((row) => ({kind: row.kind, assetId: row.asset_id, dagId: row.dag_id}))
  }
}
