import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import {bindings} from './bindings.js'

export type EventClass = 'ok' | 'external' | 'orphan_missing_ti' | 'orphan_not_success' | 'superseded_by_rerun' | 'duplicate'

export interface ClassifiedEvent {
  id: number
  asset_id: number
  asset_name: string
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  timestamp: Date
  class: EventClass
  /** duplicate: the event kept for the group (the first). */
  kept_id: number | null
  consumed: boolean
}

export interface EventFilter {
  since?: Date | undefined
  until?: Date | undefined
  assets: string[]
}

/**
 * Classifies every event attributed to the given task instance keys, in one statement:
 *   orphan_missing_ti   the key exists neither in task_instance nor in task_instance_history;
 *   orphan_not_success  it exists, but no try of it (current or archived) succeeded;
 *   superseded_by_rerun emitted before the start of the LAST successful try: an earlier successful
 *                       try's events, legitimate (one set per successful try);
 *   duplicate           beyond the first of a group with the same asset, extra and partition key
 *                       within `windowSeconds` of it (window function over the group);
 *   ok                  everything else.
 * Anti-joins (NOT EXISTS) throughout; the caller pages over keys so memory stays flat.
 */
export async function classifyEventsForKeys(
  db: Knex,
  keys: readonly TaskInstanceKey[],
  filter: EventFilter,
  windowSeconds: number,
  capabilities: Pick<Capabilities, 'eventPartitionKey'>,
): Promise<ClassifiedEvent[]> {
  if (keys.length === 0) return []
  const partition = capabilities.eventPartitionKey ? "coalesce(e.partition_key, '')" : "''"
  const {rows} = await db.raw<{rows: ClassifiedEvent[]}>(
    `with k as (
       select * from unnest(?::text[], ?::text[], ?::text[], ?::int[]) as k(dag_id, run_id, task_id, map_index)
     ), tries as (
       select k.*, h.try_number, h.start_date, h.state from k
         join task_instance_history h on h.dag_id = k.dag_id and h.run_id = k.run_id and h.task_id = k.task_id and h.map_index = k.map_index
       union all
       select k.*, t.try_number, t.start_date, t.state from k
         join task_instance t on t.dag_id = k.dag_id and t.run_id = k.run_id and t.task_id = k.task_id and t.map_index = k.map_index
     ), last_success as (
       select distinct on (dag_id, run_id, task_id, map_index) dag_id, run_id, task_id, map_index, start_date
         from tries where state = 'success' order by dag_id, run_id, task_id, map_index, try_number desc
     ), ev as (
       select e.id, e.asset_id, a.name as asset_name, e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index, e."timestamp",
              e.extra::jsonb::text as extra_text, ${partition} as partition_text,
              case
                when not exists (select 1 from tries t where t.dag_id = k.dag_id and t.run_id = k.run_id and t.task_id = k.task_id and t.map_index = k.map_index) then 'orphan_missing_ti'
                when ls.dag_id is null then 'orphan_not_success'
                when e."timestamp" < ls.start_date then 'superseded_by_rerun'
                else 'candidate'
              end as pre_class
         from k
         join asset_event e on e.source_dag_id = k.dag_id and e.source_run_id = k.run_id and e.source_task_id = k.task_id and coalesce(e.source_map_index, -1) = k.map_index
         join asset a on a.id = e.asset_id
         left join last_success ls on ls.dag_id = k.dag_id and ls.run_id = k.run_id and ls.task_id = k.task_id and ls.map_index = k.map_index
        where (?::timestamptz is null or e."timestamp" >= ?::timestamptz) and (?::timestamptz is null or e."timestamp" < ?::timestamptz)
          and (cardinality(?::text[]) = 0 or a.name = any(?::text[]) or a.uri = any(?::text[]))
     ), grouped as (
       select ev.*, first_value(id) over g as first_id, first_value("timestamp") over g as first_ts, row_number() over g as n
         from ev where pre_class = 'candidate'
       window g as (partition by source_dag_id, source_run_id, source_task_id, coalesce(source_map_index, -1), asset_id, extra_text, partition_text order by id)
     )
     select id, asset_id, asset_name, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp",
            case when n > 1 and "timestamp" - first_ts <= make_interval(secs => ?) then 'duplicate' else 'ok' end as class,
            case when n > 1 and "timestamp" - first_ts <= make_interval(secs => ?) then first_id end as kept_id,
            exists (select 1 from dagrun_asset_event c where c.event_id = grouped.id) as consumed
       from grouped
     union all
     select id, asset_id, asset_name, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp", pre_class, null,
            exists (select 1 from dagrun_asset_event c where c.event_id = ev.id)
       from ev where pre_class <> 'candidate'
     order by id`,
    bindings(
      keys.map((k) => k.dagId),
      keys.map((k) => k.runId),
      keys.map((k) => k.taskId),
      keys.map((k) => k.mapIndex),
      filter.since ?? null,
      filter.since ?? null,
      filter.until ?? null,
      filter.until ?? null,
      filter.assets,
      filter.assets,
      filter.assets,
      windowSeconds,
      windowSeconds,
    ),
  )
  return rows
}
