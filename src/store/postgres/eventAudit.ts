import type {Capabilities} from '../../airflow/schema.js'
import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import {statement} from '../../engine/prepared.js'
import type {ClassifiedEvent, EventClass, EventFilter, QueueOrphan} from '../airflowStore.js'
import {eventFilterConditions, namedByAirlockRow, whereAll} from './fragments.js'
import {Params} from './params.js'

/**
 * One keyset page of distinct source task instance keys among the filtered events, ordered by the
 * key: the unit audit-events pages over (every group of a key is classified together).
 */
export function readEventSourceKeys() {
  return async (ex: Executor, after: TaskInstanceKey | null, limit: number, filter: EventFilter): Promise<TaskInstanceKey[]> => {
    // source_map_index is nullable (default -1): NULL is read as -1 everywhere, in the key, the
    // order and the keyset comparison, so paging neither repeats nor skips those events.
    const params = new Params()
    const where = [
      'e.source_dag_id is not null',
      'e.source_run_id is not null',
      'e.source_task_id is not null',
      ...eventFilterConditions(params, filter),
    ]
    if (after) {
      where.push(
        `(e.source_dag_id, e.source_run_id, e.source_task_id, coalesce(e.source_map_index, -1)) > (${params.add(after.dagId)}, ${params.add(after.runId)}, ${params.add(after.taskId)}, ${params.add(after.mapIndex)}::int)`,
      )
    }

    const rows = await ex.query<{dag_id: string; run_id: string; task_id: string; map_index: number}>(
      statement(
        `select distinct e.source_dag_id as dag_id, e.source_run_id as run_id, e.source_task_id as task_id, coalesce(e.source_map_index, -1) as map_index
           from asset_event e ${whereAll(where)}
          order by 1, 2, 3, 4 limit ${params.add(limit)}::int`,
        params.values,
      ),
    )
    return rows.map((r) => ({dagId: r.dag_id, runId: r.run_id, taskId: r.task_id, mapIndex: r.map_index}))
  }
}

/** Events without a source task (REST- or trigger-created): counted as external, never a finding. */
export function countExternalEvents() {
  return async (ex: Executor, filter: EventFilter): Promise<number> => {
    if (filter.sourceDagId) return 0
    const params = new Params()
    const where = ['(e.source_dag_id is null or e.source_run_id is null or e.source_task_id is null)', ...eventFilterConditions(params, filter)]
    const [row] = await ex.query<{n: string}>(statement(`select count(*) as n from asset_event e ${whereAll(where)}`, params.values))
    return Number(row?.n ?? 0)
  }
}

/**
 * Classifies every event attributed to the given task instance keys, in one statement:
 *   orphan_missing_ti   the key exists neither in task_instance nor in task_instance_history;
 *   orphan_not_success  it exists, but no try of it (current or archived) succeeded;
 *   superseded_by_rerun emitted before the LAST successful try began (the last write of the try
 *                       before it, from task_instance_history; never the try's own start_date, which clocks
 *                       and airlock's never-started completions make unreliable) and not named by
 *                       airlock's audit row of that try: an earlier try's events, legitimate;
 *   duplicate           beyond the first of a group with the same asset, extra, partition key and aliases
 *                       within `windowSeconds` of it, or at any distance when replay-events wrote it
 *                       (window function over the group);
 *   ok                  everything else.
 * Anti-joins (NOT EXISTS) throughout; the caller pages over keys so memory stays flat.
 */
export function classifyEventsForKeys(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey ? "coalesce(e.partition_key, '')" : "''"
  return async (ex: Executor, keys: readonly TaskInstanceKey[], filter: EventFilter, windowSeconds: number): Promise<ClassifiedEvent[]> => {
    if (keys.length === 0) return []
    const params = new Params()
    const k = `unnest(${params.add(keys.map((key) => key.dagId))}::text[], ${params.add(keys.map((key) => key.runId))}::text[], ${params.add(keys.map((key) => key.taskId))}::text[], ${params.add(keys.map((key) => key.mapIndex))}::int[])`
    const filterWhere = eventFilterConditions(params, filter)
    const window = `make_interval(secs => ${params.add(windowSeconds)}::float8)`
    // Taken by a dag run, or (3.2+) by the partitioned path.
    const consumedBy = (id: string) =>
      `(exists (select 1 from dagrun_asset_event c where c.event_id = ${id})${
        capabilities.eventPartitionKey ? ` or exists (select 1 from partitioned_asset_key_log p where p.asset_event_id = ${id})` : ''
      })`
    const lastTry = {dagId: 'k.dag_id', runId: 'k.run_id', taskId: 'k.task_id', mapIndex: 'k.map_index', tryNumber: 'ls.try_number'}
    const rows = await ex.query<{
      id: number
      asset_id: number
      asset_name: string
      source_dag_id: string
      source_run_id: string
      source_task_id: string
      source_map_index: number | null
      timestamp: Date
      class: EventClass
      kept_id: number | null
      consumed: boolean
    }>(
      statement(
        `with k as (
           select * from ${k} as k(dag_id, run_id, task_id, map_index)
         ), tries as (
           select k.*, h.try_number, h.start_date, h.end_date, h.updated_at, h.state from k
             join task_instance_history h on h.dag_id = k.dag_id and h.run_id = k.run_id and h.task_id = k.task_id and h.map_index = k.map_index
           union all
           select k.*, t.try_number, t.start_date, t.end_date, t.updated_at, t.state from k
             join task_instance t on t.dag_id = k.dag_id and t.run_id = k.run_id and t.task_id = k.task_id and t.map_index = k.map_index
         ), last_success as (
           -- The last successful try, and when it began as events can tell: the last write of the try before it (see tryBegan).
           select distinct on (s.dag_id, s.run_id, s.task_id, s.map_index) s.dag_id, s.run_id, s.task_id, s.map_index, s.try_number,
                  coalesce((select max(coalesce(p.updated_at, p.end_date, p.start_date)) from tries p
                             where p.dag_id = s.dag_id and p.run_id = s.run_id and p.task_id = s.task_id and p.map_index = s.map_index
                               and p.try_number < s.try_number), '-infinity') as began
             from tries s where s.state = 'success' order by s.dag_id, s.run_id, s.task_id, s.map_index, s.try_number desc
         ), ev as (
           select e.id, e.asset_id, a.name as asset_name, e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index, e."timestamp",
                  e.extra::jsonb::text as extra_text, ${partition} as partition_text,
                  -- The aliases the event went through: a direct event and an alias event of the same
                  -- asset and extra are both legitimate (each wakes its own consumers).
                  (select coalesce(string_agg(l.alias_id::text, ',' order by l.alias_id), '') from asset_alias_asset_event l where l.event_id = e.id) as alias_text,
                  case
                    when not exists (select 1 from tries t where t.dag_id = k.dag_id and t.run_id = k.run_id and t.task_id = k.task_id and t.map_index = k.map_index) then 'orphan_missing_ti'
                    when ls.dag_id is null then 'orphan_not_success'
                    when e."timestamp" <= ls.began and not ${namedByAirlockRow('e.id', lastTry)} then 'superseded_by_rerun'
                    else 'candidate'
                  end as pre_class,
                  -- Written by replay-events' missing mode: it only writes an event it found missing,
                  -- so a second event of the group in the same try is a duplicate at any distance.
                  ${namedByAirlockRow('e.id', {dagId: 'k.dag_id', runId: 'k.run_id', taskId: 'k.task_id', mapIndex: 'k.map_index'}, ['airlock.replay-events'])} as replayed
             from k
             join asset_event e on e.source_dag_id = k.dag_id and e.source_run_id = k.run_id and e.source_task_id = k.task_id and coalesce(e.source_map_index, -1) = k.map_index
             join asset a on a.id = e.asset_id
             left join last_success ls on ls.dag_id = k.dag_id and ls.run_id = k.run_id and ls.task_id = k.task_id and ls.map_index = k.map_index
            ${whereAll(filterWhere)}
         ), grouped as (
           select ev.*, first_value(id) over g as first_id, first_value("timestamp") over g as first_ts, row_number() over g as n
             from ev where pre_class = 'candidate'
           window g as (partition by source_dag_id, source_run_id, source_task_id, coalesce(source_map_index, -1), asset_id, extra_text, partition_text, alias_text order by id)
         )
         select id, asset_id, asset_name, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp",
                case when n > 1 and ("timestamp" - first_ts <= ${window} or replayed) then 'duplicate' else 'ok' end as class,
                case when n > 1 and ("timestamp" - first_ts <= ${window} or replayed) then first_id end as kept_id,
                ${consumedBy('grouped.id')} as consumed
           from grouped
         union all
         select id, asset_id, asset_name, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp", pre_class, null,
                ${consumedBy('ev.id')}
           from ev where pre_class <> 'candidate'
         order by id`,
        params.values,
      ),
    )
    return rows.map((row) => ({
      id: row.id,
      assetId: row.asset_id,
      assetName: row.asset_name,
      source: {dagId: row.source_dag_id, runId: row.source_run_id, taskId: row.source_task_id, mapIndex: row.source_map_index},
      timestamp: row.timestamp,
      class: row.class,
      keptId: row.kept_id,
      consumed: row.consumed,
    }))
  }
}

/**
 * Rows pointing at something that no longer exists: queue rows whose asset, DAG (or, from 3.4,
 * event) is gone, and alias links to missing events. The foreign keys cascade, so these appear
 * only where a restore or a manual fix bypassed them; NOT EXISTS finds them either way.
 */
export function readQueueOrphans(capabilities: Pick<Capabilities, 'queueShape'>) {
  const perEvent = capabilities.queueShape === 'per_event'
  const text = `(select 'queue_missing_asset' as kind, format('asset_dag_run_queue (asset_id %s, target_dag_id %s)', q.asset_id, q.target_dag_id) as detail
        from asset_dag_run_queue q where not exists (select 1 from asset a where a.id = q.asset_id) limit $1)
     union all
     (select 'queue_missing_dag', format('asset_dag_run_queue (asset_id %s, target_dag_id %s)', q.asset_id, q.target_dag_id)
        from asset_dag_run_queue q where not exists (select 1 from dag d where d.dag_id = q.target_dag_id) limit $1)
     ${
       perEvent
         ? `union all
     (select 'queue_missing_event', format('asset_dag_run_queue (target_dag_id %s, asset_event_id %s)', q.target_dag_id, q.asset_event_id)
        from asset_dag_run_queue q where not exists (select 1 from asset_event e where e.id = q.asset_event_id) limit $1)`
         : ''
     }
     union all
     (select 'alias_link_missing_event', format('asset_alias_asset_event (alias_id %s, event_id %s)', l.alias_id, l.event_id)
        from asset_alias_asset_event l where not exists (select 1 from asset_event e where e.id = l.event_id) limit $1)`
  return async (ex: Executor, limit = 1000): Promise<QueueOrphan[]> => ex.query<QueueOrphan>(statement(text, [limit]))
}
