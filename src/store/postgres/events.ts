import type {Capabilities} from '../../airflow/schema.js'
import type {EventLineParts} from '../../airflow/eventLine.js'
import type {Executor} from '../../engine/engine.js'
import {Params, prepared, statement} from '../../engine/prepared.js'
import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {EventContent, EventPageFilter, EventStore, RemovedDuplicates, StoredEvent} from '../families/events.js'
import {assetKey} from '../types.js'
import {declaredAllowance, type DeclaredAllowance} from '../../airflow/declaredEvents.js'
import {attributedTry, tryArraysOf, tryDagVersionIds, tryRows} from './attribution.js'
import {eventFilterConditions, heldConsumerDags, namedByAirlockRow, whereAll} from './fragments.js'
import {readVersionDags} from './storedDag.js'

/** The columns every event read here returns, as the driver gives them. */
interface EventRow {
  id: number
  asset_name: string
  asset_uri: string
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  partition_key: string | null
  timestamp: Date
}

/** source_dag_id, source_run_id, source_task_id, source_map_index of an event's content. */
const sourceValues = (content: EventContent) => [
  content.source?.dagId ?? null,
  content.source?.runId ?? null,
  content.source?.taskId ?? null,
  content.source?.mapIndex ?? -1,
]

/**
 * One keyset page of events (id > afterId, ORDER BY id) with everything an export line carries,
 * so an export of millions of events reads in constant memory. Which queue rows belong to an
 * event depends on the queue's key: its asset before 3.4, the event itself from 3.4.
 *
 * PostgreSQL writes each line's JSON itself (row_to_json), so the export streams text and never
 * parses and re-serialises it: row_to_json is compact and escapes strings as JSON.stringify does
 * (json.c escape_json: `\"`, `\\`, \b \f \n \r \t, other control characters as lowercase
 * `\u00xx`, everything else verbatim). The line comes in two halves around `extra`, whose stored
 * text (Python's json.dumps, with its spaces) eventLineText writes as JSON.stringify would. The
 * timestamp is cut to milliseconds as JavaScript's toISOString writes it (to_char's MS truncates,
 * as node-postgres's Date did). consumed_by is array_to_json(array_agg(row_to_json …)):
 * json_agg and json_build_object put spaces in.
 */
function readEventLinePage(capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape'>) {
  const queued = capabilities.queueShape === 'per_event' ? 'q.asset_event_id = e.id' : 'q.asset_id = e.asset_id'
  const head = `(select row_to_json(h) from (select e.id, (select row_to_json(n) from (select a.name, a.uri) n) as asset) h)::text as head`
  const tail = `(select row_to_json(t) from (
              select e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index,
                     ${capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar as partition_key'},
                     to_char(e."timestamp" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "timestamp",
                     coalesce((select array_agg(al.name order by al.name) from asset_alias_asset_event l join asset_alias al on al.id = l.alias_id where l.event_id = e.id), '{}') as aliases,
                     coalesce((select array_agg(distinct q.target_dag_id order by q.target_dag_id) from asset_dag_run_queue q where ${queued}), '{}') as queued_for,
                     coalesce((select array_to_json(array_agg((select row_to_json(o) from (select dr.dag_id, dr.run_id) o) order by dr.id))
                                 from dagrun_asset_event c join dag_run dr on dr.id = c.dag_run_id where c.event_id = e.id), '[]') as consumed_by) t)::text as tail`
  return async (ex: Executor, filter: EventPageFilter): Promise<EventLineParts[]> => {
    const params = new Params()
    const where = [`e.id > ${params.add(filter.afterId)}::int`, ...eventFilterConditions(params, filter)]
    return ex.query<EventLineParts>(
      statement(
        `select e.id, ${head}, e.extra::text as extra, ${tail}
           from asset_event e join asset a on a.id = e.asset_id ${whereAll(where)} order by e.id limit ${params.add(filter.limit)}::int`,
        params.values,
      ),
    )
  }
}

/** Events by id, with their asset, source attribution, partition key and the aliases they went through. */
function readEventsById(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const read = prepared(
    'events_by_id',
    `select e.id, e.asset_id, a.name as asset_name, a.uri as asset_uri, e.extra::text as extra,
            e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index,
            ${capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar'} as partition_key, e."timestamp",
            coalesce((select array_agg(l.alias_id order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '{}') as alias_ids,
            dr.logical_date, d.owners
       from asset_event e
       join asset a on a.id = e.asset_id
       left join dag_run dr on dr.dag_id = e.source_dag_id and dr.run_id = e.source_run_id
       left join dag d on d.dag_id = e.source_dag_id
      where e.id = any($1::int[])
      order by e.id`,
  )
  return async (ex: Executor, ids: readonly number[]): Promise<StoredEvent[]> => {
    const rows = await ex.query<
      EventRow & {
        asset_id: number
        extra: string
        alias_ids: number[]
        logical_date: Date | null
        owners: string | null
      }
    >(read([[...ids]]))
    return rows.map((row) => ({
      id: row.id,
      assetId: row.asset_id,
      assetName: row.asset_name,
      assetUri: row.asset_uri,
      extra: row.extra,
      source:
        row.source_dag_id && row.source_run_id && row.source_task_id
          ? {
              dagId: row.source_dag_id,
              runId: row.source_run_id,
              taskId: row.source_task_id,
              mapIndex: row.source_map_index ?? -1,
            }
          : null,
      partitionKey: row.partition_key,
      timestamp: row.timestamp,
      aliasIds: row.alias_ids,
      logicalDate: row.logical_date,
      owners: row.owners,
    }))
  }
}

/** Asset ids by (name, uri) and alias ids by name, for lines of an export replayed elsewhere. */
function resolveAssetsAndAliases() {
  const assets = prepared(
    'resolve_assets',
    'select a.id, a.name, a.uri from asset a join unnest($1::text[], $2::text[]) as k(name, uri) on a.name = k.name and a.uri = k.uri',
  )
  const aliases = prepared('resolve_aliases', 'select id, name from asset_alias where name = any($1::text[])')
  return async (ex: Executor, wanted: ReadonlyArray<{name: string; uri: string}>, aliasNames: readonly string[]) => {
    const assetRows = await ex.query<{id: number; name: string; uri: string}>(
      assets([wanted.map((a) => a.name), wanted.map((a) => a.uri)]),
    )
    const aliasRows = await ex.query<{id: number; name: string}>(aliases([[...aliasNames]]))
    return {
      assetIds: new Map(assetRows.map((row) => [assetKey(row), row.id])),
      aliasIds: new Map(aliasRows.map((row) => [row.name, row.id])),
    }
  }
}

/**
 * An existing event with the same content (asset, source attribution, extra, partition key) at
 * or after `since`, for a replay that skips what exists: replaying an export into a database that already has
 * some of its events must not double them.
 */
function findMatchingEvent(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey
  // Two replays of one export running at once would both find nothing and both insert: one
  // transaction-scoped advisory lock per event content makes the check-then-insert atomic.
  const lock = prepared('event_content_lock', 'select pg_advisory_xact_lock(hashtextextended($1, 0))')
  const find = prepared(
    'find_matching_event',
    `select id from asset_event
      where asset_id = $1 and extra::jsonb = $2::jsonb
        and source_dag_id is not distinct from $3 and source_run_id is not distinct from $4
        and source_task_id is not distinct from $5 and source_map_index is not distinct from $6::int
        and "timestamp" >= $7::timestamptz
        ${partition ? 'and partition_key is not distinct from $8' : ''}
      order by id limit 1`,
  )
  return async (ex: Executor, content: EventContent, since: Date): Promise<number | undefined> => {
    await ex.query(
      lock([JSON.stringify([content.assetId, content.extra, ...sourceValues(content), content.partitionKey])]),
    )
    const [row] = await ex.query<{id: number}>(
      find([
        content.assetId,
        content.extra,
        ...sourceValues(content),
        since,
        ...(partition ? [content.partitionKey] : []),
      ]),
    )
    return row?.id
  }
}

/**
 * A new asset_event with the given content and a fresh timestamp (UTC now, never the original's:
 * before 3.4 the scheduler ignores events older than the last asset-triggered run).
 */
function insertEventCopy(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey
  const insert = prepared(
    'insert_event_copy',
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partition ? ', partition_key' : ''})
     values ($1, $2::json, $3, $4, $5, $6::int, clock_timestamp()${partition ? ', $7' : ''})
     returning id`,
  )
  return async (ex: Executor, content: EventContent): Promise<number> => {
    const [row] = await ex.query<{id: number}>(
      insert([content.assetId, content.extra, ...sourceValues(content), ...(partition ? [content.partitionKey] : [])]),
    )
    return row!.id
  }
}

function countEvents() {
  const count = prepared('count_events', 'select count(*) as n from asset_event where id = any($1::int[])')
  return async (ex: Executor, ids: readonly number[]): Promise<number> =>
    Number((await ex.query<{n: string}>(count([[...ids]])))[0]?.n ?? 0)
}

/**
 * The try of a key an event belongs to, by the audit's own rule (attributedTry over the key's
 * tries): a re-emitted copy's audit row names it, so the copy counts as that try's and never as a
 * later try's event. `eventId` null (an export line: its id is another database's) decides on the
 * timestamp alone.
 */
function readEventTry() {
  const on = (alias: string) =>
    `${alias}.dag_id = $1 and ${alias}.run_id = $2 and ${alias}.task_id = $3 and ${alias}.map_index = $4::int`
  const arrays = tryArraysOf('t')
  const eventTry = prepared(
    'event_try',
    `select case when f.numbers is not null
                 then (${attributedTry({id: '$5::int', timestamp: '$6::timestamptz'}, {dagId: '$1', runId: '$2', taskId: '$3', mapIndex: '$4::int'}, {numbers: 'f.numbers', starts: 'f.starts', lastWrites: 'f.last_writes'})})[1]
            end as try_number
       from (select ${arrays.numbers} as numbers, ${arrays.starts} as starts, ${arrays.lastWrites} as last_writes
               from (${tryRows(on)}) as t) as f`,
  )
  return async (
    ex: Executor,
    source: TaskInstanceKey,
    eventId: number | null,
    timestamp: Date,
  ): Promise<number | null> => {
    const [row] = await ex.query<{try_number: number | null}>(
      eventTry([source.dagId, source.runId, source.taskId, source.mapIndex, eventId, timestamp]),
    )
    return row?.try_number ?? null
  }
}

/**
 * One duplicate group's repair, decided on what holds under its locks, never on the audit's
 * earlier read:
 *
 * 1. The kept event and the extras, `FOR UPDATE SKIP LOCKED` in id order: one held by another
 *    session (a scheduler's FK check while it records a run's events, another fixer) leaves the
 *    group `busy`, never waited on; a kept event that is gone (another fixer removed it) leaves
 *    the group `changed`: nothing is removed on a read that is no longer true.
 * 2. Each extra must still be the kept event's duplicate (same source task instance, asset,
 *    extra, partition key and aliases); one that is not is left (`changed`).
 * 3. Evidence beats timestamps: an extra that complete's own audit row names (`log` event
 *    `success`, `extra.airlock.event_ids`) is that try's event and is never removed (`named`);
 *    two fixers reading at different times, or a copy stamped just after a try's last write,
 *    cannot take the last event of a try.
 * 4. The consumer DAG rows of the group (by asset id, name, uri, and the aliases its events went
 *    through), `FOR SHARE SKIP LOCKED`: the scheduler creates asset-triggered runs only for DAG
 *    rows it holds `FOR NO KEY UPDATE SKIP LOCKED` (`DagModel.dags_needing_dagruns`,
 *    airflow-core/src/airflow/models/dag.py: `with_row_locks(…, of=cls, skip_locked=True)`,
 *    whose `key_share=True` default since apache/airflow #42082 SQLAlchemy renders as NO KEY
 *    UPDATE) and reads their events after taking it, so with every consumer held it skips them
 *    this loop and sees the extras gone on the next. FOR SHARE is the weakest mode NO KEY UPDATE
 *    conflicts with (KEY SHARE does not); it holds the DAG processor's UPDATE of those rows for
 *    the few milliseconds of this transaction. A consumer row the scheduler holds leaves the
 *    group `busy`. With `[scheduler] use_row_level_locking = False` the scheduler locks nothing
 *    and this guarantee does not hold (docs/audit-events.md).
 * 5. An extra a run consumed (`dagrun_asset_event`, 3.2+ `partitioned_asset_key_log`) is history
 *    and stays; a pending one (not consumed yet) is deleted, except when a consumer has a
 *    partitioned timetable, whose partition path airlock does not lock (`pending`,
 *    `partitioned_consumer`), and, from 3.4, when a queue row names it (`pending`, `queued`).
 *    The DAG lock covers only what the scheduler reads after taking it: 3.4's queue rows carry
 *    event ids, read without a lock before it (`dags_needing_dagruns`), and whether main's
 *    `_create_dag_runs_asset_triggered` (apache/airflow #70972) reads them again under the lock
 *    or links the ids of that first read could not be read. In the second order a delete
 *    committed between the read and the lock fails the scheduler's `dagrun_asset_event` insert
 *    on the foreign key (test/audit/fixInQueueWindow.test.ts), and no lock airlock can take
 *    keeps a plain read out; an extra no queue row names is in no scheduler's read and is
 *    deleted.
 */
function removeDuplicateEvents(
  capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape' | 'partitionedTimetables'>,
) {
  const {lock, sameAsKept, named, consumers, consumed, queued, deleteEvents, keptDeclared} =
    repairStatements(capabilities)
  const versionDags = readVersionDags()
  /** The kept event's allowance (declaredAllowance) from the serialized DAG of its try's DAG version. */
  const declaredOfKept = async (ex: Executor, keptId: number): Promise<DeclaredAllowance> => {
    const [kept] = await ex.query<{name: string; uri: string; task_id: string; dag_version_ids: string[]}>(
      keptDeclared([keptId]),
    )
    if (!kept) return {known: false, reason: 'the kept event is gone'}
    const versions = await versionDags(ex, kept.dag_version_ids)
    return declaredAllowance(versions, kept.task_id, kept)
  }
  const nothing = {
    removed: [],
    removedRows: [],
    consumed: [],
    pending: [],
    pendingReason: null,
    busy: [],
    changed: [],
    named: [],
  }
  return async (ex: Executor, keptId: number, extraIds: readonly number[]): Promise<RemovedDuplicates> => {
    const all = [keptId, ...extraIds]
    const locked = (await ex.query<{id: number}>(lock([all]))).map((row) => row.id)
    const existing = (
      await ex.query<{id: number}>(statement('select id from asset_event where id = any($1::int[])', [all]))
    ).map((row) => row.id)
    // Locked by someone else (not merely deleted since the audit read it).
    const busy = existing.filter((id) => !locked.includes(id))
    if (busy.length > 0) return {...nothing, busy}
    if (!locked.includes(keptId)) return {...nothing, changed: [...extraIds]}
    // Every event of the kept one's content and try, the audit's extras or not: the group as it
    // stands under the locks, each held FOR KEY SHARE so none leaves before COMMIT.
    const siblings = (await ex.query<{id: number}>(sameAsKept([keptId]))).map((row) => row.id)
    const still = extraIds.filter((id) => locked.includes(id) && siblings.includes(id))
    // The group is allowed as many events as the try's declared outlets call for (one per
    // declaration of the asset, directly or by Asset.ref): only those beyond are duplicates, and
    // where the serialized DAG cannot tell, none is (the audit reported them duplicate_unknown).
    const declared = await declaredOfKept(ex, keptId)
    const excess = declared.known ? siblings.length + 1 - declared.count : 0
    const namedIds = (await ex.query<{id: number}>(named([still]))).map((row) => row.id)
    // The unnamed extras last in the audit's order (named first, then id) are the excess ones.
    const candidates = still
      .filter((id) => !namedIds.includes(id))
      .sort((a, b) => b - a)
      .slice(0, Math.max(0, excess))
    const changed = extraIds.filter((id) => !candidates.includes(id) && !namedIds.includes(id))
    if (candidates.length === 0) return {...nothing, changed, named: namedIds}
    const [dags] = await ex.query<{wanted: number; locked: number; partitioned: boolean}>(consumers([all]))
    if (dags!.locked < dags!.wanted) return {...nothing, busy: candidates, changed, named: namedIds}
    const consumedIds = (await ex.query<{event_id: number}>(consumed([candidates]))).map((row) => row.event_id)
    const unconsumed = candidates.filter((id) => !consumedIds.includes(id))
    const partitioned = dags!.partitioned && dags!.wanted > 0
    const queuedIds =
      !partitioned && queued && unconsumed.length > 0
        ? (await ex.query<{id: number}>(queued([unconsumed]))).map((row) => row.id)
        : []
    const pending = partitioned ? unconsumed : queuedIds
    const pendingReason = pending.length === 0 ? null : partitioned ? 'partitioned_consumer' : 'queued'
    const removable = unconsumed.filter((id) => !pending.includes(id))
    const rows = removable.length > 0 ? await ex.query<{id: number; row: string}>(deleteEvents([removable])) : []
    rows.sort((a, b) => a.id - b.id)
    return {
      removed: rows.map((row) => row.id),
      removedRows: rows.map((row) => JSON.parse(row.row) as Record<string, unknown>),
      consumed: consumedIds,
      pending,
      pendingReason,
      busy: [],
      changed,
      named: namedIds,
    }
  }
}

/** The statements of one group's repair (see removeDuplicateEvents), per capability set. */
function repairStatements(
  capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape' | 'partitionedTimetables'>,
) {
  const lock = prepared(
    'lock_events_skip_locked',
    'select id from asset_event where id = any($1::int[]) order by id for update skip locked',
  )
  const sameAsKept = sameAsKeptStatement(capabilities)
  // complete's audit row of a try lists the events it wrote for that try (extra.airlock.event_ids).
  const named = prepared(
    'events_named_by_success_row',
    `select e.id from asset_event e
      where e.id = any($1::int[])
        and ${namedByAirlockRow(
          'e.id',
          {
            dagId: 'e.source_dag_id',
            runId: 'e.source_run_id',
            taskId: 'e.source_task_id',
            mapIndex: 'coalesce(e.source_map_index, -1)',
          },
          ['success'],
        )}`,
  )
  const consumers = prepared(
    `lock_consumer_dags${capabilities.partitionedTimetables ? '_partitioned' : ''}`,
    `with ${heldConsumerDags({partitionedTimetables: capabilities.partitionedTimetables, lock: true})}
     select (select count(*)::int from wanted w join dag d on d.dag_id = w.dag_id) as wanted,
            (select count(*)::int from locked) as locked,
            coalesce((select bool_or(partitioned) from locked), false) as partitioned`,
  )
  const consumed = prepared(
    capabilities.eventPartitionKey ? 'consumed_events_partitioned' : 'consumed_events',
    `select event_id from dagrun_asset_event where event_id = any($1::int[])${
      capabilities.eventPartitionKey
        ? ' union select asset_event_id from partitioned_asset_key_log where asset_event_id = any($1::int[])'
        : ''
    }`,
  )
  // 3.4: the extras a queue row names, for any consumer (what a scheduler's unlocked read carries).
  const queued =
    capabilities.queueShape === 'per_event'
      ? prepared(
          'queued_events',
          'select distinct asset_event_id as id from asset_dag_run_queue where asset_event_id = any($1::int[]) order by 1',
        )
      : undefined
  // The deleted rows whole, with their alias links (read in the statement's snapshot, before the
  // foreign key's cascade removes them): the fix's audit row keeps what would restore them.
  const deleteEvents = prepared(
    'delete_events',
    `with links as (select l.event_id, json_agg(l.alias_id order by l.alias_id) as alias_ids
                      from asset_alias_asset_event l where l.event_id = any($1::int[]) group by l.event_id),
          gone as (delete from asset_event where id = any($1::int[]) returning *)
     -- Without its extra: free-form data the audit log's readers need not see. A duplicate's extra
     -- equals its kept event's (sameAsKept), which is where an undo takes it from.
     select gone.id, ((to_jsonb(gone) - 'extra') || jsonb_build_object('alias_ids', coalesce(links.alias_ids, '[]'::json)))::text as row
       from gone left join links on links.event_id = gone.id`,
  )
  const {keptDeclared} = declaredOutletsStatements()
  return {lock, sameAsKept, named, consumers, consumed, queued, deleteEvents, keptDeclared}
}

/**
 * The DAG versions the rows of the kept event's try name (task_instance, task_instance_history),
 * its asset and task, and those versions' serialized DAGs: what declaredAllowance reads the try's
 * outlets from, under the repair's locks.
 */
function declaredOutletsStatements() {
  const keyOfKept = {
    dagId: 'k.source_dag_id',
    runId: 'k.source_run_id',
    taskId: 'k.source_task_id',
    mapIndex: 'k.map_index',
  }
  const arrays = tryArraysOf('t')
  const keptDeclared = prepared(
    'kept_event_declared_outlets',
    `with kept as (select e.*, coalesce(e.source_map_index, -1) as map_index from asset_event e where e.id = $1),
          f as (select ${arrays.numbers} as numbers, ${arrays.starts} as starts, ${arrays.lastWrites} as last_writes
                  from (${tryRows((alias) => `(${alias}.dag_id, ${alias}.run_id, ${alias}.task_id, ${alias}.map_index) = (select source_dag_id, source_run_id, source_task_id, map_index from kept)`)}) as t),
          try as (select (${attributedTry({id: 'k.id', timestamp: 'k."timestamp"'}, keyOfKept, {numbers: 'f.numbers', starts: 'f.starts', lastWrites: 'f.last_writes'})})[1] as try_number
                    from kept k, f)
     select a.name, a.uri, k.source_task_id as task_id, ${tryDagVersionIds(keyOfKept, 'try.try_number')} as dag_version_ids
       from kept k join asset a on a.id = k.asset_id, try`,
  )
  return {keptDeclared}
}

/**
 * Every other event still of the kept event's group under the repair's locks, the audit's extras
 * or not: same source task instance, asset, extra, partition key and aliases, and of the same try
 * by the audit's attribution as it holds now. Each is held FOR KEY SHARE (the weakest lock a
 * DELETE conflicts with, and no obstacle to the scheduler's foreign-key check) so the group cannot
 * shrink before COMMIT; one another session holds is skipped, which counts the group smaller and
 * so removes fewer.
 */
function sameAsKeptStatement(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partition = capabilities.eventPartitionKey ? "coalesce(e.partition_key, '')" : "''"
  const keptKey = {
    dagId: 'k.source_dag_id',
    runId: 'k.source_run_id',
    taskId: 'k.source_task_id',
    mapIndex: 'k.map_index',
  }
  const keptTries = {numbers: 'f.numbers', starts: 'f.starts', lastWrites: 'f.last_writes'}
  const arrays = tryArraysOf('t')
  return prepared(
    `duplicates_of_kept${capabilities.eventPartitionKey ? '_partitioned' : ''}`,
    `with kept as (
       select e.*, coalesce(e.source_map_index, -1) as map_index, ${partition} as partition_text, e.extra::jsonb as extra_jsonb,
              coalesce((select string_agg(l.alias_id::text, ',' order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '') as alias_text
         from asset_event e where e.id = $1
     ), f as (
       select ${arrays.numbers} as numbers, ${arrays.starts} as starts, ${arrays.lastWrites} as last_writes
         from (${tryRows((alias) => `(${alias}.dag_id, ${alias}.run_id, ${alias}.task_id, ${alias}.map_index) = (select source_dag_id, source_run_id, source_task_id, map_index from kept)`)}) as t
     )
     select e.id from asset_event e, kept k, f
      where e.id <> k.id
        and e.asset_id = k.asset_id and e.source_dag_id = k.source_dag_id and e.source_run_id = k.source_run_id
        and e.source_task_id = k.source_task_id and coalesce(e.source_map_index, -1) = k.map_index
        and e.extra::jsonb = k.extra_jsonb and ${partition} = k.partition_text
        and coalesce((select string_agg(l.alias_id::text, ',' order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '') = k.alias_text
        -- Both still of one try, by the audit's attribution as it holds now (a rerun since the
        -- audit read them can make one a later try's event, or unattributed: no longer a duplicate).
        and (${attributedTry({id: 'e.id', timestamp: 'e."timestamp"'}, keptKey, keptTries)})[1]
          = (${attributedTry({id: 'k.id', timestamp: 'k."timestamp"'}, keptKey, keptTries)})[1]
      order by e.id
        for key share of e skip locked`,
  )
}

/** The events family for one capability set. */
export function eventStore(capabilities: Capabilities): EventStore {
  return {
    readEventLinePage: readEventLinePage(capabilities),
    readEventsById: readEventsById(capabilities),
    resolveAssetsAndAliases: resolveAssetsAndAliases(),
    findMatchingEvent: findMatchingEvent(capabilities),
    insertEventCopy: insertEventCopy(capabilities),
    readEventTry: readEventTry(),
    countEvents: countEvents(),
    removeDuplicateEvents: removeDuplicateEvents(capabilities),
  }
}
