import {conditionAssets} from '../../airflow/assetCondition.js'
import type {Capabilities} from '../../airflow/schema.js'
import {serializedDagJson} from '../../airflow/serializedDag.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {DownstreamFacts} from '../airflowStore.js'
import {consumerDagsOf} from './fragments.js'

/**
 * What the scheduler reads about every consumer DAG a set of events reaches, in one statement:
 * the consumers through all four reference tables and the aliases the events went through (the
 * same set `queueConsumers` considers, paused ones included); per DAG its exclusion flags
 * (`is_paused`, `is_stale`, `has_import_errors`), `max_active_runs` against its queued and running
 * runs, whether its timetable is partitioned (3.2+), the timetable of its latest serialized DAG
 * (`SerializedDagModel` by created_at, as the scheduler loads it) and its queue rows' assets with
 * what an `asset_ref` and an alias resolve against. Mirrors what `DagModel.dags_needing_dagruns`
 * and `SchedulerJobRunner._create_dag_runs_asset_triggered` read (airflow-core/src/airflow/models/
 * dag.py, airflow-core/src/airflow/jobs/scheduler_job_runner.py; read on main, whose 3.0-era copy
 * agrees on these reads; `exceeds_max_non_backfill`, newer than 3.0 and of unverified release, is
 * not read). Read inside the item's
 * transaction, it sees this completion's queue rows and every row already there.
 */
export function readDownstream(capabilities: Pick<Capabilities, 'partitionedTimetables'>) {
  const read = prepared(
    `downstream${capabilities.partitionedTimetables ? '_partitioned' : ''}`,
    downstreamText(capabilities.partitionedTimetables),
  )
  // Conditions by serialized DAG hash, with the names and uris they mention (bounded).
  const conditions = new Map<string, {condition: unknown; names: string[]; uris: string[]}>()
  const known = (snapshot: ReadonlyMap<string, {names: string[]; uris: string[]}>) => {
    const values = [...snapshot.values()]
    return [[...snapshot.keys()], values.flatMap((c) => c.names), values.flatMap((c) => c.uris)]
  }
  return async (ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]): Promise<DownstreamFacts[]> => {
    if (assetIds.length === 0) return []
    // What this statement was told is known: items running at once share the cache, and one may
    // evict an entry while this one's statement runs.
    const snapshot = new Map(conditions)
    const rows = await ex.query<{
      dag_id: string
      paused: boolean
      stale: boolean
      import_errors: boolean
      max_active_runs: number | null
      active_runs: number
      partitioned: boolean
      dag_hash: string | null
      timetable: {__var?: {asset_condition?: unknown}} | null
      data_compressed: Buffer | null
      names: string[]
      uris: string[]
      active: boolean[]
      aliases: string[]
    }>(read([[...new Set(assetIds)], [...new Set(aliasIds)], ...known(snapshot)]))
    return rows.map((row) => ({
      dagId: row.dag_id,
      paused: row.paused,
      stale: row.stale,
      importErrors: row.import_errors,
      maxActiveRuns: row.max_active_runs,
      activeRuns: row.active_runs,
      partitioned: row.partitioned,
      condition:
        row.dag_hash === null ? undefined : conditionOf(snapshot, row.dag_hash, row.timetable, row.data_compressed),
      queued: {
        assets: row.names.map((name, i) => ({name, uri: row.uris[i]!, active: row.active[i]!})),
        aliases: row.aliases,
      },
    }))
  }

  function conditionOf(
    snapshot: ReadonlyMap<string, {condition: unknown}>,
    hash: string,
    timetable: {__var?: {asset_condition?: unknown}} | null,
    compressed: Buffer | null,
  ): unknown {
    const cached = snapshot.get(hash)
    if (cached) return cached.condition
    // A compressed serialized DAG is inflated here; its timetable is read the same way.
    const read = compressed
      ? (serializedDagJson(null, compressed) as {dag?: {timetable?: typeof timetable}} | undefined)?.dag?.timetable
      : timetable
    const condition = read?.__var?.asset_condition
    if (conditions.size >= cachedConditions) conditions.delete(conditions.keys().next().value!)
    conditions.set(hash, {condition, ...conditionAssets(condition)})
    return condition
  }
}

/** The one statement of readDownstream, with or without the 3.2+ partitioned timetable column. */
function downstreamText(partitionedTimetables: boolean): string {
  const partitioned = partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  return `with consumer as materialized (
       -- Materialized: the consumers first (a handful), then each one's facts, never every DAG's.
       select d.* from dag d where d.dag_id in (${consumerDagsOf('$1::int[]', '$2::int[]')})
     )
     -- The scheduler keeps a DAG whose flag is false (is_paused == false(), ~is_stale,
     -- has_import_errors == false()): a NULL flag excludes it as much as true does.
     select d.dag_id, d.is_paused is not false as paused, d.is_stale is not false as stale,
            d.has_import_errors is not false as import_errors, d.max_active_runs,
            (select count(*)::int from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')) as active_runs,
            ${partitioned} as partitioned,
            sd.dag_hash, sd.timetable, sd.data_compressed,
            queued.names, queued.uris, queued.active,
            -- From the alias links (few), each checked against the DAG's queue by its key.
            array(select distinct al.name from asset_alias al join asset_alias_asset l on l.alias_id = al.id
                   where exists (select 1 from asset_dag_run_queue q where q.target_dag_id = d.dag_id and q.asset_id = l.asset_id)
                   order by 1) as aliases
       from consumer d
       -- A serialized DAG whose hash the process has seen is not read again: reading its timetable
       -- parses the whole document (a json column), megabytes for a large DAG.
       left join lateral (
         select s.dag_hash,
                case when s.dag_hash = any($3::text[]) then null else s.data -> 'dag' -> 'timetable' end as timetable,
                case when s.dag_hash = any($3::text[]) or s.data is not null then null else s.data_compressed end as data_compressed
           from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
       ) as sd on true
       -- Three arrays rather than one JSON object per queued asset: a consumer of hundreds of
       -- assets costs a fraction as much to build and to parse.
       cross join lateral (
         select coalesce(array_agg(a.name order by a.id), '{}') as names, coalesce(array_agg(a.uri order by a.id), '{}') as uris,
                coalesce(array_agg(aa.name is not null order by a.id), '{}') as active
           from (select distinct q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id) as q
           join asset a on a.id = q.asset_id
           left join asset_active aa on aa.name = a.name and aa.uri = a.uri
          -- Of a known condition, only the rows it can match (by name or uri); of a new one, all.
          where not coalesce(sd.dag_hash = any($3::text[]), false) or a.name = any($4::text[]) or a.uri = any($5::text[])
       ) as queued
      order by d.dag_id`
}

/** Serialized DAG conditions kept per process (each a few hundred bytes). */
const cachedConditions = 256
