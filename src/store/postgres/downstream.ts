import type {QueuedAsset} from '../../airflow/assetCondition.js'
import type {Capabilities} from '../../airflow/schema.js'
import {serializedDagJson} from '../../airflow/serializedDag.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {DownstreamFacts} from '../airflowStore.js'

/**
 * What the scheduler reads about every consumer DAG a set of events reaches, in one statement:
 * the consumers through all four reference tables and the aliases the events went through (the
 * same set `queueConsumers` considers, paused ones included); per DAG its exclusion flags
 * (`is_paused`, `is_stale`, `has_import_errors`), `max_active_runs` against its queued and running
 * runs, whether its timetable is partitioned (3.2+), the timetable of its latest serialized DAG
 * (`SerializedDagModel` by created_at, as the scheduler loads it) and its queue rows' assets with
 * what an `asset_ref` and an alias resolve against. Mirrors what `DagModel.dags_needing_dagruns`
 * and `SchedulerJobRunner._create_dag_runs_asset_triggered` read (airflow-core/src/airflow/models/
 * dag.py, airflow-core/src/airflow/jobs/scheduler_job_runner.py). Read inside the item's
 * transaction, it sees this completion's queue rows and every row already there.
 */
export function readDownstream(capabilities: Pick<Capabilities, 'partitionedTimetables'>) {
  const partitioned = capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  const read = prepared(
    `downstream${capabilities.partitionedTimetables ? '_partitioned' : ''}`,
    `with consumer as (
       select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any($1::int[])
       union
       select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any($2::int[])
       union
       select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any($1::int[])
       union
       select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any($1::int[])
     )
     select d.dag_id, coalesce(d.is_paused, false) as paused, coalesce(d.is_stale, false) as stale,
            coalesce(d.has_import_errors, false) as import_errors, d.max_active_runs,
            (select count(*)::int from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')) as active_runs,
            ${partitioned} as partitioned,
            sd.data -> 'dag' -> 'timetable' as timetable, case when sd.data is null then sd.data_compressed end as data_compressed,
            coalesce((select json_agg(json_build_object(
                        'name', a.name, 'uri', a.uri, 'active', aa.name is not null,
                        'aliases', coalesce((select json_agg(al.name order by al.name) from asset_alias_asset l join asset_alias al on al.id = l.alias_id where l.asset_id = a.id), '[]'::json))
                      order by a.name, a.uri)
                        from (select distinct q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id) as q
                        join asset a on a.id = q.asset_id
                        left join asset_active aa on aa.name = a.name and aa.uri = a.uri), '[]'::json) as queued
       from consumer c
       join dag d on d.dag_id = c.dag_id
       left join lateral (select s.data, s.data_compressed from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1) as sd on true
      order by d.dag_id`,
  )
  return async (ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]): Promise<DownstreamFacts[]> => {
    if (assetIds.length === 0) return []
    const rows = await ex.query<{
      dag_id: string
      paused: boolean
      stale: boolean
      import_errors: boolean
      max_active_runs: number | null
      active_runs: number
      partitioned: boolean
      timetable: {__var?: {asset_condition?: unknown}} | null
      data_compressed: Buffer | null
      queued: QueuedAsset[]
    }>(read([[...new Set(assetIds)], [...new Set(aliasIds)]]))
    return rows.map((row) => {
      // A compressed serialized DAG is inflated here; its timetable is read the same way.
      const timetable = row.data_compressed
        ? ((serializedDagJson(null, row.data_compressed) as {dag?: {timetable?: typeof row.timetable}} | undefined)?.dag
            ?.timetable ?? null)
        : row.timetable
      return {
        dagId: row.dag_id,
        paused: row.paused,
        stale: row.stale,
        importErrors: row.import_errors,
        maxActiveRuns: row.max_active_runs,
        activeRuns: row.active_runs,
        partitioned: row.partitioned,
        condition: timetable?.__var?.asset_condition,
        queued: row.queued,
      }
    })
  }
}
