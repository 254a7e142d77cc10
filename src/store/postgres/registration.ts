import {randomUUID} from 'node:crypto'

import type {Capabilities} from '../../airflow/schema.js'
import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import {prepared, Slots} from '../../engine/prepared.js'
import type {DownstreamPreview, DownstreamReader, FactsEntry} from './downstream.js'
import type {DownstreamFacts} from '../families/downstream.js'
import type {
  AliasEmission,
  AuditRow,
  ConsumerDecision,
  InsertedEvent,
  NewAssetEvent,
  QueuedConsumers,
  RegisteredEvent,
  ResolvedAliasEmission,
} from '../families/registration.js'
import type {RegistrationStore} from '../families/registration.js'

/**
 * A task instance's events and the audit `log` row naming them, in one statement (one round
 * trip where two ran before; the rows are the same). The events are one multi-row INSERT: the
 * asset ids travel as one array and the extras as one JSON array (each extra is one JSON value,
 * so the two zip by position in ROWS FROM; a text[] of extras cost a quoted array element and a
 * cast per event), unnested server-side. Mirrors the asset_event row of
 * `AssetManager.register_asset_change` (airflow-core/src/airflow/assets/manager.py, Airflow 3.0):
 * asset_id, extra, the source task instance's key, and the timestamp, taken from the clock at
 * insert time (UTC, never backdated: before 3.4 the scheduler ignores events older than the last
 * asset-triggered run). From 3.2 the event carries a partition_key: the run's, or from 3.3 one
 * the task chose for it (one event per key: `register_asset_changes_in_db` after apache/airflow
 * #66782).
 *
 * The log row is the one insertLogRow writes (`Log`, airflow-core/src/airflow/models/log.py), its
 * subject the events' source task instance; its extra is the caller's JSON text with the events'
 * ids written where the caller left room for them (`array_to_json` is compact, as
 * JSON.stringify). Ids come from the sequence in the order the rows are inserted (ORDER BY the
 * input's ordinality), so ordering by id is the input's order: the i-th id is the i-th event's.
 */
function insertAssetEvents(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey
  const slots = new Slots<EventSlot>()
  const param = (slot: EventSlot, type: string) => slots.ref(slot, type)
  const insert = prepared(
    'insert_events_logged',
    `with event as (
       insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partition ? ', partition_key' : ''})
       select e.asset_id, e.extra, ${param('dagId', 'varchar')}, ${param('runId', 'varchar')}, ${param('taskId', 'varchar')}, ${param('mapIndex', 'int')}, now.ts${partition ? ', e.partition_key' : ''}
         from rows from (unnest(${param('assetIds', 'int[]')}), json_array_elements(${param('extras', 'json')})${partition ? `, unnest(${param('partitionKeys', 'varchar[]')})` : ''})
              with ordinality as e(asset_id, extra, ${partition ? 'partition_key, ' : ''}n)
        cross join (select clock_timestamp() as ts) as now
        order by e.n
       returning id
     ), written as (
       -- The events' ids in the input's order, once: one JSON array (one row parses in a fraction
       -- of the time hundreds of rows take), for the audit row's extra and for the caller.
       select coalesce(array_to_json(array_agg(id order by id)), '[]') as ids from event
     ), image as (
       -- The writer's before-image (complete's: the task instance as this statement reads it, the
       -- transaction id of its row version with it), put into the extra in place of its stand-in.
       select (jsonb_build_object('version', 1, 'task_instance', to_jsonb(t) - 'xmin')
                 || coalesce(${param('imageFields', 'jsonb')}, '{}'::jsonb))::text as doc, t.xmin
         from (select ti.id, ti.xmin::text as xmin, ti.try_number, ti.state, ti.start_date, ti.end_date, ti.duration,
                      ti.updated_at, ti.next_method, ti.next_kwargs is not null as next_kwargs_set
                 from task_instance ti where ti.id = ${param('imageTi', 'uuid')}) as t
     ), audit as (
       -- Read from an aggregate over the events (one row even for none): its clock_timestamp() is
       -- read once they are written, so the row is stamped after its events, as when it was next.
       insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
       select clock_timestamp(), ${param('dagId', 'varchar')}, ${param('taskId', 'varchar')}, ${param('runId', 'varchar')}, ${param('mapIndex', 'int')},
              ${param('tryNumber', 'int')}, ${param('event', 'varchar')}, ${param('logicalDate', 'timestamptz')}, ${param('owner', 'varchar')},
              replace(${param('extraBefore', 'text')} || written.ids::text || ${param('extraAfter', 'text')},
                      ${param('imageStandIn', 'text')}, coalesce((select doc from image), ${param('imageStandIn', 'text')}))
         from written
       returning id
     )
     select audit.id as log_id, written.ids as event_ids, (select xmin from image) as image_xmin from audit, written`,
  )
  return async (
    ex: Executor,
    source: TaskInstanceKey,
    events: readonly NewAssetEvent[],
    audit: AuditRow,
  ): Promise<{events: InsertedEvent[]; logId: number; imageXmin: string | null}> => {
    const values = slots.values({
      dagId: source.dagId,
      runId: source.runId,
      taskId: source.taskId,
      mapIndex: source.mapIndex,
      assetIds: events.map((e) => e.assetId),
      extras: `[${events.map((e) => e.extra).join(',')}]`,
      partitionKeys: events.map((e) => e.partitionKey),
      tryNumber: audit.tryNumber,
      event: audit.event,
      // The instant as ISO text: node-postgres's own Date formatting costs more per call.
      logicalDate: audit.logicalDate?.toISOString() ?? null,
      owner: audit.owner,
      extraBefore: audit.extra.before,
      extraAfter: audit.extra.after,
      imageTi: audit.image?.tiId ?? null,
      imageStandIn: audit.image?.standIn ?? noStandIn,
      imageFields: audit.image ? JSON.stringify(audit.image.fields) : null,
    })
    const [row] = await ex.query<{log_id: number; event_ids: number[]; image_xmin: string | null}>(insert(values))
    return {
      logId: row!.log_id,
      imageXmin: row!.image_xmin,
      events: row!.event_ids.map((eventId, index) => ({
        eventId,
        assetId: events[index]!.assetId,
        partitionKey: partition ? events[index]!.partitionKey : null,
      })),
    }
  }
}

/** A stand-in no extra holds, for a row written without an image (replace() then changes nothing). */
const noStandIn = `no image ${randomUUID()}`

type EventSlot =
  | 'imageTi'
  | 'imageStandIn'
  | 'imageFields'
  | 'dagId'
  | 'runId'
  | 'taskId'
  | 'mapIndex'
  | 'assetIds'
  | 'extras'
  | 'partitionKeys'
  | 'tryNumber'
  | 'event'
  | 'logicalDate'
  | 'owner'
  | 'extraBefore'
  | 'extraAfter'

/** Existing assets whose name or uri is one of the given strings, by string. */
function findAssetsByNameOrUri() {
  const find = prepared(
    'assets_by_name_or_uri',
    `select s.value, a.name, a.uri
       from unnest($1::text[]) as s(value)
       join asset a on a.name = s.value
     union
     select s.value, a.name, a.uri
       from unnest($1::text[]) as s(value)
       join asset a on a.uri = s.value
     order by 1, 2, 3`,
  )
  return async (ex: Executor, strings: readonly string[]): Promise<Map<string, Array<{name: string; uri: string}>>> => {
    const found = new Map<string, Array<{name: string; uri: string}>>()
    if (strings.length === 0) return found
    for (const row of await ex.query<{value: string; name: string; uri: string}>(find([[...strings]]))) {
      found.set(row.value, [...(found.get(row.value) ?? []), {name: row.name, uri: row.uri}])
    }

    return found
  }
}

/**
 * Events emitted through an asset alias name their asset at run time, so the asset may not exist
 * yet. As `TaskInstance.register_asset_changes_in_db` does (airflow-core/src/airflow/models/
 * taskinstance.py), a missing asset gets its `asset` row only, no `asset_active` row (only the DAG
 * processor writes those), in the release's shape (`aliasAssetShape`):
 * - 'bare' (3.0, 3.1.0–3.1.4): `session.add(AssetModel(name=…, uri=…))` when
 *   `register_asset_change` finds no asset: `group` '' and `extra` {} by the model's defaults;
 * - 'declared' (apache/airflow #58038, 3.1.5 as #58712, and 3.2+):
 *   `AssetModel.from_serialized(SerializedAsset(name, uri, group="asset", extra=dest_asset_extra))`,
 *   the asset's extra as the task declared it (the first emission's, when several name it).
 * It is linked to the alias (asset_alias_asset), as `AssetManager._add_asset_alias_association`
 * does; that function also creates an alias row that does not exist yet
 * (`AssetAliasModel(name=name)`, group '' by the model's `default=str`), which airlock does for the
 * aliases it is told the task declares (`createAliases`). Three statements whatever the number of
 * emissions; emissions whose alias does not exist (and was not created) are not returned.
 */
function ensureAliasAssets(capabilities: Pick<Capabilities, 'aliasAssetShape'>) {
  const input = 'unnest($1::text[], $2::text[], $3::text[]) as i(alias_name, asset_name, asset_uri)'
  const declared = capabilities.aliasAssetShape === 'declared'
  const createAliases = prepared(
    'alias_create_aliases',
    `insert into asset_alias (name, "group")
     select distinct n.name, '' from unnest($1::text[]) as n(name) order by 1
     on conflict do nothing`,
  )
  const createAssets = prepared(
    `alias_create_assets_${capabilities.aliasAssetShape}`,
    `insert into asset (name, uri, "group", extra, created_at, updated_at)
     select wanted.asset_name, wanted.asset_uri, ${declared ? "'asset', wanted.asset_extra" : "'', '{}'::json"}, clock_timestamp(), clock_timestamp()
       from (select distinct on (i.asset_name, i.asset_uri) i.asset_name, i.asset_uri, i.asset_extra
               from rows from (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), json_array_elements($4::json))
                    with ordinality as i(alias_name, asset_name, asset_uri, asset_extra, n)
               join asset_alias al on al.name = i.alias_name
              order by i.asset_name, i.asset_uri, i.n) as wanted
      order by 1, 2
     on conflict (name, uri) do nothing`,
  )
  const link = prepared(
    'alias_link_assets',
    `with resolved as (
       select al.id as alias_id, i.alias_name, a.id as asset_id, i.asset_name, i.asset_uri
         from ${input}
         join asset_alias al on al.name = i.alias_name
         join asset a on a.name = i.asset_name and a.uri = i.asset_uri
     ), linked as (
       insert into asset_alias_asset (alias_id, asset_id)
       select distinct alias_id, asset_id from resolved order by 1, 2
       on conflict do nothing
     )
     select * from resolved`,
  )
  return async (
    ex: Executor,
    emissions: readonly AliasEmission[],
    createAliasesNamed: readonly string[],
  ): Promise<ResolvedAliasEmission[]> => {
    if (emissions.length === 0) return []
    if (createAliasesNamed.length > 0) await ex.query(createAliases([[...createAliasesNamed]]))
    const arrays = [
      emissions.map((e) => e.aliasName),
      emissions.map((e) => e.assetName),
      emissions.map((e) => e.assetUri),
    ]
    await ex.query(createAssets([...arrays, `[${emissions.map((e) => e.assetExtra).join(',')}]`]))
    const rows = await ex.query<{
      alias_id: number
      alias_name: string
      asset_id: number
      asset_name: string
      asset_uri: string
    }>(link(arrays))
    return rows.map((row) => ({
      aliasId: row.alias_id,
      aliasName: row.alias_name,
      assetId: row.asset_id,
      assetName: row.asset_name,
      assetUri: row.asset_uri,
    }))
  }
}

/** asset_alias_asset_event rows: which alias each event was emitted through (one statement). */
function insertAliasEventLinks() {
  const insert = prepared(
    'alias_event_links',
    `insert into asset_alias_asset_event (alias_id, event_id)
     select * from unnest($1::int[], $2::int[]) as l(alias_id, event_id) order by 1, 2
     on conflict do nothing`,
  )
  return async (ex: Executor, links: ReadonlyArray<{aliasId: number; eventId: number}>): Promise<void> => {
    if (links.length === 0) return
    await ex.query(insert([links.map((l) => l.aliasId), links.map((l) => l.eventId)]))
  }
}

/**
 * Finds the DAGs scheduled on the events' assets through all four reference tables (by asset id,
 * alias, name, uri) and queues them in asset_dag_run_queue, in one statement, as the release's
 * `AssetManager.register_asset_change` and `_queue_dagruns` select and write them
 * (airflow-core/src/airflow/assets/manager.py):
 *
 * - skipped consumers, per `consumerFilter`: 3.0.x and 3.1.0–3.1.6 skip paused or stale DAGs
 *   scheduled by id (`asset_model.scheduled_dags`) or alias (`alias_ref.dag`) and select name and
 *   uri references unfiltered; from #60022 (3.1.7, 3.2.0 and later) every kind skips paused DAGs
 *   only (`DagModel.is_paused.is_(False)`), stale ones are queued;
 * - the row, before 3.4: `insert(AssetDagRunQueue).values(asset_id=…).on_conflict_do_nothing()`
 *   (3.0/3.1 `_postgres_queue_dagruns`, 3.2/3.3 `_queue_dagruns_nonpartitioned_postgres`), so a
 *   row already queued keeps its first created_at, which the scheduler's next run is computed
 *   from; created_at is the model default `timezone.utcnow()`, the clock at insert time. From 3.4
 *   (apache/airflow #70972) each event gets its own row, keyed (target_dag_id, asset_event_id);
 * - 3.2+ `_queue_dagruns`: DAGs with a partitioned timetable are queued through the partition
 *   mapper when the event has a partition key (returned as `partition_mapper`: airlock cannot run
 *   it) and not at all without one; an event with a partition key queues no other DAG
 *   (`if not non_partitioned_dags or partition_key is not None: return`).
 *
 * - 3.3+ with `[core] multi_team` on (`teamFilter`): `AssetManager._filter_dags_by_team`, both
 *   halves. The consumer decides which producers it accepts (its `dag_schedule_asset_reference`
 *   row for the asset: `allow_producer_teams`, `allow_global_producers`; a consumer found only
 *   through an alias or `Asset.ref` has none, so `[]` and true); the producer decides which
 *   consumers may receive its events (the `task_outlet_asset_reference` row of the producing task
 *   and asset: `allow_consumer_teams`, `allow_global_consumers`; none: null and true). A DAG's
 *   team is its bundle's (`dag_bundle_team`, as `DagModel.get_dag_id_to_team_name_mapping`). An
 *   event without a producing task is treated as a teamless task's.
 *
 * Rows are inserted in key order: unsorted multi-row inserts from concurrent completions take the
 * key locks in different orders and deadlock. The text is chosen once per capability set.
 *
 * With a preview asked for, the same statement reads the downstream preview (DownstreamReader) of
 * the assets and aliases it is given: one round trip for both, which the bulk throughput table
 * in docs/bench.md measured as the difference that mattered. Its snapshot does not show the rows
 * the statement itself queues, so the keys it queues count as queued (inserted now, or there
 * already: ON CONFLICT DO NOTHING leaves a key queued either way).
 */
function queueConsumers(
  capabilities: Pick<Capabilities, 'queueShape' | 'partitionedTimetables' | 'consumerFilter' | 'teamFilter'>,
  downstream: DownstreamReader,
  /** The preview in a statement of its own (readDownstream), for a queue statement that raced. */
  readAgain: (ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]) => Promise<DownstreamFacts[]>,
  /**
   * 'plan': the same decision on SELECT alone (a read-only plan): the keys it would queue are selected,
   * not inserted, so the plan and the write cannot disagree on which consumers are queued.
   */
  mode: 'write' | 'plan' = 'write',
) {
  // Two texts, with and without the preview: a statement is planned afresh on each connection
  // for its first executions, and the preview's part would cost a write without one that planning.
  // Parameters are numbered as each text first names them; the caller fills them by name.
  const texts = [false, true].map((withPreview) => {
    const slots = new Slots<QueueSlot>()
    const param: QueueParam = (slot, type) => slots.ref(slot, type)
    const name = `${mode === 'plan' ? 'plan_' : ''}queue_${capabilities.queueShape}_${capabilities.consumerFilter}${capabilities.teamFilter ? '_teams' : ''}${withPreview ? '_preview' : ''}`
    return {slots, queue: prepared(name, queueText(capabilities, param, withPreview ? downstream : null, mode))}
  })
  return async (
    ex: Executor,
    events: readonly RegisteredEvent[],
    eventPartitionKey: string | null,
    producer: {dagId: string; taskId: string} | null,
    preview: {assetIds: readonly number[]; aliasIds: readonly number[]} | null,
  ): Promise<QueuedConsumers> => {
    if (events.length === 0) return {decisions: [], downstream: null}
    const throughAlias = events.filter((e) => e.aliasId !== null)
    // What the condition cache knows: only the preview's text binds it.
    const known = preview ? downstream.known() : undefined
    const bySlot: Record<QueueSlot, unknown> = {
      assetIds: events.map((e) => e.assetId),
      eventIds: events.map((e) => e.eventId),
      aliasAssetIds: throughAlias.map((e) => e.assetId),
      aliasEventIds: throughAlias.map((e) => e.eventId),
      aliasIds: throughAlias.map((e) => e.aliasId),
      noPartitionKey: eventPartitionKey === null,
      producerDag: producer?.dagId ?? null,
      producerTask: producer?.taskId ?? null,
      // The statement's own events find their consumers in its reference rows: the preview is
      // told only the assets and aliases beyond them (another partition key's events, queued by
      // an earlier statement of the item), usually none.
      previewAssetIds: beyond(
        preview?.assetIds,
        events.map((e) => e.assetId),
      ),
      previewAliasIds: beyond(
        preview?.aliasIds,
        throughAlias.map((e) => e.aliasId!),
      ),
      knownHashes: known?.hashes ?? [],
      knownNoLeaves: known?.noLeaves ?? [],
      knownNoRefs: known?.noRefs ?? [],
      knownNoAliases: known?.noAliases ?? [],
      knownProbes: known?.probes ?? '{}',
    }
    const {slots, queue} = texts[preview ? 1 : 0]!
    const rows = await ex.query<{
      kind: ConsumerDecision['kind'] | 'downstream'
      asset_id: number
      dag_id: string
      alias_id: number | null
      downstream: FactsEntry[] | null
      raced: boolean | null
    }>(queue(slots.values(bySlot)))
    const decisions = rows.flatMap((row): ConsumerDecision[] =>
      row.kind === 'downstream'
        ? []
        : [{kind: row.kind, assetId: row.asset_id, dagId: row.dag_id, aliasId: row.alias_id}],
    )
    const facts = rows.find((row) => row.kind === 'downstream')
    if (!preview || !known || !facts) return {decisions, downstream: null}
    // Raced: read again, in a statement whose snapshot sees what the other transaction committed.
    if (facts.raced) return {decisions, downstream: await readAgain(ex, preview.assetIds, preview.aliasIds)}
    return {decisions, downstream: await downstream.facts(ex, facts.downstream!, known)}
  }
}

type QueueParam = (slot: QueueSlot, type: string) => string

/** The ids of `wanted` not in `here`, each once. */
function beyond(wanted: readonly number[] | undefined, here: readonly number[]): number[] {
  const seen = new Set(here)
  return [...new Set(wanted ?? [])].filter((id) => !seen.has(id))
}

/** The queue statement for one capability set (test/store/statements/ shows each whole). */
function queueText(
  capabilities: Pick<Capabilities, 'queueShape' | 'partitionedTimetables' | 'consumerFilter' | 'teamFilter'>,
  param: QueueParam,
  downstream: DownstreamReader | null,
  mode: 'write' | 'plan',
): string {
  const perEvent = capabilities.queueShape === 'per_event'
  // Each branch unnests only the arrays it reads: a one-array unnest is PostgreSQL's fast path,
  // where several arrays zip through ROWS FROM, and one CTE shared by four branches is
  // materialised. The alias branch reads only the events emitted through an alias (usually
  // none), so it costs nothing when there are none.
  const byAsset = perEvent
    ? `unnest(${param('eventIds', 'int[]')}, ${param('assetIds', 'int[]')}) as ev(event_id, asset_id)`
    : `unnest(${param('assetIds', 'int[]')}) as ev(asset_id)`
  const byAlias = perEvent
    ? `unnest(${param('aliasEventIds', 'int[]')}, ${param('aliasAssetIds', 'int[]')}, ${param('aliasIds', 'int[]')}) as ev(event_id, asset_id, alias_id)`
    : `unnest(${param('aliasAssetIds', 'int[]')}, ${param('aliasIds', 'int[]')}) as ev(asset_id, alias_id)`
  const noPartitionKey = param('noPartitionKey', 'boolean')
  const event = perEvent ? 'ev.event_id, ' : ''
  const partitioned = capabilities.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'
  // `DagModel.is_paused.is_(False)` (and `~is_stale` before #60022) keep a DAG whose flag is
  // false only: a NULL flag is skipped as a true one is.
  const skipped =
    capabilities.consumerFilter === 'id_and_alias_skip_paused_and_stale'
      ? `reference.kind in ('id', 'alias') and (d.is_paused is not false or d.is_stale is not false)`
      : `d.is_paused is not false`
  const teams = capabilities.teamFilter ? teamFilter(param) : {joins: '', passes: ''}
  return `with reference as (
       -- UNION ALL: each branch's rows are distinct already (one reference row per DAG and
       -- asset, alias, name or uri), and consumer takes the distinct queue keys anyway.
       select ${event}ev.asset_id, r.dag_id, 'id' as kind, null::int as alias_id from ${byAsset} join dag_schedule_asset_reference r on r.asset_id = ev.asset_id
       union all
       select ${event}ev.asset_id, r.dag_id, 'alias', ev.alias_id from ${byAlias} join dag_schedule_asset_alias_reference r on r.alias_id = ev.alias_id
       union all
       select ${event}ev.asset_id, r.dag_id, 'name', null from ${byAsset} join asset a on a.id = ev.asset_id join dag_schedule_asset_name_reference r on r.name = a.name
       union all
       select ${event}ev.asset_id, r.dag_id, 'uri', null from ${byAsset} join asset a on a.id = ev.asset_id join dag_schedule_asset_uri_reference r on r.uri = a.uri
     ), consumer as (
       -- With the alias a consumer was reached through (null: by the asset itself), so a caller can
       -- tell which events reach a DAG the release does not queue. Not distinct here: the queue
       -- insert and the rows returned each take their own distinct keys, one sort each.
       select ${perEvent ? 'reference.event_id, ' : ''}reference.asset_id, reference.dag_id, reference.alias_id,
              case when ${partitioned} then (case when ${noPartitionKey} then 'not_queued_by_airflow' else 'partition_mapper' end)
                   when ${noPartitionKey} then 'queued'
                   else 'not_queued_by_airflow' end as kind
         from reference
         join dag d on d.dag_id = reference.dag_id
         ${teams.joins}
        where not (${skipped}) ${teams.passes}
     ), queued as (
       ${mode === 'write' ? queueInsert(perEvent) : queueSelect(perEvent)}
     )
     -- Unsorted: callers count the rows and sort the DAG names they report.
     select 'queued' as kind, asset_id, target_dag_id as dag_id, null::int as alias_id, null::json as downstream, null::boolean as raced from queued
     union all
     select kind, asset_id, dag_id, alias_id, null, null from (select distinct kind, asset_id, dag_id, alias_id from consumer where kind <> 'queued') as c${downstream ? previewBranch(downstream, param, perEvent, mode === 'plan' ? `select ev.alias_id, ev.asset_id from ${byAlias}` : undefined) : ''}`
}

/**
 * The downstream preview as one more row: this statement's snapshot does not show the rows it
 * queues, so the keys it queues (inserted, or there already) count as queued too. `raced`: a key
 * it queues was neither inserted by it nor in its snapshot, so another transaction committed it
 * while this statement waited on that key (ON CONFLICT waits for an uncommitted row); that one
 * may have queued other keys of the same consumers too, which the snapshot does not show either,
 * and the caller reads the preview again in a statement of its own.
 */
function previewBranch(downstream: DownstreamReader, param: QueueParam, perEvent: boolean, linksHere?: string): string {
  const facts = downstream.factsSql(
    {
      assetIds: param('previewAssetIds', 'int[]'),
      aliasIds: param('previewAliasIds', 'int[]'),
      hashes: param('knownHashes', 'text[]'),
      noLeaves: param('knownNoLeaves', 'text[]'),
      noRefs: param('knownNoRefs', 'text[]'),
      noAliases: param('knownNoAliases', 'text[]'),
      // Only 3.4's text names it: a slot is numbered when asked for, and one the text never
      // names would be a parameter the server refuses.
      ...(perEvent ? {probes: param('knownProbes', 'jsonb')} : {}),
    },
    {
      queuedHere: "select dag_id, asset_id from consumer where kind = 'queued'",
      consumersHere: 'select dag_id from reference',
      // A plan's alias events are not linked to their assets yet: the links the write would make.
      ...(linksHere ? {linksHere} : {}),
    },
  )
  // Raced: a key it queues that it did not insert and its snapshot does not show. The keys not
  // inserted come by EXCEPT (hashed, linear in the item's keys; a probe of the inserted rows per
  // key was a nested loop over two CTEs estimated at one row each, 720,000 comparisons at 600
  // outlets), and only those are looked for in the snapshot, counted (a semi-join probing the
  // queue's key per row: as NOT EXISTS the planner may hash the whole queue instead). Counting the
  // inserted and the shown keys of all took a key for both when the scheduler removed a row the
  // snapshot showed before the insert wrote that key again, and so missed a raced one.
  const notInserted = `(select k.asset_id, k.dag_id from consumer k where k.kind = 'queued'
                        except select q.asset_id, q.target_dag_id from queued q)`
  return `
     union all
     select 'downstream', null, null, null, ${facts},
            (select count(*) from ${notInserted} as k)
              > (select count(*) from ${notInserted} as k
                  where exists (select 1 from asset_dag_run_queue r where r.asset_id = k.asset_id and r.target_dag_id = k.dag_id))`
}

/** One row per queue key: a consumer reached through several aliases is one row of consumer each. */
function queueInsert(perEvent: boolean): string {
  return perEvent
    ? `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at, asset_event_id)
       select asset_id, dag_id, clock_timestamp(), event_id from (select distinct event_id, asset_id, dag_id from consumer where kind = 'queued') as k
        order by dag_id, event_id
       returning asset_id, target_dag_id`
    : `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at)
       select asset_id, dag_id, clock_timestamp() from (select distinct asset_id, dag_id from consumer where kind = 'queued') as k
        order by asset_id, dag_id
       on conflict (asset_id, target_dag_id) do nothing
       returning asset_id, target_dag_id`
}

/** The plan's stand-in for queueInsert: the keys the insert would return (a key already queued is not, before 3.4). */
function queueSelect(perEvent: boolean): string {
  return perEvent
    ? `select distinct asset_id, dag_id as target_dag_id, event_id from consumer where kind = 'queued'`
    : `select distinct k.asset_id, k.dag_id as target_dag_id from consumer k
        where k.kind = 'queued'
          and not exists (select 1 from asset_dag_run_queue r where r.asset_id = k.asset_id and r.target_dag_id = k.dag_id)`
}

/**
 * `_filter_dags_by_team`: producer_pass, then the consumer-team filter when the outlet sets one.
 * The allow-lists are SQLAlchemy JSON columns: Python's None may be stored as JSON null, which
 * Airflow reads back as None, so JSON null counts as SQL NULL here.
 */
function teamFilter(param: QueueParam): {joins: string; passes: string} {
  return {
    joins: `left join lateral (select t.team_name from dag pd join dag_bundle_team t on t.dag_bundle_name = pd.bundle_name where pd.dag_id = ${param('producerDag', 'text')}) as source_team on true
         left join lateral (select t.team_name from dag_bundle_team t where t.dag_bundle_name = d.bundle_name) as consumer_team on true
         left join dag_schedule_asset_reference sref on sref.asset_id = reference.asset_id and sref.dag_id = reference.dag_id
         left join task_outlet_asset_reference oref on oref.dag_id = ${param('producerDag', 'text')} and oref.task_id = ${param('producerTask', 'text')} and oref.asset_id = reference.asset_id`,
    passes: `and (consumer_team.team_name is null
            or (source_team.team_name is null and coalesce(sref.allow_global_producers, true))
            or consumer_team.team_name = source_team.team_name
            or coalesce(nullif(sref.allow_producer_teams::jsonb, 'null'::jsonb), '[]'::jsonb) @> jsonb_build_array(source_team.team_name))
       and (not (nullif(oref.allow_consumer_teams::jsonb, 'null'::jsonb) is not null or not coalesce(oref.allow_global_consumers, true))
            or (consumer_team.team_name is null and coalesce(oref.allow_global_consumers, true))
            or (consumer_team.team_name is not null
                and (consumer_team.team_name is not distinct from source_team.team_name
                     or nullif(oref.allow_consumer_teams::jsonb, 'null'::jsonb) is null
                     or oref.allow_consumer_teams::jsonb @> jsonb_build_array(consumer_team.team_name))))`,
  }
}

type QueueSlot =
  | 'assetIds'
  | 'eventIds'
  | 'aliasAssetIds'
  | 'aliasEventIds'
  | 'aliasIds'
  | 'noPartitionKey'
  | 'producerDag'
  | 'producerTask'
  | 'previewAssetIds'
  | 'previewAliasIds'
  | 'knownHashes'
  | 'knownNoLeaves'
  | 'knownNoRefs'
  | 'knownNoAliases'
  | 'knownProbes'

/** The registration family for one capability set, its queue statement reading `preview`. */
export function registrationStore(
  capabilities: Pick<
    Capabilities,
    'eventPartitionKey' | 'aliasAssetShape' | 'queueShape' | 'partitionedTimetables' | 'consumerFilter' | 'teamFilter'
  >,
  preview: DownstreamPreview,
): RegistrationStore {
  return {
    insertAssetEvents: insertAssetEvents(capabilities),
    findAssetsByNameOrUri: findAssetsByNameOrUri(),
    ensureAliasAssets: ensureAliasAssets(capabilities),
    insertAliasEventLinks: insertAliasEventLinks(),
    queueConsumers: queueConsumers(capabilities, preview.reader, preview.readDownstream),
    planConsumers: queueConsumers(capabilities, preview.reader, preview.readDownstream, 'plan'),
  }
}
