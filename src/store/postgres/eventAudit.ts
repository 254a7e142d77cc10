import type {Capabilities} from '../../airflow/schema.js'
import type {Executor} from '../../engine/engine.js'
import {Params, statement} from '../../engine/prepared.js'
import type {ClassifiedEvent, EventAuditStore, EventClass, QueueOrphan} from '../families/audit.js'
import type {EventFilter} from '../types.js'
import {attributionBasis, basisOfCode} from '../../airflow/tryAttribution.js'
import {declaredAllowance} from '../../airflow/declaredEvents.js'
import type {VersionDag} from '../../airflow/serializedDag.js'
import {attributedTry, tryArraysOf, tryDagVersionIds, tryRows} from './attribution.js'
import {eventFilterConditions, namedByAirlockRow, whereAll} from './fragments.js'
import {readVersionDags} from './storedDag.js'

/**
 * How many filtered events have a source task instance and how many do not (REST- or
 * trigger-created, counted as external, never a finding): one scan for both, the total the
 * audit's progress line counts towards.
 */
function countEventSources() {
  return async (ex: Executor, filter: EventFilter): Promise<{sourced: number; external: number}> => {
    const params = new Params()
    const [row] = await ex.query<{sourced: string; external: string}>(
      statement(
        `select count(*) filter (where ${sourced}) as sourced, count(*) filter (where not (${sourced})) as external
           from asset_event e ${whereAll(eventFilterConditions(params, filter))}`,
        params.values,
      ),
    )
    // A source DAG filter selects sourced events only: none of them is external.
    return {sourced: Number(row?.sourced ?? 0), external: filter.sourceDagId ? 0 : Number(row?.external ?? 0)}
  }
}

const sourced = 'e.source_dag_id is not null and e.source_run_id is not null and e.source_task_id is not null'

/**
 * Classifies every filtered event that names a source task instance, in ONE statement read
 * through a server-side cursor (`batch` rows at a time, so memory stays flat whatever the table
 * holds). Airflow has no index on asset_event's source columns, so any plan that pages by source
 * key scans the table once per page; this one scans it a fixed number of times, joins by hash and
 * sorts once for the duplicate window. Each event is given to a try of its task instance by the
 * one attribution rule (attributedTry: an audit row naming it, then the try's span), then gets
 * one class:
 *   orphan_missing_ti   the key exists neither in task_instance nor in task_instance_history;
 *   orphan_not_success  it exists, but no try of it (current or archived) succeeded, or the event
 *                       belongs to a try after the last successful one;
 *   unattributed        the evidence cannot tell which try it belongs to (stamped between two
 *                       tries, or named by audit rows of two): never a duplicate, never removed;
 *   superseded_by_rerun it belongs to a try before the last successful one;
 *   duplicate           beyond the first of a group of the last successful try's events with the
 *                       same asset, extra, partition key and aliases, within `windowSeconds` of
 *                       it, or at any distance when replay-events' missing mode wrote it; the
 *                       event an audit row names is the group's first, then by id;
 *   ok                  everything else.
 * The per-key facts (the tries and their spans, the last successful try) are aggregated once per
 * key, never probed per event; a key with one try (the common case) needs no further evidence,
 * and evidence that only findings need (consumed, the asset's name) is looked up for those rows
 * alone. Runs inside the caller's transaction (a cursor lives in one).
 */
function streamClassifiedEvents(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  return async function* (
    tx: Executor,
    filter: EventFilter,
    windowSeconds: number,
    batch: number,
  ): AsyncGenerator<ClassifiedEvent[]> {
    const params = new Params()
    const text = classifiedEventsText(capabilities, params, filter, windowSeconds)
    const cursor = `airlock_classified_events`
    // A cursor is planned for its first 10 % by default (fast-start plans: nested loops over
    // asset_event); this one is read to the end, so plan it as a whole query.
    await tx.query(statement('set local cursor_tuple_fraction = 1'))
    await tx.query(statement(`declare ${cursor} no scroll cursor for ${text}`, params.values))
    const serialized = serializedDags()
    for (;;) {
      const rows = await tx.query<ClassifiedEventRow>(statement(`fetch forward ${batch} from ${cursor}`))
      if (rows.length === 0) break
      const versions = await serialized(
        tx,
        rows.flatMap((row) => row.dag_version_ids ?? []),
      )
      yield rows.map((row) => allowDeclared(classifiedEventOf(row), row, versions))
      if (rows.length < batch) break
    }
    await tx.query(statement(`close ${cursor}`))
  }
}

interface ClassifiedEventRow {
  id: number
  asset_id: number
  asset_name: string | null
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  timestamp: Date
  class: EventClass
  kept_id: number | null
  consumed: boolean | null
  try_number: number | null
  candidate_try: number | null
  basis: number | null
  success_try: number | null
  position: number | null
  asset_uri: string | null
  dag_version_ids: string[] | null
}

/**
 * The serialized DAGs of DAG versions, each read once per pass (a duplicate group is rare, and its
 * versions repeat).
 */
function serializedDags() {
  const read = readVersionDags()
  const seen = new Map<string, VersionDag>()
  return async (tx: Executor, ids: readonly string[]): Promise<Map<string, VersionDag>> => {
    const wanted = [...new Set(ids)].filter((id) => !seen.has(id))
    // One unreadable payload makes its groups duplicate_unknown, not the audit a failure.
    if (wanted.length > 0) for (const version of await read(tx, wanted)) seen.set(version.id, version)
    return seen
  }
}

/**
 * A group of identical events of one try is allowed as many as the try's declared outlets call
 * for (declaredAllowance: an asset declared directly and by Asset.ref gets one event per
 * declaration, as register_asset_changes_in_db writes them); only the events beyond that are
 * duplicates. Where the serialized DAG cannot tell, the extra is `duplicate_unknown`: a finding,
 * never removed.
 */
function allowDeclared(
  event: ClassifiedEvent,
  row: ClassifiedEventRow,
  serialized: Map<string, VersionDag>,
): ClassifiedEvent {
  if (event.class !== 'duplicate' || row.position === null) return event
  const versions = (row.dag_version_ids ?? []).map((id) => serialized.get(id) ?? {id, serialized: undefined})
  const declared = declaredAllowance(versions, event.source.taskId, {name: event.assetName, uri: row.asset_uri ?? ''})
  if (!declared.known) return {...event, class: 'duplicate_unknown', declared}
  if (row.position <= declared.count) return {...event, class: 'ok', keptId: null, declared}
  return {...event, declared}
}

function classifiedEventOf(row: ClassifiedEventRow): ClassifiedEvent {
  return {
    id: row.id,
    assetId: row.asset_id,
    assetName: row.asset_name ?? '',
    source: {
      dagId: row.source_dag_id ?? '',
      runId: row.source_run_id ?? '',
      taskId: row.source_task_id ?? '',
      mapIndex: row.source_map_index,
    },
    timestamp: row.timestamp,
    class: row.class,
    keptId: row.kept_id,
    consumed: row.consumed ?? false,
    attribution: {
      tryNumber: row.try_number,
      candidate: row.candidate_try,
      basis: basisOfCode(row.basis),
      successTry: row.success_try,
    },
  }
}

/** Whether event `eventId` was taken by a dag run, or (3.2+) by the partitioned path. */
function consumedCondition(capabilities: Pick<Capabilities, 'eventPartitionKey'>, eventId: string): string {
  const partitioned = capabilities.eventPartitionKey
    ? ` or exists (select 1 from partitioned_asset_key_log p where p.asset_event_id = ${eventId})`
    : ''
  return `(exists (select 1 from dagrun_asset_event c where c.event_id = ${eventId})${partitioned})`
}

/** The DAG versions the rows of a key's last successful try name (`g`: the key and success_try). */
const successTryVersions = tryDagVersionIds(
  {dagId: 'g.dag_id', runId: 'g.run_id', taskId: 'g.task_id', mapIndex: 'g.map_index'},
  'g.success_try',
)

/** The one classifying statement (see streamClassifiedEvents), its values bound through `params`. */
function classifiedEventsText(
  capabilities: Pick<Capabilities, 'eventPartitionKey'>,
  params: Params,
  filter: EventFilter,
  windowSeconds: number,
): string {
  const filterWhere = [sourced, ...eventFilterConditions(params, filter)]
  const window = `make_interval(secs => ${params.add(windowSeconds)}::float8)`
  const consumed = consumedCondition(capabilities, 'g.id')
  const key = {dagId: 'g.dag_id', runId: 'g.run_id', taskId: 'g.task_id', mapIndex: 'g.map_index'}
  return `with ${attributedEvents(capabilities, filterWhere)}
       ), ev as (
         -- The attribution as three scalars and no array: narrower rows for the sort below.
         select a.id, a.asset_id, a.dag_id, a.run_id, a.task_id, a.map_index, a.source_map_index, a."timestamp",
                a.extra_text, a.partition_text, a.alias_text, a.success_try,
                coalesce(a.only_try, a.attribution[1]) as try_number,
                coalesce(a.only_try, a.attribution[2]) as candidate_try,
                case when a.only_try is not null then ${attributionBasis.only_try} else a.attribution[3] end as basis,
                case
                  when not a.has_tries then 'orphan_missing_ti'
                  when a.success_try is null then 'orphan_not_success'
                  when coalesce(a.only_try, a.attribution[1]) is null then 'unattributed'
                  when coalesce(a.only_try, a.attribution[1]) < a.success_try then 'superseded_by_rerun'
                  -- A try after the last successful one: its events stand behind no success.
                  when coalesce(a.only_try, a.attribution[1]) > a.success_try then 'orphan_not_success'
                  else 'candidate'
                end as pre_class
           from attributed a
         -- offset 0: projected here, so the sort below carries the scalars, not the array.
         offset 0
       ), g as (
         -- Non-candidates sit in partitions of their own (pre_class leads the key), so one window
         -- serves every event and the duplicate groups hold candidates only: the events of the
         -- last successful try. The event an audit row names is kept before any other.
         select ev.*, first_value(id) over w as first_id, first_value("timestamp") over w as first_ts, row_number() over w as n
           from ev
         window w as (partition by pre_class, dag_id, run_id, task_id, map_index, asset_id, extra_text, partition_text, alias_text
                      order by basis = ${attributionBasis.named} desc, id)
       ), c as (
         select g.*,
                case
                  when pre_class <> 'candidate' then pre_class
                  when n > 1 and "timestamp" between first_ts - ${window} and first_ts + ${window} then 'duplicate'
                  -- Written by replay-events' missing mode: it only writes an event it found
                  -- missing, so a second event of the group in the same try is a duplicate at any distance.
                  when n > 1 and ${namedByAirlockRow('g.id', key, ['airlock.replay-events'], {missingMode: true})} then 'duplicate'
                  else 'ok'
                end as class
           from g
         -- offset 0 keeps this a subquery of its own: the class is computed once per event, not
         -- once for every column below that reads it.
         offset 0
       )
       select g.id, g.asset_id, g.source_map_index, g."timestamp", g.class,
              case when g.class = 'duplicate' then g.first_id end as kept_id,
              case when g.class <> 'ok' then (select a.name from asset a where a.id = g.asset_id) end as asset_name,
              case when g.class <> 'ok' then g.dag_id end as source_dag_id,
              case when g.class <> 'ok' then g.run_id end as source_run_id,
              case when g.class <> 'ok' then g.task_id end as source_task_id,
              case when g.class <> 'ok' then ${consumed} end as consumed,
              -- The attribution only where it explains a finding: an ok event's is its key's only try.
              case when g.class <> 'ok' then g.try_number end as try_number,
              case when g.class <> 'ok' then g.candidate_try end as candidate_try,
              case when g.class <> 'ok' then g.basis end as basis,
              case when g.class <> 'ok' then g.success_try end as success_try,
              -- What the declared outlets decide a duplicate by (allowDeclared): its place in the
              -- group, its asset's uri and the DAG versions the rows of its try name.
              case when g.class = 'duplicate' then g.n::int end as position,
              case when g.class = 'duplicate' then (select a.uri from asset a where a.id = g.asset_id) end as asset_uri,
              case when g.class = 'duplicate' then ${successTryVersions} end as dag_version_ids
         from c as g`
}

/**
 * The classifying statement's first CTEs, ending in `attributed`: every filtered event with its
 * key's facts (has a try, its last successful try) and its attribution (attributedTry's array).
 * `k` holds the keys, `tries` their tries (tryRows), `facts` one row per key.
 */
function attributedEvents(
  capabilities: Pick<Capabilities, 'eventPartitionKey'>,
  filterWhere: readonly string[],
): string {
  const partition = capabilities.eventPartitionKey ? "coalesce(e.partition_key, '')" : "''"
  const factsKey = {dagId: 'f.dag_id', runId: 'f.run_id', taskId: 'f.task_id', mapIndex: 'f.map_index'}
  // k is distinct: a plain join (a semi join sorted k once more to make it unique).
  const joinK = (alias: string) =>
    `join k on k.dag_id = ${alias}.dag_id and k.run_id = ${alias}.run_id and k.task_id = ${alias}.task_id and k.map_index = ${alias}.map_index`
  const arrays = tryArraysOf('t')
  const attribution = attributedTry({id: 'e.id', timestamp: 'e."timestamp"'}, factsKey, {
    numbers: 'f.numbers',
    starts: 'f.starts',
    lastWrites: 'f.last_writes',
  })
  return `k as (
         select distinct e.source_dag_id as dag_id, e.source_run_id as run_id, e.source_task_id as task_id, coalesce(e.source_map_index, -1) as map_index
           from asset_event e ${whereAll(filterWhere)}
       ), tries as (
         ${tryRows(() => 'true', joinK)}
       ), facts as (
         -- Per key: its last successful try and every try's span, for attributedTry.
         select t.dag_id, t.run_id, t.task_id, t.map_index,
                max(t.try_number) filter (where t.state = 'success') as success_try,
                -- A first try with nothing before it: every event of the key is its (attributedTry's
                -- own shortcut, taken here without building an array per event).
                case when count(*) = 1 and min(t.try_number) <= 1 then min(t.try_number) end as only_try,
                ${arrays.numbers} as numbers, ${arrays.starts} as starts, ${arrays.lastWrites} as last_writes
           from tries t
          group by t.dag_id, t.run_id, t.task_id, t.map_index
       ), attributed as (
         select e.id, e.asset_id, e.source_dag_id as dag_id, e.source_run_id as run_id, e.source_task_id as task_id,
                coalesce(e.source_map_index, -1) as map_index, e.source_map_index, e."timestamp",
                e.extra::jsonb::text as extra_text, ${partition} as partition_text,
                -- The aliases the event went through: a direct event and an alias event of the same
                -- asset and extra are both legitimate (each wakes its own consumers).
                coalesce(al.alias_text, '') as alias_text,
                f.dag_id is not null as has_tries, f.success_try, f.only_try,
                case when f.dag_id is not null and f.only_try is null then ${attribution} end as attribution
           from asset_event e
           left join facts f on f.dag_id = e.source_dag_id and f.run_id = e.source_run_id and f.task_id = e.source_task_id and f.map_index = coalesce(e.source_map_index, -1)
           left join (select l.event_id, string_agg(l.alias_id::text, ',' order by l.alias_id) as alias_text from asset_alias_asset_event l group by l.event_id) al
             on al.event_id = e.id
          ${whereAll(filterWhere)}
         -- offset 0: each event is attributed once, not once per column below that reads it.
         offset 0`
}

/**
 * Rows pointing at something that no longer exists: queue rows whose asset, DAG (or, from 3.4,
 * event) is gone, and alias links to missing events. The foreign keys cascade, so these appear
 * only where a restore or a manual fix bypassed them; NOT EXISTS finds them either way.
 */
function readQueueOrphans(capabilities: Pick<Capabilities, 'queueShape'>) {
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

/** audit-events' family for one capability set. */
export function eventAuditStore(capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape'>): EventAuditStore {
  return {
    countEventSources: countEventSources(),
    streamClassifiedEvents: streamClassifiedEvents(capabilities),
    readQueueOrphans: readQueueOrphans(capabilities),
  }
}
