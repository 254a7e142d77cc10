import type {Capabilities} from '../../airflow/schema.js'
import type {EventLine} from '../../airflow/eventLine.js'
import type {Executor} from '../../engine/engine.js'
import {Params, prepared, statement} from '../../engine/prepared.js'
import {
  assetKey,
  type EventContent,
  type EventPageFilter,
  type RemovedDuplicates,
  type StoredEvent,
} from '../airflowStore.js'
import {eventFilterConditions, whereAll} from './fragments.js'

/** The columns every event read here returns, as the driver gives them. */
interface EventRow {
  id: number
  asset_name: string
  asset_uri: string
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  partition_key: string | null
  timestamp: Date
}

/** source_dag_id, source_run_id, source_task_id, source_map_index of an event's content. */
const sourceValues = (content: EventContent) => [
  content.source?.dagId ?? null,
  content.source?.runId ?? null,
  content.source?.taskId ?? null,
  content.source?.mapIndex ?? -1,
]

/**
 * One keyset page of events (id > afterId, ORDER BY id) with everything an export line carries,
 * so an export of millions of events reads in constant memory. Which queue rows belong to an
 * event depends on the queue's key: its asset before 3.4, the event itself from 3.4.
 */
export function readEventPage(capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape'>) {
  const queued = capabilities.queueShape === 'per_event' ? 'q.asset_event_id = e.id' : 'q.asset_id = e.asset_id'
  const columns = `e.id, a.name as asset_name, a.uri as asset_uri, e.extra, e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index,
            ${capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar as partition_key'}, e."timestamp",
            coalesce((select array_agg(al.name order by al.name) from asset_alias_asset_event l join asset_alias al on al.id = l.alias_id where l.event_id = e.id), '{}') as aliases,
            coalesce((select array_agg(distinct q.target_dag_id order by q.target_dag_id) from asset_dag_run_queue q where ${queued}), '{}') as queued_for,
            coalesce((select json_agg(json_build_object('dag_id', dr.dag_id, 'run_id', dr.run_id) order by dr.id)
                        from dagrun_asset_event c join dag_run dr on dr.id = c.dag_run_id where c.event_id = e.id), '[]') as consumed_by`
  return async (ex: Executor, filter: EventPageFilter): Promise<EventLine[]> => {
    const params = new Params()
    const where = [`e.id > ${params.add(filter.afterId)}::int`, ...eventFilterConditions(params, filter)]
    const rows = await ex.query<
      EventRow & {
        extra: Record<string, unknown>
        aliases: string[]
        queued_for: string[]
        consumed_by: EventLine['consumed_by']
      }
    >(
      statement(
        `select ${columns} from asset_event e join asset a on a.id = e.asset_id ${whereAll(where)} order by e.id limit ${params.add(filter.limit)}::int`,
        params.values,
      ),
    )
    return rows.map((row) => ({
      id: row.id,
      asset: {name: row.asset_name, uri: row.asset_uri},
      extra: row.extra,
      source_dag_id: row.source_dag_id,
      source_run_id: row.source_run_id,
      source_task_id: row.source_task_id,
      source_map_index: row.source_map_index,
      partition_key: row.partition_key,
      timestamp: row.timestamp.toISOString(),
      aliases: row.aliases,
      queued_for: row.queued_for,
      consumed_by: row.consumed_by,
    }))
  }
}

/** Events by id, with their asset, source attribution, partition key and the aliases they went through. */
export function readEventsById(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const read = prepared(
    'events_by_id',
    `select e.id, e.asset_id, a.name as asset_name, a.uri as asset_uri, e.extra::text as extra,
            e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index,
            ${capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar'} as partition_key, e."timestamp",
            coalesce((select array_agg(l.alias_id order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '{}') as alias_ids,
            dr.logical_date, d.owners
       from asset_event e
       join asset a on a.id = e.asset_id
       left join dag_run dr on dr.dag_id = e.source_dag_id and dr.run_id = e.source_run_id
       left join dag d on d.dag_id = e.source_dag_id
      where e.id = any($1::int[])
      order by e.id`,
  )
  return async (ex: Executor, ids: readonly number[]): Promise<StoredEvent[]> => {
    const rows = await ex.query<
      EventRow & {
        asset_id: number
        extra: string
        alias_ids: number[]
        logical_date: Date | null
        owners: string | null
      }
    >(read([[...ids]]))
    return rows.map((row) => ({
      id: row.id,
      assetId: row.asset_id,
      assetName: row.asset_name,
      assetUri: row.asset_uri,
      extra: row.extra,
      source:
        row.source_dag_id && row.source_run_id && row.source_task_id
          ? {
              dagId: row.source_dag_id,
              runId: row.source_run_id,
              taskId: row.source_task_id,
              mapIndex: row.source_map_index ?? -1,
            }
          : null,
      partitionKey: row.partition_key,
      timestamp: row.timestamp,
      aliasIds: row.alias_ids,
      logicalDate: row.logical_date,
      owners: row.owners,
    }))
  }
}

/** Asset ids by (name, uri) and alias ids by name, for lines of an export replayed elsewhere. */
export function resolveAssetsAndAliases() {
  const assets = prepared(
    'resolve_assets',
    'select a.id, a.name, a.uri from asset a join unnest($1::text[], $2::text[]) as k(name, uri) on a.name = k.name and a.uri = k.uri',
  )
  const aliases = prepared('resolve_aliases', 'select id, name from asset_alias where name = any($1::text[])')
  return async (ex: Executor, wanted: ReadonlyArray<{name: string; uri: string}>, aliasNames: readonly string[]) => {
    const assetRows = await ex.query<{id: number; name: string; uri: string}>(
      assets([wanted.map((a) => a.name), wanted.map((a) => a.uri)]),
    )
    const aliasRows = await ex.query<{id: number; name: string}>(aliases([[...aliasNames]]))
    return {
      assetIds: new Map(assetRows.map((row) => [assetKey(row), row.id])),
      aliasIds: new Map(aliasRows.map((row) => [row.name, row.id])),
    }
  }
}

/**
 * An existing event with the same content (asset, source attribution, extra, partition key) at
 * or after `since`, for --skip-existing: replaying an export into a database that already has
 * some of its events must not double them.
 */
export function findMatchingEvent(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey
  // Two replays of one export running at once would both find nothing and both insert: one
  // transaction-scoped advisory lock per event content makes the check-then-insert atomic.
  const lock = prepared('event_content_lock', 'select pg_advisory_xact_lock(hashtextextended($1, 0))')
  const find = prepared(
    'find_matching_event',
    `select id from asset_event
      where asset_id = $1 and extra::jsonb = $2::jsonb
        and source_dag_id is not distinct from $3 and source_run_id is not distinct from $4
        and source_task_id is not distinct from $5 and source_map_index is not distinct from $6::int
        and "timestamp" >= $7::timestamptz
        ${partition ? 'and partition_key is not distinct from $8' : ''}
      order by id limit 1`,
  )
  return async (ex: Executor, content: EventContent, since: Date): Promise<number | undefined> => {
    await ex.query(
      lock([JSON.stringify([content.assetId, content.extra, ...sourceValues(content), content.partitionKey])]),
    )
    const [row] = await ex.query<{id: number}>(
      find([
        content.assetId,
        content.extra,
        ...sourceValues(content),
        since,
        ...(partition ? [content.partitionKey] : []),
      ]),
    )
    return row?.id
  }
}

/**
 * A new asset_event with the given content and a fresh timestamp (UTC now, never the original's:
 * before 3.4 the scheduler ignores events older than the last asset-triggered run).
 */
export function insertEventCopy(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey
  const insert = prepared(
    'insert_event_copy',
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partition ? ', partition_key' : ''})
     values ($1, $2::json, $3, $4, $5, $6::int, clock_timestamp()${partition ? ', $7' : ''})
     returning id`,
  )
  return async (ex: Executor, content: EventContent): Promise<number> => {
    const [row] = await ex.query<{id: number}>(
      insert([content.assetId, content.extra, ...sourceValues(content), ...(partition ? [content.partitionKey] : [])]),
    )
    return row!.id
  }
}

export function countEvents() {
  const count = prepared('count_events', 'select count(*) as n from asset_event where id = any($1::int[])')
  return async (ex: Executor, ids: readonly number[]): Promise<number> =>
    Number((await ex.query<{n: string}>(count([[...ids]])))[0]?.n ?? 0)
}

/**
 * Removes duplicate events no consumer has taken and none can still take, without ever waiting on
 * a lock the scheduler holds:
 * - the rows are locked FOR UPDATE SKIP LOCKED, in id order. A scheduler inserting
 *   dagrun_asset_event for one of them holds its key (the foreign-key check): that event is busy,
 *   and the whole group is left for the next run instead of waiting (and instead of deleting an
 *   event under a scheduler that would then fail on the foreign key, 23503, not retried);
 * - consumed: a dag run took it (dagrun_asset_event), or (3.2+) the partitioned path did
 *   (partitioned_asset_key_log);
 * - pending: a consumer could still take it. Before 3.4 a consumer DAG's next asset-triggered run
 *   takes the events after its previous one's run_after (the window of
 *   `SchedulerJobRunner._create_dag_runs_asset_triggered`, airflow-core/src/airflow/jobs/
 *   scheduler_job_runner.py, 3.0–3.3; transcribed in test/conformance/scheduler.ts): an event newer than some consumer's
 *   last asset-triggered run is still in that window. Consumers are the DAGs scheduled on the
 *   asset by id, name or uri, or on an alias the event went through. From 3.4 a run takes exactly
 *   the events its queue rows name (apache/airflow #70972): an event with a queue row is pending (deleting it would also
 *   delete the row, ON DELETE CASCADE);
 * - only the rest is deleted; alias links go with it by their cascade.
 */
export function removeDuplicateEvents(capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape'>) {
  const lock = prepared(
    'lock_events_skip_locked',
    'select id from asset_event where id = any($1::int[]) order by id for update skip locked',
  )
  const consumed = prepared(
    capabilities.eventPartitionKey ? 'consumed_events_partitioned' : 'consumed_events',
    `select event_id from dagrun_asset_event where event_id = any($1::int[])${
      capabilities.eventPartitionKey
        ? ' union select asset_event_id from partitioned_asset_key_log where asset_event_id = any($1::int[])'
        : ''
    }`,
  )
  const pending = prepared(
    capabilities.queueShape === 'per_event' ? 'pending_events_per_event' : 'pending_events_window',
    capabilities.queueShape === 'per_event'
      ? 'select e.id from asset_event e where e.id = any($1::int[]) and exists (select 1 from asset_dag_run_queue q where q.asset_event_id = e.id)'
      : `select e.id from asset_event e
          where e.id = any($1::int[])
            and exists (
              select 1 from (
                select r.dag_id from dag_schedule_asset_reference r where r.asset_id = e.asset_id
                union select r.dag_id from dag_schedule_asset_alias_reference r
                        join asset_alias_asset_event l on l.alias_id = r.alias_id where l.event_id = e.id
                union select r.dag_id from dag_schedule_asset_name_reference r join asset a on a.name = r.name where a.id = e.asset_id
                union select r.dag_id from dag_schedule_asset_uri_reference r join asset a on a.uri = r.uri where a.id = e.asset_id
              ) consumer
              where e."timestamp" > coalesce(
                (select max(d.run_after) from dag_run d where d.dag_id = consumer.dag_id and d.run_type = 'asset_triggered'), '-infinity'))`,
  )
  const deleteEvents = prepared('delete_events', 'delete from asset_event where id = any($1::int[]) returning id')
  return async (ex: Executor, eventIds: readonly number[]): Promise<RemovedDuplicates> => {
    const locked = (await ex.query<{id: number}>(lock([[...eventIds]]))).map((row) => row.id)
    const gone = await ex.query<{id: number}>(
      statement('select id from asset_event where id = any($1::int[])', [[...eventIds]]),
    )
    // Locked by someone else (not merely deleted since the audit read it).
    const busy = gone.map((row) => row.id).filter((id) => !locked.includes(id))
    if (busy.length > 0) return {removed: [], consumed: [], pending: [], busy}
    const consumedIds = (await ex.query<{event_id: number}>(consumed([locked]))).map((row) => row.event_id)
    const pendingIds = (await ex.query<{id: number}>(pending([locked])))
      .map((row) => row.id)
      .filter((id) => !consumedIds.includes(id))
    const removable = locked.filter((id) => !consumedIds.includes(id) && !pendingIds.includes(id))
    if (removable.length === 0) return {removed: [], consumed: consumedIds, pending: pendingIds, busy: []}
    const rows = await ex.query<{id: number}>(deleteEvents([removable]))
    return {
      removed: rows.map((row) => row.id).sort((a, b) => a - b),
      consumed: consumedIds,
      pending: pendingIds,
      busy: [],
    }
  }
}
