import {conditionAssets} from '../../airflow/assetCondition.js'
import type {Capabilities} from '../../airflow/schema.js'
import {serializedDagJson} from '../../airflow/serializedDag.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {DownstreamFacts} from '../families/downstream.js'
import {consumerDagsOf} from './fragments.js'
import type {DownstreamStore} from '../families/downstream.js'

/**
 * What the scheduler reads about every consumer DAG a set of events reaches: the consumers through
 * all four reference tables and the aliases the events went through (the same set
 * `queueConsumers` considers, paused ones included); per DAG its exclusion flags (`is_paused`,
 * `is_stale`, `has_import_errors`), `max_active_runs` against its queued and running runs,
 * whether its timetable is partitioned (3.2+), the timetable of its latest serialized DAG
 * (`SerializedDagModel` by created_at, as the scheduler loads it) and its queue rows' assets with
 * what an `asset_ref` and an alias resolve against. Mirrors what `DagModel.dags_needing_dagruns`
 * and `SchedulerJobRunner._create_dag_runs_asset_triggered` read (airflow-core/src/airflow/models/
 * dag.py, airflow-core/src/airflow/jobs/scheduler_job_runner.py; read on main, whose 3.0-era copy
 * agrees on these reads). From 3.2 (migration 0b112f49112d, apache/airflow #60006) it also reads
 * `dag.exceeds_max_non_backfill`, the scheduler's cached cap flag, which the WHERE clause of
 * `dags_needing_dagruns` excludes a DAG on, asset-triggered ones included (read in copies of main
 * from January to March 2026, before 3.2.0 shipped: the release of that clause is unverified,
 * the column's is the migration's own).
 *
 * Two statements embed it: the queue statement (`queueConsumers`, the preview of a write, read in
 * the same statement that queues the item's consumers) and `readDownstream` (the read-only plan).
 * Both share one cache of conditions by serialized DAG hash, so a DAG's condition is parsed once
 * per process.
 */
export interface DownstreamReader {
  /**
   * A scalar subquery: one JSON array with an entry per consumer DAG of the assets and aliases the
   * parameters name. An embedding statement may pass what it has found already:
   * - `queuedHere`: a query of (dag_id, asset_id) rows it queues itself, which its own snapshot
   *   does not show;
   * - `consumersHere`: a query of the dag_ids scheduled on its own events' assets and aliases (its
   *   consumers before any filter), so that the parameters name only the assets and aliases
   *   beyond them (usually none) and the reference tables are not read twice.
   */
  factsSql(params: DownstreamParams, here?: FactsHere): string
  /** What to bind for `hashes`, `names`, `uris` and `noAliases`, and the snapshot of the cache they describe. */
  known(): Known
  /** The array's entries as facts, their conditions from the snapshot or parsed and cached. */
  facts(entries: readonly FactsEntry[], known: Known): DownstreamFacts[]
}

/**
 * What an embedding statement has found already (DownstreamReader.factsSql). `linksHere`: a query
 * of (alias_id, asset_id) links the statement's events would make, for a plan, whose aliases are
 * not linked to their assets yet.
 */
export interface FactsHere {
  queuedHere: string
  consumersHere: string
  linksHere?: string
}

/** The placeholders of factsSql's parameters: the assets and aliases, then what the cache knows. */
export interface DownstreamParams {
  assetIds: string
  aliasIds: string
  hashes: string
  names: string
  uris: string
  noAliases: string
}

interface CachedCondition {
  condition: unknown
  names: string[]
  uris: string[]
  /** Whether the condition has an alias leaf. */
  aliases: boolean
}

export interface Known {
  snapshot: ReadonlyMap<string, CachedCondition>
  hashes: string[]
  names: string[]
  uris: string[]
  /** The hashes whose conditions have no alias leaf: their DAGs' aliases are not read. */
  noAliases: string[]
}

/** A DAG as the scheduler's asset step reads it, in a row: its flags, its runs against the cap, its latest timetable. */
export interface SchedulerDagRow {
  dag_id: string
  paused: boolean
  stale: boolean
  import_errors: boolean
  max_active_runs: number | null
  active_runs: number
  partitioned: boolean
  max_runs_flag: boolean
  timetable: {__var?: {asset_condition?: unknown}} | null
  /** `data_compressed`, base64, when `data` is NULL (and, for the preview, the hash is new to the process). */
  data_compressed: string | null
}

/** The asset condition of a row's timetable; a compressed serialized DAG is inflated for it. */
export function conditionOfRow(row: Pick<SchedulerDagRow, 'timetable' | 'data_compressed'>): unknown {
  const timetable = row.data_compressed
    ? (
        serializedDagJson(null, Buffer.from(row.data_compressed, 'base64')) as
          {dag?: {timetable?: SchedulerDagRow['timetable']}} | undefined
      )?.dag?.timetable
    : row.timetable
  return timetable?.__var?.asset_condition
}

/** One entry of factsSql's array, as json_build_object writes it. */
export interface FactsEntry extends SchedulerDagRow {
  dag_hash: string | null
  names: string[]
  uris: string[]
  active: boolean[]
  aliases: string[]
}

function downstreamReader(capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag'>): DownstreamReader {
  // Conditions by serialized DAG hash, with the names and uris they mention (bounded).
  const conditions = new Map<string, CachedCondition>()
  return {
    factsSql: (params, here) => factsText(capabilities, params, here),
    known() {
      // What a statement was told is known: items running at once share the cache, and one may
      // evict an entry while another's statement runs.
      const snapshot = new Map(conditions)
      const values = [...snapshot.values()]
      return {
        snapshot,
        hashes: [...snapshot.keys()],
        names: values.flatMap((c) => c.names),
        uris: values.flatMap((c) => c.uris),
        noAliases: [...snapshot].flatMap(([hash, c]) => (c.aliases ? [] : [hash])),
      }
    },
    facts: (entries, known) =>
      entries.map((row) => ({
        dagId: row.dag_id,
        paused: row.paused,
        stale: row.stale,
        importErrors: row.import_errors,
        maxActiveRuns: row.max_active_runs,
        activeRuns: row.active_runs,
        partitioned: row.partitioned,
        maxRunsFlag: row.max_runs_flag,
        condition: row.dag_hash === null ? undefined : conditionOf(known, row),
        queued: {
          assets: row.names.map((name, i) => ({name, uri: row.uris[i]!, active: row.active[i]!})),
          aliases: row.aliases,
        },
      })),
  }

  function conditionOf(known: Known, row: FactsEntry): unknown {
    const cached = known.snapshot.get(row.dag_hash!)
    if (cached) return cached.condition
    const condition = conditionOfRow(row)
    if (conditions.size >= cachedConditions) conditions.delete(conditions.keys().next().value!)
    conditions.set(row.dag_hash!, {condition, ...conditionAssets(condition)})
    return condition
  }
}

/** The read-only plan's preview: the facts alone, one statement (a write reads them in its queue statement). */
function readDownstream(
  reader: DownstreamReader,
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag'>,
) {
  const read = prepared(
    `downstream${capabilities.partitionedTimetables ? '_partitioned' : ''}${capabilities.maxRunsFlag ? '_flag' : ''}`,
    `select ${reader.factsSql({assetIds: '$1::int[]', aliasIds: '$2::int[]', hashes: '$3::text[]', names: '$4::text[]', uris: '$5::text[]', noAliases: '$6::text[]'})} as facts`,
  )
  return async (ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]): Promise<DownstreamFacts[]> => {
    if (assetIds.length === 0) return []
    const known = reader.known()
    const [row] = await ex.query<{facts: FactsEntry[]}>(
      read([[...new Set(assetIds)], [...new Set(aliasIds)], known.hashes, known.names, known.uris, known.noAliases]),
    )
    return reader.facts(row!.facts, known)
  }
}

/** The facts' scalar subquery, with or without the 3.2+ partitioned timetable column. */
function factsText(
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag'>,
  p: DownstreamParams,
  here?: FactsHere,
): string {
  const partitioned = capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  // 3.2+ `dags_needing_dagruns` keeps a DAG whose flag is false (`exceeds_max_non_backfill ==
  // expression.false()`): the column is NOT NULL, so true is the only excluding value.
  const maxRunsFlag = capabilities.maxRunsFlag ? 'd.exceeds_max_non_backfill is true' : 'false'
  // The assets of a consumer's queue rows: those the statement's snapshot shows, and those it
  // queues itself (queuedHere), one definition for the assets listed and the aliases checked.
  const queueAssets = here
    ? `select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
                   union select h.asset_id from (${here.queuedHere}) as h where h.dag_id = d.dag_id`
    : `select distinct q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id`
  const links = here?.linksHere
    ? `(select alias_id, asset_id from asset_alias_asset union select h.alias_id, h.asset_id from (${here.linksHere}) as h)`
    : 'asset_alias_asset'
  const consumers = here
    ? `${here.consumersHere}
       union
       ${consumerDagsOf(p.assetIds, p.aliasIds)}`
    : consumerDagsOf(p.assetIds, p.aliasIds)
  return `(with consumer_dag as materialized (
       -- Materialized: the consumers first (a handful), then each one's facts, never every DAG's.
       select d.* from dag d where d.dag_id in (${consumers})
     )
     -- The scheduler keeps a DAG whose flag is false (is_paused == false(), ~is_stale,
     -- has_import_errors == false()): a NULL flag excludes it as much as true does.
     select coalesce(json_agg(json_build_object(
              'dag_id', d.dag_id, 'paused', d.is_paused is not false, 'stale', d.is_stale is not false,
              'import_errors', d.has_import_errors is not false, 'max_active_runs', d.max_active_runs,
              'active_runs', (select count(*) from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')),
              'partitioned', ${partitioned}, 'max_runs_flag', ${maxRunsFlag},
              'dag_hash', sd.dag_hash, 'timetable', sd.timetable, 'data_compressed', encode(sd.data_compressed, 'base64'),
              'names', queue_rows.names, 'uris', queue_rows.uris, 'active', queue_rows.active,
              -- From the alias links (few), each checked against the DAG's queue by its key; not
              -- read for a known condition without an alias leaf, which never looks at them.
              'aliases', case when sd.dag_hash = any(${p.noAliases}) then '{}'::varchar[]
                              else array(select distinct al.name from asset_alias al join ${links} l on l.alias_id = al.id
                                          where l.asset_id in (${queueAssets}) order by 1) end
            ) order by d.dag_id), '[]')
       from consumer_dag d
       -- A serialized DAG whose hash the process has seen is not read again: reading its timetable
       -- parses the whole document (a json column), megabytes for a large DAG.
       left join lateral (
         select s.dag_hash,
                case when s.dag_hash = any(${p.hashes}) then null else s.data -> 'dag' -> 'timetable' end as timetable,
                case when s.dag_hash = any(${p.hashes}) or s.data is not null then null else s.data_compressed end as data_compressed
           from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
       ) as sd on true
       -- Three arrays rather than one object per queued asset: a consumer of hundreds of assets
       -- costs a fraction as much to build and to parse.
       cross join lateral (
         select coalesce(array_agg(a.name order by a.id), '{}') as names, coalesce(array_agg(a.uri order by a.id), '{}') as uris,
                coalesce(array_agg(aa.name is not null order by a.id), '{}') as active
           from (${queueAssets}) as q
           join asset a on a.id = q.asset_id
           left join asset_active aa on aa.name = a.name and aa.uri = a.uri
          -- Of a known condition, only the rows it can match (by name or uri); of a new one, all.
          where not coalesce(sd.dag_hash = any(${p.hashes}), false) or a.name = any(${p.names}) or a.uri = any(${p.uris})
       ) as queue_rows)`
}

/** Serialized DAG conditions kept per process (each a few hundred bytes). */
const cachedConditions = 256

/**
 * The downstream preview of one store: its SQL and its cache of conditions, shared by a write's
 * queue statement (registration) and the plan's read (readDownstream).
 */
export interface DownstreamPreview {
  reader: DownstreamReader
  readDownstream: DownstreamStore['readDownstream']
}

export function downstreamPreview(
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag'>,
): DownstreamPreview {
  const reader = downstreamReader(capabilities)
  return {reader, readDownstream: readDownstream(reader, capabilities)}
}
