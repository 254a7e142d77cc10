import {leavesOf, parseCondition} from '../../airflow/assetCondition.js'
import {partitionMappers, rollupFingerprint} from '../../airflow/rollupFingerprint.js'
import type {Capabilities} from '../../airflow/schema.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {
  ExplainAlias,
  ExplainAsset,
  ExplainConsumption,
  ExplainDag,
  ExplainEvent,
  ExplainPage,
  ExplainPartition,
  ExplainProducer,
  ExplainRun,
  ExplainSelection,
  ExplainWindow,
} from '../families/downstream.js'
import {timetableOfRow, type DownstreamPreview, type SchedulerDagRow} from './downstream.js'
import {storedDagJson} from './storedDag.js'
import type {DownstreamStore} from '../families/downstream.js'

/**
 * What `airlock explain` reads, on SELECT alone, in a bounded number of statements per page of
 * DAGs (never one per DAG or per leaf): the page's DAG ids, their scheduler facts and queue rows,
 * the assets and aliases their conditions name, their last asset-triggered runs, and (3.2+) their
 * pending partition runs. What each mirrors:
 *
 * - the facts are what `DagModel.dags_needing_dagruns` (airflow-core/src/airflow/models/dag.py)
 *   reads: the DAG's queue rows (`asset_dag_run_queue`), its latest serialized DAG's
 *   `timetable.asset_condition`, the exclusions (`is_paused`, `is_stale`, `has_import_errors`,
 *   from 3.2 `exceeds_max_non_backfill`) and its QUEUED and RUNNING runs of every type against
 *   `max_active_runs` (the `exclusion_list` query; backfill runs count there);
 * - the event that queued a row: from 3.4 the row's own `asset_event_id`; before, the asset's
 *   latest event stamped at or before the row's `created_at` (the row is written in the
 *   transaction that writes the event, `AssetManager.register_asset_change`);
 * - the runs are those `_create_dag_runs_asset_triggered` creates (`run_type` 'asset_triggered')
 *   with the events `dagrun_asset_event` says each consumed;
 * - partition runs (3.2+): `asset_partition_dag_run` rows with no `created_dag_run_id` are the
 *   pending ones, and `partitioned_asset_key_log` says which asset events (and source keys) each
 *   received (`AssetManager._queue_partitioned_dags`; the scheduler's step that turns them into
 *   runs is `SchedulerJobRunner._create_dagruns_for_partitioned_asset_dags`,
 *   airflow/jobs/scheduler_job_runner.py; 3.3.0–3.3.2's counts key log rows of active assets only
 *   and compares each row's `rollup_fingerprint`, read here for explainDag).
 */
function explainStatements(
  capabilities: Pick<
    Capabilities,
    'partitionedTimetables' | 'partitionStep' | 'maxRunsFlag' | 'queueShape' | 'eventWindow'
  >,
) {
  const partitioned = capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  const maxRunsFlag = capabilities.maxRunsFlag ? 'd.exceeds_max_non_backfill is true' : 'false'
  // The asset-scheduled DAGs after $1: the next $2 DAG ids of each reference table, read off its
  // dag_id index (so a page reads the references of its own DAGs, not every reference for every
  // DAG: an EXISTS per DAG row was planned as a sequential scan of the references, for DAGs that
  // have none too), and (3.2+) the partitioned timetables.
  const nextOf = (table: string) =>
    `(select r.dag_id from ${table} r where r.dag_id > $1 group by r.dag_id order by r.dag_id limit $2)`
  const pageAll = prepared(
    `explain_dag_page_all${capabilities.partitionedTimetables ? '_partitioned' : ''}`,
    `select d.dag_id from (
        ${nextOf('dag_schedule_asset_reference')}
        union ${nextOf('dag_schedule_asset_alias_reference')}
        union ${nextOf('dag_schedule_asset_name_reference')}
        union ${nextOf('dag_schedule_asset_uri_reference')}
        ${capabilities.partitionedTimetables ? 'union (select p.dag_id from dag p where p.dag_id > $1 and p.timetable_partitioned order by p.dag_id limit $2)' : ''}
      ) as s
      join dag d on d.dag_id = s.dag_id
      order by d.dag_id
      limit $2`,
  )
  // Every consumer of an asset named by its name or uri: the four reference kinds, an alias
  // linked to it included.
  const consumersOf = `(select r.dag_id from dag_schedule_asset_reference r join asset a on a.id = r.asset_id
                        where a.name = any($3::text[]) or a.uri = any($3::text[])
                 union select r.dag_id from dag_schedule_asset_name_reference r where r.name = any($3::text[])
                 union select r.dag_id from dag_schedule_asset_uri_reference r where r.uri = any($3::text[])
                 union select r.dag_id from dag_schedule_asset_alias_reference r
                         join asset_alias_asset l on l.alias_id = r.alias_id join asset a on a.id = l.asset_id
                        where a.name = any($3::text[]) or a.uri = any($3::text[]))`
  const page = prepared(
    'explain_dag_page',
    `select d.dag_id from dag d
      where d.dag_id > $1
        and case $2::text when 'dags' then d.dag_id = any($4::text[])
                          else d.dag_id in ${consumersOf} end
      order by d.dag_id
      limit $5`,
  )
  const eventJson = (e: string) =>
    `json_build_object('id', ${e}.id, 'timestamp', ${e}."timestamp", 'source_dag_id', ${e}.source_dag_id, 'source_run_id', ${e}.source_run_id, 'source_task_id', ${e}.source_task_id, 'source_map_index', ${e}.source_map_index)`
  const queuedBy =
    capabilities.queueShape === 'per_event'
      ? `select e.* from asset_event e where e.id = q.asset_event_id`
      : `select e.* from asset_event e where e.asset_id = q.asset_id and e."timestamp" <= q.created_at
          order by e."timestamp" desc, e.id desc limit 1`
  const facts = prepared(
    `explain_dags${capabilities.partitionedTimetables ? '_partitioned' : ''}${capabilities.maxRunsFlag ? '_flag' : ''}_${capabilities.queueShape}`,
    `select d.dag_id, d.is_paused is not false as paused, d.is_stale is not false as stale,
            d.has_import_errors is not false as import_errors, d.max_active_runs,
            d.asset_expression is not null as has_asset_expression,
            (select count(*)::int from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')) as active_runs,
            ${maxRunsFlag} as max_runs_flag, ${partitioned} as partitioned,
            sd.timetable, sd.catchup, encode(sd.data_compressed, 'base64') as data_compressed, sd.dag_hash is not null as serialized,
            coalesce((select json_agg(json_build_object(
                        'asset_id', q.asset_id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null,
                        'created_at', q.created_at, 'event', (select ${eventJson('e')} from (${queuedBy}) as e))
                      order by q.created_at, q.asset_id)
                       from asset_dag_run_queue q
                       left join asset a on a.id = q.asset_id
                       left join asset_active aa on aa.name = a.name and aa.uri = a.uri
                      where q.target_dag_id = d.dag_id), '[]') as queue
       from dag d
       -- The latest serialized DAG, as the scheduler loads it (SerializedDagModel by created_at).
       left join lateral (
         select s.dag_hash, s.data -> 'dag' -> 'timetable' as timetable, (s.data -> 'dag' ->> 'catchup') = 'true' as catchup,
                case when s.data is null then s.data_compressed end as data_compressed
           from serialized_dag s where s.dag_id = d.dag_id order by s.created_at desc limit 1
       ) as sd on true
      where d.dag_id = any($1::text[])
      order by d.dag_id`,
  )
  // The assets without their last events: a queued leaf shows the event that queued it, so only
  // the missing ones need theirs (lastEvents), a few of a consumer's thousands. The names and
  // uris are joined, not tested with = ANY: from its sixth page a long --all runs this on a
  // generic plan, which cannot hash an array parameter and would test every asset row against
  // every name (0.8 s a page at 10,000 leaves, 64 s at 100,000).
  const assets = prepared(
    'explain_assets',
    `select a.id, a.name, a.uri, aa.name is not null as active
       from asset a
       left join asset_active aa on aa.name = a.name and aa.uri = a.uri
      where a.id in (select n.id from asset n where n.name in (select unnest($1::text[]))
                     union all
                     select u.id from asset u where u.uri in (select unnest($2::text[])))
      order by a.id`,
  )
  const aliases = prepared(
    'explain_aliases',
    `select al.name,
            array(select l.asset_id from asset_alias_asset l where l.alias_id = al.id order by 1) as asset_ids,
            (select ${eventJson('e')} from asset_alias_asset_event l join asset_event e on e.id = l.event_id
              where l.alias_id = al.id order by e."timestamp" desc, e.id desc limit 1) as last_event
       from asset_alias al
      where al.name = any($1::text[])
      order by al.name`,
  )
  const assetsById = prepared(
    'explain_assets_by_id',
    `select a.id, a.name, a.uri, aa.name is not null as active
       from asset a
       left join asset_active aa on aa.name = a.name and aa.uri = a.uri
      where a.id = any($1::int[])
      order by a.id`,
  )
  const lastEvents = prepared(
    'explain_last_events',
    `select a.id as asset_id,
            (select ${eventJson('e')} from asset_event e where e.asset_id = a.id order by e."timestamp" desc, e.id desc limit 1) as event
       from unnest($1::int[]) as a(id)`,
  )
  const runs = prepared(
    'explain_runs',
    `select d.dag_id, r.run_id, r.state, r.run_after, r.queued_at,
            array(select c.event_id from dagrun_asset_event c where c.dag_run_id = r.id order by 1) as event_ids
       from unnest($1::text[]) as d(dag_id)
       cross join lateral (
         select r.* from dag_run r where r.dag_id = d.dag_id and r.run_type = 'asset_triggered'
          order by r.run_after desc, r.id desc limit $2
       ) as r
      order by d.dag_id, r.run_after desc, r.id desc`,
  )
  // Which runs of the page's DAGs consumed the missing leaves' last events: an event a run
  // consumed is done with; one no run consumed and no queue row holds was never queued for the
  // DAG (`AssetManager.register_asset_change`, airflow/assets/manager.py, queues no paused DAG:
  // 3.0.6 for its asset and alias references, from 3.1 for Asset.ref ones too).
  const consumed = prepared(
    'explain_consumed',
    `select r.dag_id, c.event_id, r.run_id
       from dagrun_asset_event c
       join dag_run r on r.id = c.dag_run_id
      where c.event_id = any($1::int[]) and r.dag_id = any($2::text[])
      order by r.dag_id, c.event_id, r.run_after, r.id`,
  )
  // The tasks that emit each missing asset (`task_outlet_asset_reference`, written by the DAG
  // processor from each task's outlets) and what an operator checks next: their DAG's flags and
  // its latest run.
  const producers = prepared(
    'explain_producers',
    `select t.asset_id, t.dag_id, t.task_id,
            d.is_paused is not false as paused, d.is_stale is not false as stale,
            d.has_import_errors is not false as import_errors,
            lr.run_id as latest_run_id, lr.state as latest_run_state
       from task_outlet_asset_reference t
       left join dag d on d.dag_id = t.dag_id
       left join lateral (
         select r.run_id, r.state from dag_run r where r.dag_id = t.dag_id
          order by r.run_after desc, r.id desc limit 1
       ) as lr on true
      where t.asset_id = any($1::int[])
      order by t.asset_id, t.dag_id, t.task_id`,
  )
  // Before 3.4, the window of each DAG's next asset-triggered run, as
  // `SchedulerJobRunner._create_dag_runs_asset_triggered` (airflow/jobs/scheduler_job_runner.py)
  // takes it: triggered_date is the newest queue row's created_at (`triggered_date_by_dag`,
  // `DagModel.dags_needing_dagruns`; from 3.2 the same rows read again locked); the events are
  // those of the DAG's `dag_schedule_asset_reference` assets (3.1+: or linked to one of its
  // `dag_schedule_asset_alias_reference` aliases through asset_alias_asset_event) stamped in
  // (coalesce(previous asset-triggered run_after before triggered_date[, 3.3 with catchup off:
  // min(dag_schedule_asset_reference.created_at)], -infinity), triggered_date]. All compared in
  // SQL to the microsecond. The events after the window (with no queue row: after the previous
  // run) of an asset or alias the DAG referenced when they came wrote no queue row (an existing
  // one is kept, `on_conflict_do_nothing` in `AssetManager._queue_dagruns`): stranded.
  const aliasWindow = capabilities.eventWindow !== 'assets'
  const catchupFloor =
    capabilities.eventWindow === 'catchup_floor'
      ? `case when not d.catchup then (select min(r.created_at) from dag_schedule_asset_reference r where r.dag_id = d.dag_id) end,`
      : ''
  const us = (t: string) => `to_char(${t} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
  const firstOf = (which: string) =>
    `coalesce((select json_agg(j.event order by j."timestamp", j.id)
                 from (select ev.id, ev."timestamp", ${eventJson('ev')} as event from ev
                        where ev.dag_id = w.dag_id and ev.${which} order by ev."timestamp", ev.id limit $3) as j), '[]')`
  const windows =
    capabilities.queueShape === 'per_asset'
      ? prepared(
          `explain_windows${aliasWindow ? '_aliases' : ''}${catchupFloor ? '_catchup_floor' : ''}`,
          `with d as (
             select d.dag_id, d.catchup, t.triggered,
                    (select max(r.run_after) from dag_run r
                      where r.dag_id = d.dag_id and r.run_type = 'asset_triggered'
                        and r.run_after < coalesce(t.triggered, 'infinity')) as previous
               from unnest($1::text[], $2::boolean[]) as d(dag_id, catchup)
               cross join lateral (
                 select max(q.created_at) as triggered from asset_dag_run_queue q where q.target_dag_id = d.dag_id
               ) as t
           ), w as (
             select d.*, coalesce(d.previous, ${catchupFloor} '-infinity'::timestamptz) as after from d
           ), ev as (
             select w.dag_id, x.id, x."timestamp", x.source_dag_id, x.source_run_id, x.source_task_id, x.source_map_index,
                    w.triggered is not null and x."timestamp" <= w.triggered as consumed,
                    x."timestamp" > coalesce(w.triggered, w.previous, '-infinity')
                      and (exists (select 1 from dag_schedule_asset_reference r
                                    where r.dag_id = w.dag_id and r.asset_id = x.asset_id and r.created_at < x."timestamp")
                           ${
                             aliasWindow
                               ? `or exists (select 1 from asset_alias_asset_event l
                                               join dag_schedule_asset_alias_reference r on r.alias_id = l.alias_id
                                              where l.event_id = x.id and r.dag_id = w.dag_id and r.created_at < x."timestamp")`
                               : ''
                           }) as stranded
               from w
               cross join lateral (
                 select e.id from asset_event e
                  where e.asset_id in (select r.asset_id from dag_schedule_asset_reference r where r.dag_id = w.dag_id)
                    and e."timestamp" > w.after
                 ${
                   aliasWindow
                     ? `union
                 select l.event_id from asset_alias_asset_event l
                   join dag_schedule_asset_alias_reference r on r.alias_id = l.alias_id
                  where r.dag_id = w.dag_id`
                     : ''
                 }
               ) as ids
               join asset_event x on x.id = ids.id and x."timestamp" > w.after
           )
           select w.dag_id, ${us('w.triggered')} as triggered, ${us("nullif(w.after, '-infinity')")} as after,
                  ${us('w.previous')} as previous,
                  (select count(*)::int from ev where ev.dag_id = w.dag_id and ev.consumed) as consumed_count,
                  ${firstOf('consumed')} as consumed,
                  (select count(*)::int from ev where ev.dag_id = w.dag_id and ev.stranded) as stranded_count,
                  ${firstOf('stranded')} as stranded
             from w
            order by w.dag_id`,
        )
      : undefined

  // 3.3's step counts no key log row of an inactive asset (`AssetModel.active.has()`) and compares
  // each row's rollup fingerprint with the timetable's (explainDag decides what that means).
  const freshActive = capabilities.partitionStep === 'fresh_active'
  const partitions = capabilities.partitionedTimetables
    ? prepared(
        `explain_partitions${freshActive ? '_fresh_active' : ''}`,
        `select p.id, p.target_dag_id, p.partition_key, p.created_at,
                ${freshActive ? 'p.rollup_fingerprint' : 'null'} as fingerprint,
                coalesce((select json_agg(json_build_object('asset_id', k.asset_id, 'source_keys', k.keys) order by k.asset_id)
                            from (select l.asset_id, array_agg(distinct l.source_partition_key order by l.source_partition_key) as keys
                                    from partitioned_asset_key_log l
                                   where l.asset_partition_dag_run_id = p.id
                                     ${
                                       freshActive
                                         ? `and exists (select 1 from asset a join asset_active aa on aa.name = a.name and aa.uri = a.uri
                                                         where a.id = l.asset_id)`
                                         : ''
                                     }
                                   group by l.asset_id) as k), '[]') as received,
                (select max(l.created_at) from partitioned_asset_key_log l
                  where l.asset_partition_dag_run_id = p.id) as last_received_at
           from asset_partition_dag_run p
          where p.target_dag_id = any($1::text[]) and p.created_dag_run_id is null
          order by p.target_dag_id, p.created_at, p.id`,
      )
    : undefined

  return {
    async readExplainLastEvents(ex: Executor, assetIds: readonly number[]): Promise<Map<number, ExplainEvent>> {
      if (assetIds.length === 0) return new Map()
      const rows = await ex.query<{asset_id: number; event: EventJson | null}>(lastEvents([[...assetIds]]))
      return new Map(rows.flatMap((row) => (row.event ? [[row.asset_id, toEvent(row.event)!] as const] : [])))
    },

    async readExplainLeafEvidence(
      ex: Executor,
      dagIds: readonly string[],
      eventIds: readonly number[],
      assetIds: readonly number[],
    ): Promise<{consumed: ExplainConsumption[]; producers: ExplainProducer[]}> {
      const consumedRows =
        eventIds.length > 0 && dagIds.length > 0
          ? await ex.query<{dag_id: string; event_id: number; run_id: string}>(consumed([[...eventIds], [...dagIds]]))
          : []
      const producerRows = assetIds.length > 0 ? await ex.query<ProducerRow>(producers([[...assetIds]])) : []
      return {
        consumed: consumedRows.map((row) => ({dagId: row.dag_id, eventId: row.event_id, runId: row.run_id})),
        producers: producerRows.map((row) => ({
          assetId: row.asset_id,
          dagId: row.dag_id,
          taskId: row.task_id,
          paused: row.paused,
          stale: row.stale,
          importErrors: row.import_errors,
          latestRun: row.latest_run_id === null ? null : {runId: row.latest_run_id, state: row.latest_run_state},
        })),
      }
    },

    async pageExplainDags(ex: Executor, selection: ExplainSelection, after: string, limit: number): Promise<string[]> {
      if (selection.kind === 'all') {
        const rows = await ex.query<{dag_id: string}>(pageAll([after, limit]))
        return rows.map((row) => row.dag_id)
      }
      const rows = await ex.query<{dag_id: string}>(
        page([
          after,
          selection.kind,
          selection.kind === 'assets' ? [...selection.assets] : [],
          selection.kind === 'dags' ? [...selection.dagIds] : [],
          limit,
        ]),
      )
      return rows.map((row) => row.dag_id)
    },

    async readExplainPage(ex: Executor, dagIds: readonly string[], runsPerDag: number): Promise<ExplainPage> {
      if (dagIds.length === 0) return {dags: [], windows: [], assets: [], aliases: [], runs: [], partitions: []}
      const dagRows = await ex.query<DagRow>(facts([[...dagIds]]))
      const dags = dagRows.map((row) => toDag(row, capabilities.partitionStep))
      // The leaves every condition of the page names, read in one statement each: the assets (by
      // name, uri or an Asset.ref's one of them) and the aliases.
      const names = new Set<string>()
      const uris = new Set<string>()
      const aliasNames = new Set<string>()
      for (const dag of dags) {
        for (const leaf of leavesOf(parseCondition(dag.condition))) {
          if (leaf.kind === 'alias') aliasNames.add(leaf.name)
          else {
            if (leaf.name !== undefined) names.add(leaf.name)
            if (leaf.uri !== undefined) uris.add(leaf.uri)
          }
        }
      }
      const aliasRows = aliasNames.size > 0 ? await ex.query<AliasRow>(aliases([[...aliasNames]])) : []
      const linked = aliasRows.flatMap((row) => row.asset_ids)
      const partitionRows = partitions ? await ex.query<PartitionRow>(partitions([[...dagIds]])) : []
      const received = partitionRows.flatMap((row) => row.received.map((r) => r.asset_id))
      const assetRows =
        names.size + uris.size + linked.length + received.length > 0
          ? await ex.query<AssetRow>(assets([[...names], [...uris]]))
          : []
      // Assets an alias links to, or a partition run received, that no leaf names by itself.
      const known = new Set(assetRows.map((row) => row.id))
      const extra = [...new Set([...linked, ...received])].filter((id) => !known.has(id))
      const extraRows = extra.length > 0 ? await ex.query<AssetRow>(assetsById([extra])) : []
      const runRows = await ex.query<RunRow>(runs([[...dagIds], runsPerDag]))
      const windowed = dags.filter((dag) => !dag.partitioned && dag.serialized)
      const windowRows =
        windows && windowed.length > 0
          ? await ex.query<WindowRow>(
              windows([windowed.map((dag) => dag.dagId), windowed.map((dag) => dag.catchup), windowEvents]),
            )
          : []
      return {
        dags,
        windows: windowRows.map((row): ExplainWindow => ({
          dagId: row.dag_id,
          triggered: row.triggered,
          after: row.after,
          previous: row.previous,
          consumed: {count: row.consumed_count, events: row.consumed.map((e) => toEvent(e)!)},
          stranded: {count: row.stranded_count, events: row.stranded.map((e) => toEvent(e)!)},
        })),
        assets: [...assetRows, ...extraRows].map(toAsset),
        aliases: aliasRows.map((row): ExplainAlias => ({
          name: row.name,
          assetIds: row.asset_ids,
          lastEvent: toEvent(row.last_event),
        })),
        runs: runRows.map((row): ExplainRun => ({
          dagId: row.dag_id,
          runId: row.run_id,
          state: row.state,
          runAfter: row.run_after,
          queuedAt: row.queued_at,
          eventIds: row.event_ids,
        })),
        partitions: partitionRows.map((row): ExplainPartition => ({
          id: row.id,
          dagId: row.target_dag_id,
          partitionKey: row.partition_key,
          createdAt: new Date(row.created_at),
          received: row.received.map((r) => ({assetId: r.asset_id, sourceKeys: r.source_keys})),
          ...(row.last_received_at !== null ? {lastReceivedAt: new Date(row.last_received_at)} : {}),
          ...(freshActive ? {fingerprint: row.fingerprint} : {}),
        })),
      }
    },
  }
}

interface EventJson {
  id: number
  timestamp: string
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
}

interface DagRow extends SchedulerDagRow {
  serialized: boolean
  has_asset_expression: boolean
  /** The serialized DAG's `catchup` (null when `data` is NULL: read from data_compressed). */
  catchup: boolean | null
  queue: Array<{
    asset_id: number
    name: string | null
    uri: string | null
    active: boolean
    created_at: string
    event: EventJson | null
  }>
}

interface WindowRow {
  dag_id: string
  triggered: string | null
  after: string | null
  previous: string | null
  consumed_count: number
  consumed: EventJson[]
  stranded_count: number
  stranded: EventJson[]
}

interface AssetRow {
  id: number
  name: string
  uri: string
  active: boolean
}

interface AliasRow {
  name: string
  asset_ids: number[]
  last_event: EventJson | null
}

interface RunRow {
  dag_id: string
  run_id: string
  state: string | null
  run_after: Date
  queued_at: Date | null
  event_ids: number[]
}

interface ProducerRow {
  asset_id: number
  dag_id: string
  task_id: string
  paused: boolean
  stale: boolean
  import_errors: boolean
  latest_run_id: string | null
  latest_run_state: string | null
}

interface PartitionRow {
  id: number
  target_dag_id: string
  partition_key: string
  created_at: string
  fingerprint: unknown
  received: Array<{asset_id: number; source_keys: string[]}>
  last_received_at: Date | string | null
}

function toEvent(row: EventJson | null): ExplainEvent | null {
  if (!row) return null
  return {
    id: row.id,
    timestamp: new Date(row.timestamp),
    sourceDagId: row.source_dag_id,
    sourceRunId: row.source_run_id,
    sourceTaskId: row.source_task_id,
    sourceMapIndex: row.source_map_index,
  }
}

function toAsset(row: AssetRow): ExplainAsset {
  return {id: row.id, name: row.name, uri: row.uri, active: row.active, lastEvent: null}
}

/** Events each window lists (consumed, stranded); the counts are whole. */
const windowEvents = 100

function toDag(row: DagRow, partitionStep: Capabilities['partitionStep']): ExplainDag {
  const timetable = timetableOfRow(row)
  const catchup = row.data_compressed
    ? (storedDagJson(null, Buffer.from(row.data_compressed, 'base64')) as {dag?: {catchup?: unknown}} | undefined)?.dag
        ?.catchup === true
    : row.catchup === true
  const fingerprint = partitionStep === 'fresh_active' && row.partitioned ? rollupFingerprint(timetable) : undefined
  const mappers = partitionStep === 'fresh_active' && row.partitioned ? partitionMappers(timetable) : undefined
  return {
    dagId: row.dag_id,
    paused: row.paused,
    stale: row.stale,
    importErrors: row.import_errors,
    maxActiveRuns: row.max_active_runs,
    activeRuns: row.active_runs,
    maxRunsFlag: row.max_runs_flag,
    partitioned: row.partitioned,
    serialized: row.serialized,
    hasAssetExpression: row.has_asset_expression,
    catchup,
    condition: timetable?.__var?.asset_condition,
    ...(fingerprint ? {rollupFingerprint: fingerprint} : {}),
    ...(mappers ? {partitionMappers: {byName: mappers.byName, fallback: mappers.fallback}} : {}),
    queue: row.queue.map((q) => ({
      assetId: q.asset_id,
      // A row whose asset is gone (no asset row): an orphan the scheduler cannot match.
      asset: q.name === null || q.uri === null ? null : {name: q.name, uri: q.uri, active: q.active},
      createdAt: new Date(q.created_at),
      event: toEvent(q.event),
    })),
  }
}

/** The downstream family: the preview's own read and `explain`'s pages. */
export function downstreamStore(
  capabilities: Pick<
    Capabilities,
    'partitionedTimetables' | 'partitionStep' | 'maxRunsFlag' | 'queueShape' | 'eventWindow'
  >,
  preview: DownstreamPreview,
): DownstreamStore {
  return {readDownstream: preview.readDownstream, ...explainStatements(capabilities)}
}
