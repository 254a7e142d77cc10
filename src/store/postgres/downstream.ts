import {leavesOf, parseCondition, type ConditionLeaf} from '../../airflow/assetCondition.js'
import type {Capabilities} from '../../airflow/schema.js'
import {storedDagJson} from './storedDag.js'
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
 * `dags_needing_dagruns` excludes a DAG on, asset-triggered ones included (the clause is in
 * 3.2.0's `DagModel.dags_needing_dagruns`, airflow/models/dag.py, as in 3.2.2 and 3.3.0; the column
 * is the migration's own).
 *
 * Two statements embed it: the queue statement (`queueConsumers`, the preview of a write, read in
 * the same statement that queues the item's consumers) and `readDownstream` (the read-only plan).
 * Both share one cache of conditions by serialized DAG hash, so a DAG's condition is parsed once
 * per process, and one of asset keys by id, so the queue rows travel as ids. They read a DAG's
 * queue rows only where its condition can use them (issue 44: docs/bench.md, "The preview at the
 * price of a lookup").
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
  /** What to bind for `hashes`, `noLeaves`, `noRefs`, `noAliases` and `probes`, and the snapshot of the cache they describe. */
  known(): Known
  /**
   * The array's entries as facts, their conditions from the snapshot or parsed and cached, their
   * queued asset ids as the (name, uri) the condition is evaluated on: ids the process has not
   * seen yet are read in one statement (`ex`), once.
   */
  facts(ex: Executor, entries: readonly FactsEntry[], known: Known): Promise<DownstreamFacts[]>
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
  noLeaves: string
  noRefs: string
  noAliases: string
  /** From 3.4 only (queueShape per_event): the text of any other release does not name it. */
  probes?: string
}

interface CachedCondition {
  condition: unknown
  /** Whether the condition has a leaf at all (none: its verdict is the same whatever is queued; an empty AND is met). */
  leaves: boolean
  /** Whether it has an `Asset.ref` leaf (only a ref asks whether a queued asset is active). */
  refs: boolean
  /** Whether it has an alias leaf. */
  aliases: boolean
  /**
   * From 3.4, for a condition of a few plain asset leaves: their (name, uri), so that the statement
   * asks the queue whether each is queued, where it would read every row (one per event).
   */
  probes?: Array<[string, string]>
}

export interface Known {
  snapshot: ReadonlyMap<string, CachedCondition>
  hashes: string[]
  /** The hashes whose conditions have no leaf: their DAGs' queue rows are not read. */
  noLeaves: string[]
  /** The hashes whose conditions have no ref leaf: whether their queued assets are active is not read. */
  noRefs: string[]
  /** The hashes whose conditions have no alias leaf: their DAGs' aliases are not read. */
  noAliases: string[]
  /** JSON: per hash whose leaves are probed, their [name, uri] pairs (`{}` for none). */
  probes: string
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
  return timetableOfRow(row)?.__var?.asset_condition
}

/** A row's timetable as the DAG processor serialized it; a compressed serialized DAG is inflated for it. */
export function timetableOfRow(
  row: Pick<SchedulerDagRow, 'timetable' | 'data_compressed'>,
): SchedulerDagRow['timetable'] | undefined {
  return row.data_compressed
    ? (
        storedDagJson(null, Buffer.from(row.data_compressed, 'base64')) as
          {dag?: {timetable?: SchedulerDagRow['timetable']}} | undefined
      )?.dag?.timetable
    : row.timetable
}

/** One entry of factsSql's array, as json_build_object writes it. */
export interface FactsEntry extends SchedulerDagRow {
  dag_hash: string | null
  /** The asset ids of its queue rows, in no order, an id possibly twice (none read when its condition cannot use them). */
  queued: number[]
  /** Of those, the ones not active (read only for a condition with a ref leaf, or one not known yet). */
  inactive: number[]
  aliases: string[]
}

type AssetLeaf = Extract<ConditionLeaf, {kind: 'asset'}>

/** A queued asset as the evaluation reads it; one object per asset id and activity, shared by every item. */
type QueuedAsset = DownstreamFacts['queued']['assets'][number]

export function downstreamReader(
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag' | 'queueShape'>,
  limits: {assets: number} = {assets: cachedAssets},
): DownstreamReader {
  // Conditions by serialized DAG hash, with what of the queue they can use (bounded).
  const conditions = new Map<string, CachedCondition>()
  // An asset's (name, uri) by id: its identity, which Airflow never changes (a new asset is a new
  // row, a new id). The statement ships ids, a few bytes each, where it shipped both strings of
  // every queued asset; each id's strings are read once per process (bounded).
  const assets: AssetKeys = new Map()
  const resolveAssets = assetKeysStatement()
  return {
    factsSql: (params, here) => factsText(capabilities, params, here),
    known() {
      // What a statement was told is known: items running at once share the cache, and one may
      // evict an entry while another's statement runs.
      const snapshot = new Map(conditions)
      const entries = [...snapshot]
      return {
        snapshot,
        hashes: [...snapshot.keys()],
        noLeaves: entries.flatMap(([hash, c]) => (c.leaves ? [] : [hash])),
        noRefs: entries.flatMap(([hash, c]) => (c.refs ? [] : [hash])),
        noAliases: entries.flatMap(([hash, c]) => (c.aliases ? [] : [hash])),
        probes: JSON.stringify(
          Object.fromEntries(entries.flatMap(([hash, c]) => (c.probes ? [[hash, c.probes]] : []))),
        ),
      }
    },
    async facts(ex, entries, known) {
      // Plain loops: a consumer of tens of thousands of queued assets goes through here per item.
      // Decided here, not in an awaited call: a resumption one tick later could follow another
      // item's, whose inserts may evict an id this one needs from the shared cache.
      const here = allCached(entries, assets)
        ? assets
        : await assetKeys(ex, resolveAssets, entries, assets, limits.assets)
      return entries.map((row): DownstreamFacts => {
        const inactive = row.inactive.length > 0 ? new Set(row.inactive) : undefined
        const queued: QueuedAsset[] = []
        for (const id of row.queued) {
          // An asset deleted between the statement and the lookup (its queue rows go with it): not queued.
          const asset = here.get(id)
          if (asset) queued.push(inactive?.has(id) ? asset.inactive : asset.active)
        }
        return {
          dagId: row.dag_id,
          paused: row.paused,
          stale: row.stale,
          importErrors: row.import_errors,
          maxActiveRuns: row.max_active_runs,
          activeRuns: row.active_runs,
          partitioned: row.partitioned,
          maxRunsFlag: row.max_runs_flag,
          condition: row.dag_hash === null ? undefined : conditionOf(known, row),
          queued: {assets: queued, aliases: row.aliases},
        }
      })
    },
  }

  function conditionOf(known: Known, row: FactsEntry): unknown {
    // Cached by this statement's snapshot, or since by an item running beside it: one object per
    // hash, so the batch's items share one tree (and its indexes).
    const cached = known.snapshot.get(row.dag_hash!) ?? conditions.get(row.dag_hash!)
    if (cached) return cached.condition
    const condition = conditionOfRow(row)
    if (conditions.size >= cachedConditions) conditions.delete(conditions.keys().next().value!)
    // From the tree the evaluation walks, so what is skipped is exactly what it never looks at.
    const leaves = leavesOf(parseCondition(condition))
    conditions.set(row.dag_hash!, {
      condition,
      leaves: leaves.length > 0,
      refs: leaves.some((leaf) => leaf.kind === 'ref'),
      aliases: leaves.some((leaf) => leaf.kind === 'alias'),
      ...(capabilities.queueShape === 'per_event' && probeable(leaves)
        ? {probes: leaves.map((leaf): [string, string] => [leaf.name, leaf.uri])}
        : {}),
    })
    return condition
  }
}

type AssetKeys = Map<number, {active: QueuedAsset; inactive: QueuedAsset}>

/** Whether every asset id the entries queue is cached: then the cache itself serves, read at once. */
function allCached(entries: readonly FactsEntry[], assets: AssetKeys): boolean {
  return entries.every((row) => row.queued.every((id) => assets.has(id)))
}

/**
 * The (name, uri) of every asset id the entries queue, from the process's cache or read in one
 * statement (then cached, up to `limit`): this call's own view of the ids it needs, as the shared
 * cache may evict an entry (this call's inserts, or another item's at the same time) while the
 * statement runs, and a queued asset missing there would read as not queued.
 */
async function assetKeys(
  ex: Executor,
  resolveAssets: ReturnType<typeof assetKeysStatement>,
  entries: readonly FactsEntry[],
  assets: AssetKeys,
  limit: number,
): Promise<AssetKeys> {
  const here: AssetKeys = new Map()
  const missing = new Set<number>()
  for (const row of entries)
    for (const id of row.queued) {
      if (here.has(id)) continue
      const cached = assets.get(id)
      if (cached) here.set(id, cached)
      else missing.add(id)
    }
  if (missing.size === 0) return here
  for (const row of await ex.query<{id: number; name: string; uri: string}>(resolveAssets([[...missing]]))) {
    const key = {
      active: {name: row.name, uri: row.uri, active: true, id: row.id},
      inactive: {name: row.name, uri: row.uri, active: false, id: row.id},
    }
    here.set(row.id, key)
    if (assets.size >= limit) assets.delete(assets.keys().next().value!)
    assets.set(row.id, key)
  }
  return here
}

const assetKeysStatement = () =>
  prepared('downstream_asset_keys', 'select id, name, uri from asset where id = any($1::int[])')

/** A condition of a few plain assets: one whose leaves the statement can ask the queue about one by one. */
function probeable(leaves: readonly ConditionLeaf[]): leaves is AssetLeaf[] {
  return leaves.length > 0 && leaves.length <= probedLeaves && leaves.every((leaf) => leaf.kind === 'asset')
}

/** The read-only plan's preview: the facts alone, one statement (a write reads them in its queue statement). */
function readDownstream(
  reader: DownstreamReader,
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag' | 'queueShape'>,
) {
  const perEvent = capabilities.queueShape === 'per_event'
  const read = prepared(
    `downstream${capabilities.partitionedTimetables ? '_partitioned' : ''}${capabilities.maxRunsFlag ? '_flag' : ''}_${capabilities.queueShape}`,
    `select ${reader.factsSql({assetIds: '$1::int[]', aliasIds: '$2::int[]', hashes: '$3::text[]', noLeaves: '$4::text[]', noRefs: '$5::text[]', noAliases: '$6::text[]', ...(perEvent ? {probes: '$7::jsonb'} : {})})} as facts`,
  )
  return async (ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]): Promise<DownstreamFacts[]> => {
    if (assetIds.length === 0) return []
    const known = reader.known()
    const [row] = await ex.query<{facts: FactsEntry[]}>(
      read([
        [...new Set(assetIds)],
        [...new Set(aliasIds)],
        known.hashes,
        known.noLeaves,
        known.noRefs,
        known.noAliases,
        // Named only by 3.4's text: a parameter the text does not name is refused.
        ...(perEvent ? [known.probes] : []),
      ]),
    )
    return reader.facts(ex, row!.facts, known)
  }
}

/** The facts' scalar subquery, with or without the 3.2+ partitioned timetable column. */
function factsText(
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag' | 'queueShape'>,
  p: DownstreamParams,
  here?: FactsHere,
): string {
  const partitioned = capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  // 3.2+ `dags_needing_dagruns` keeps a DAG whose flag is false (`exceeds_max_non_backfill ==
  // expression.false()`): the column is NOT NULL, so true is the only excluding value.
  const maxRunsFlag = capabilities.maxRunsFlag ? 'd.exceeds_max_non_backfill is true' : 'false'
  // The assets of a consumer's queue rows: those the statement's snapshot shows, and those it
  // queues itself (queuedHere), one definition for the assets listed and the aliases checked.
  // UNION ALL, unsorted: the evaluation reads them as a set, and deduplicating and sorting tens of
  // thousands of rows per consumer cost more than reading them (an asset queued twice, by an
  // earlier statement and by this one, or per event from 3.4, is the same asset to it).
  const queueAssets = here
    ? `select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id
                   union all select h.asset_id from (${here.queuedHere}) as h where h.dag_id = d.dag_id`
    : `select q.asset_id from asset_dag_run_queue q where q.target_dag_id = d.dag_id`
  const links = here?.linksHere
    ? `(select alias_id, asset_id from asset_alias_asset union select h.alias_id, h.asset_id from (${here.linksHere}) as h)`
    : 'asset_alias_asset'
  const consumers = here
    ? `${here.consumersHere}
       union
       ${consumerDagsOf(p.assetIds, p.aliasIds)}`
    : consumerDagsOf(p.assetIds, p.aliasIds)
  // Whether a DAG's queue rows can change its verdict: not without a serialized DAG (no
  // condition), nor for a known condition with no leaf, nor for a partitioned timetable (not
  // evaluated); there they are not read at all.
  const readsQueue = `sd.dag_hash is not null and not coalesce(sd.dag_hash = any(${p.noLeaves}), false) and not ${partitioned}`
  // From 3.4 a consumer's rows are one per pending event, so they grow with events, not with its
  // condition: a condition of a few plain assets asks the queue whether each leaf is queued
  // (idx_adrq_asset_id, the first row for this DAG answers), any other reads the distinct assets.
  const probes = p.probes ?? `'{}'::jsonb`
  const queued =
    capabilities.queueShape === 'per_event'
      ? // Each leaf by its (name, uri) through idx_asset_name_uri_unique, so an asset created or
        // re-created since the condition was cached is found as the scheduler finds it. No OR
        // beside the probe: under an OR PostgreSQL plans it as a subplan, a sequential scan of the
        // queue per leaf (82 ms against 0.3 ms for the semi-join, at 100k rows).
        `case when ${probes} -> sd.dag_hash is not null
              then array(select a.id from jsonb_array_elements(${probes} -> sd.dag_hash) as l(key)
                           join asset a on a.name = l.key ->> 0 and a.uri = l.key ->> 1
                          where exists (select 1 from asset_dag_run_queue q where q.asset_id = a.id and q.target_dag_id = d.dag_id)${
                            here
                              ? `
                         union all select h.asset_id from (${here.queuedHere}) as h where h.dag_id = d.dag_id`
                              : ''
                          })
              else array(select distinct q.asset_id from (${queueAssets}) as q) end`
      : `array(${queueAssets})`
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
              'queued', queue_rows.queued, 'inactive', queue_rows.inactive,
              -- From the alias links (few), each checked against the DAG's queue by its key; not
              -- read for a known condition without an alias leaf, which never looks at them.
              'aliases', case when not (${readsQueue}) or sd.dag_hash = any(${p.noAliases}) then '{}'::varchar[]
                              else array(select distinct al.name from asset_alias al join ${links} l on l.alias_id = al.id
                                          where l.asset_id in (${queueAssets}) order by 1) end
            ) order by d.dag_id), '[]')
       from consumer_dag d
       -- A serialized DAG whose hash the process has seen is not read again: reading its timetable
       -- reads the whole document (json, parsed; jsonb from 3.2, detoasted), megabytes for a large DAG.
       left join lateral (
         select s.dag_hash,
                case when s.dag_hash = any(${p.hashes}) then null else s.data -> 'dag' -> 'timetable' end as timetable,
                case when s.dag_hash = any(${p.hashes}) or s.data is not null then null else s.data_compressed end as data_compressed
           from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
       ) as sd on true
       -- The queued assets as ids (a few bytes each; the process reads each id's name and uri once),
       -- no string of the condition bound and none of the queue's matched in SQL. Whether each is
       -- active only for a condition with a ref leaf (or one the process has not parsed yet).
       cross join lateral (
         select case when ${readsQueue} then ${queued} else '{}'::int[] end as queued,
                case when ${readsQueue} and not coalesce(sd.dag_hash = any(${p.noRefs}), false)
                     then array(select q.asset_id from (${queueAssets}) as q join asset a on a.id = q.asset_id
                                 where not exists (select 1 from asset_active aa where aa.name = a.name and aa.uri = a.uri))
                     else '{}'::int[] end as inactive
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
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'maxRunsFlag' | 'queueShape'>,
): DownstreamPreview {
  const reader = downstreamReader(capabilities)
  return {reader, readDownstream: readDownstream(reader, capabilities)}
}

/**
 * The most leaves a condition has for the statement to probe each (3.4's queue): a probe is an
 * index lookup, so a handful cost less than reading a DAG whose queue holds a row per event.
 */
const probedLeaves = 64

/** Asset keys kept per process (a few hundred bytes each): 200,000 is some tens of MB at most. */
const cachedAssets = 200_000
