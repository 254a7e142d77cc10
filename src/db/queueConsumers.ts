import type {Capabilities} from '../airflow/schema.js'
import {prepared, type DriverConnection} from './driverConnection.js'

export interface RegisteredEvent {
  eventId: number
  assetId: number
  /** The alias the event was emitted through, if any: its consumers are queued too. */
  aliasId: number | null
}

export interface ConsumerDecision {
  kind: 'queued' | 'partitioned_consumer' | 'partitioned_event'
  assetId: number
  dagId: string
}

/**
 * Finds the DAGs scheduled on the events' assets through all four reference tables (by asset id,
 * alias, name, uri), minus paused DAGs and DAGs whose file is gone (is_stale, as Airflow skips
 * them), and queues them in asset_dag_run_queue, in one statement.
 *
 * Rows are inserted in key order: unsorted multi-row upserts from concurrent completions take the
 * key locks in different orders and deadlock (../shared/airflow/README.md). Before 3.4 the key is
 * (asset_id, target_dag_id) and a row already queued keeps the newest created_at; from 3.4 each
 * event gets its own row, keyed (target_dag_id, asset_event_id).
 *
 * Not queued, and returned so the caller can warn: consumers with a partitioned timetable (their
 * runs come from Airflow's partition mappers, which run only inside Airflow) and every consumer of
 * an event that carries a partition key.
 */
export async function queueConsumers(
  conn: DriverConnection,
  events: readonly RegisteredEvent[],
  options: {capabilities: Pick<Capabilities, 'queueShape' | 'partitionedTimetables'>; eventPartitionKey: string | null},
): Promise<ConsumerDecision[]> {
  if (events.length === 0) return []
  const perEvent = options.capabilities.queueShape === 'per_event'
  const partitioned = options.capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  const insert = perEvent
    ? `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at, asset_event_id)
       select asset_id, dag_id, clock_timestamp(), event_id
         from (select distinct event_id, asset_id, dag_id from consumer where queue) as q
        order by dag_id, event_id
       returning asset_id, target_dag_id`
    : `insert into asset_dag_run_queue as adrq (asset_id, target_dag_id, created_at)
       select asset_id, dag_id, clock_timestamp()
         from (select distinct asset_id, dag_id from consumer where queue) as q
        order by asset_id, dag_id
       on conflict (asset_id, target_dag_id) do update set created_at = greatest(adrq.created_at, excluded.created_at)
       returning asset_id, target_dag_id`

  const rows = await prepared<{kind: ConsumerDecision['kind']; asset_id: number; dag_id: string}>(
    conn,
    `with ev as (
       select * from unnest($1::int[], $2::int[], $3::int[]) as e(event_id, asset_id, alias_id)
     ), reference as (
       select ev.event_id, ev.asset_id, r.dag_id from ev join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
       union
       select ev.event_id, ev.asset_id, r.dag_id from ev join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
       union
       select ev.event_id, ev.asset_id, r.dag_id from ev join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
       union
       select ev.event_id, ev.asset_id, r.dag_id from ev join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
     ), consumer as (
       select reference.*, ${partitioned} as partitioned,
              ($4::boolean and not ${partitioned}) as queue
         from reference
         join dag d on d.dag_id = reference.dag_id
        where not coalesce(d.is_paused, false) and not coalesce(d.is_stale, false)
     ), queued as (
       ${insert}
     )
     select 'queued' as kind, asset_id, target_dag_id as dag_id from queued
     union all
     select distinct case when partitioned then 'partitioned_consumer' else 'partitioned_event' end, asset_id, dag_id
       from consumer where not queue
     order by 1, 2, 3`,
    [events.map((e) => e.eventId), events.map((e) => e.assetId), events.map((e) => e.aliasId), options.eventPartitionKey === null],
  )
  return rows.map((row) => ({kind: row.kind, assetId: row.asset_id, dagId: row.dag_id}))
}
