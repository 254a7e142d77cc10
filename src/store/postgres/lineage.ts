import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {LineageRow} from '../airflowStore.js'

/**
 * What a task instance's COMPLETE event is built from, read after its commit: its key and try,
 * end_date and its run's logical_date (or run_after) in microseconds since the epoch (the run id
 * hashes the microsecond instant; a JavaScript Date keeps milliseconds), the run's clear_number
 * and `conf["openlineage"]`, and the assets of the events airlock's own `success` row of this try
 * and replay-events' rows of this try name (`extra.airlock.event_ids`): exactly what airlock wrote.
 */
export function readLineageFacts() {
  const read = prepared(
    'lineage_facts',
    `select ti.dag_id, ti.task_id, ti.map_index, ti.try_number,
            (extract(epoch from ti.end_date) * 1000000)::bigint::text as end_micros,
            (extract(epoch from coalesce(dr.logical_date, dr.run_after)) * 1000000)::bigint::text as run_micros,
            dr.clear_number,
            case when jsonb_typeof(dr.conf::jsonb -> 'openlineage') = 'object' then dr.conf::jsonb -> 'openlineage' end as conf_openlineage,
            coalesce((select json_agg(json_build_object('name', a.name, 'uri', a.uri) order by e.id)
                        from asset_event e join asset a on a.id = e.asset_id
                       where e.id in (select (jsonb_array_elements_text(l.extra::jsonb -> 'airlock' -> 'event_ids'))::int
                                        from log l
                                       where l.dag_id = ti.dag_id and l.task_id = ti.task_id and l.run_id = ti.run_id
                                         and l.map_index = ti.map_index and l.try_number = ti.try_number
                                         and l.event in ('success', 'airlock.replay-events') and l.extra like '{%"airlock"%')), '[]'::json) as outputs
       from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
      where ti.id = $1::uuid`,
  )
  return async (ex: Executor, tiId: string): Promise<LineageRow | undefined> => {
    const [row] = await ex.query<{
      dag_id: string
      task_id: string
      map_index: number
      try_number: number
      end_micros: string | null
      run_micros: string
      clear_number: number
      conf_openlineage: Record<string, unknown> | null
      outputs: Array<{name: string; uri: string}>
    }>(read([tiId]))
    if (!row) return undefined
    return {
      dagId: row.dag_id,
      taskId: row.task_id,
      mapIndex: row.map_index,
      tryNumber: row.try_number,
      endMicros: row.end_micros === null ? null : BigInt(row.end_micros),
      runMicros: BigInt(row.run_micros),
      clearNumber: row.clear_number,
      confOpenLineage: row.conf_openlineage,
      outputs: row.outputs,
    }
  }
}
