import type {Capabilities} from '../../airflow/schema.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import {
  type AuditRecord,
  type AuditRecordWindow,
  type ClearImage,
  type ConsumingRun,
  type EventConsumerLocks,
  type QueueImageRow,
  type UndoQueueEffect,
  undoLogEvent,
} from '../families/undo.js'
import {heldConsumerDags} from './fragments.js'
import type {UndoStore} from '../families/undo.js'

interface AuditRecordRow {
  id: number
  dttm: Date | null
  logical_date: Date | null
  event: string | null
  dag_id: string | null
  run_id: string | null
  task_id: string | null
  map_index: number | null
  try_number: number | null
  owner: string | null
  extra: string | null
}

const recordColumns = 'id, dttm, logical_date, event, dag_id, run_id, task_id, map_index, try_number, owner, extra'

const recordOf = (row: AuditRecordRow): AuditRecord => ({
  id: row.id,
  at: row.dttm,
  logicalDate: row.logical_date,
  event: row.event,
  dagId: row.dag_id,
  runId: row.run_id,
  taskId: row.task_id,
  mapIndex: row.map_index,
  tryNumber: row.try_number,
  owner: row.owner,
  extra: row.extra,
})

/** Audit `log` rows by id, in id order (an id with no row is simply absent). */
function readAuditRecords() {
  const read = prepared('audit_records', `select ${recordColumns} from log where id = any($1::int[]) order by id`)
  return async (ex: Executor, ids: readonly number[]): Promise<AuditRecord[]> =>
    (await ex.query<AuditRecordRow>(read([ids]))).map(recordOf)
}

/**
 * The audit rows airlock's writers left in a window of `log.dttm` (idx_log_dttm), newest first (a
 * limit keeps the newest: an older write is taken back only after the ones built on it):
 * rows of the given events whose extra names airlock, optionally by who acted (`owner`, which
 * airlock fills with the actor the operator names or the OS user) and by DAG, run and task.
 */
function readAuditRecordWindow() {
  const read = prepared(
    'audit_record_window',
    `select ${recordColumns} from log
      where dttm >= $1::timestamptz and dttm < $2::timestamptz and event = any($3::text[])
        and extra like '%"airlock":{%'
        and ($4::text is null or owner = $4)
        and (cardinality($5::text[]) = 0 or dag_id = any($5::text[]))
        and (cardinality($6::text[]) = 0 or run_id = any($6::text[]))
        and (cardinality($7::text[]) = 0 or task_id = any($7::text[]))
      order by id desc
      limit $8`,
  )
  return async (ex: Executor, window: AuditRecordWindow): Promise<AuditRecord[]> =>
    (
      await ex.query<AuditRecordRow>(
        read([
          window.since,
          window.until,
          window.events,
          window.owner ?? null,
          window.dagIds,
          window.runIds,
          window.taskIds,
          window.limit ?? null,
        ]),
      )
    ).map(recordOf)
}

/**
 * The undo row that took back audit row `logId`, if one committed: its extra says
 * `"undoes": logId` (`exceptId`: the calling undo's own row, not committed yet). The CASE keeps the cast away from rows of other events, whose extra need not
 * be JSON.
 */
function findUndoOf() {
  const undoEvent = undoLogEvent
  const find = prepared(
    'find_undo_of',
    `select id from log
      where event = $1
        and (case when event = $1 then (extra::jsonb -> 'airlock' ->> 'undoes') end) = $2::int::text
        and id is distinct from $3::int
      order by id limit 1`,
  )
  return async (ex: Executor, logId: number, exceptId?: number): Promise<number | undefined> => {
    const [row] = await ex.query<{id: number}>(find([undoEvent, logId, exceptId ?? null]))
    return row?.id
  }
}

/**
 * Locks the `dag` rows of every DAG scheduled on these events' assets or aliases, FOR SHARE SKIP
 * LOCKED, the locks the duplicate repair takes: the scheduler creates an asset-triggered run only
 * for a DAG row it locked (`DagModel.dags_needing_dagruns`, FOR NO KEY UPDATE SKIP LOCKED: `with_row_locks`' key_share default), so while they
 * are held no run can take these events, and a row it holds is reported rather than waited for.
 * Also: which of them have a partitioned timetable (3.2+), whose partition path takes events
 * without that lock, and the events' assets and aliases (what the downstream preview reads).
 */
function lockEventConsumers(capabilities: Pick<Capabilities, 'partitionedTimetables'>) {
  // A plan reads the same without the lock (a read-only session takes no row lock).
  const text = (lock: boolean) =>
    prepared(
      `${lock ? 'lock' : 'read'}_event_consumers${capabilities.partitionedTimetables ? '_partitioned' : ''}`,
      `with ${heldConsumerDags({partitionedTimetables: capabilities.partitionedTimetables, lock})}
     select (select count(*)::int from wanted w join dag d on d.dag_id = w.dag_id) as wanted,
            (select count(*)::int from locked) as locked,
            array(select dag_id from locked where partitioned order by 1) as partitioned,
            array(select distinct e.asset_id from asset_event e where e.id = any($1::int[]) order by 1) as asset_ids,
            array(select distinct l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[]) order by 1) as alias_ids`,
    )
  const lock = text(true)
  const read = text(false)
  return async (
    ex: Executor,
    eventIds: readonly number[],
    options: {lock: boolean} = {lock: true},
  ): Promise<EventConsumerLocks> => {
    const [row] = await ex.query<{
      wanted: number
      locked: number
      partitioned: string[]
      asset_ids: number[]
      alias_ids: number[]
    }>((options.lock ? lock : read)([eventIds]))
    return {
      wanted: row!.wanted,
      locked: row!.locked,
      partitioned: row!.partitioned,
      assetIds: row!.asset_ids,
      aliasIds: row!.alias_ids,
    }
  }
}

/**
 * The dag runs that consumed any of these events (`dagrun_asset_event`, which
 * `_create_dag_runs_asset_triggered` fills with `dag_run.consumed_asset_events`), and from 3.2 the
 * partition log rows a partition mapper wrote for them (`partitioned_asset_key_log`, no run yet).
 */
function readConsumingRuns(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const read = prepared(
    capabilities.eventPartitionKey ? 'consuming_runs_partitioned' : 'consuming_runs',
    `select c.event_id, r.dag_id, r.run_id from dagrun_asset_event c join dag_run r on r.id = c.dag_run_id
      where c.event_id = any($1::int[])${
        capabilities.eventPartitionKey
          ? `
     union all
     select l.asset_event_id, l.target_dag_id, null from partitioned_asset_key_log l where l.asset_event_id = any($1::int[])`
          : ''
      }
      order by 1, 2, 3`,
  )
  return async (ex: Executor, eventIds: readonly number[]): Promise<ConsumingRun[]> =>
    (await ex.query<{event_id: number; dag_id: string; run_id: string | null}>(read([eventIds]))).map((row) => ({
      eventId: row.event_id,
      dagId: row.dag_id,
      runId: row.run_id,
    }))
}

/**
 * Deletes these events; their alias links and (3.4+) their queue rows go with them by their
 * foreign keys' ON DELETE CASCADE. Returns the ids deleted (an id already gone is not).
 */
function deleteEvents() {
  const remove = prepared(
    'undo_delete_events',
    'delete from asset_event where id = any($1::int[]) returning id, asset_id',
  )
  return async (ex: Executor, eventIds: readonly number[]): Promise<Array<{id: number; assetId: number}>> =>
    (await ex.query<{id: number; asset_id: number}>(remove([eventIds])))
      .map((row) => ({id: row.id, assetId: row.asset_id}))
      .sort((a, b) => a.id - b.id)
}

/**
 * Before 3.4, the queue rows a write created, deleted where nothing else needs them. The rows it
 * created are those of its events' assets whose row version its transaction wrote (xmin equal to
 * its audit row's): a key queued already was left as it was (`ON CONFLICT DO NOTHING`). A row
 * keyed (asset, DAG) stands for every pending event of that asset, not for one: another
 * producer's event stamped since the row was created found it there and queued nothing of its
 * own. Such a row is kept, with the `created_at` the first of those events would have given it
 * (its own insert, at about its timestamp): the scheduler's triggered date is the newest
 * created_at of the DAG's rows and it takes the events stamped up to it
 * (`DagModel.dags_needing_dagruns`, `SchedulerJobRunner._create_dag_runs_asset_triggered`), so
 * airlock's earlier time would leave that event out of the run it triggers. Only events after the
 * DAG's last asset-triggered run's run_after count, as the scheduler reads them. Returns the keys
 * deleted and kept.
 */
function deleteCreatedQueueRows() {
  const remove = prepared(
    'undo_delete_queue_rows',
    `with created as (
       select q.target_dag_id as dag_id, q.asset_id, q.created_at
         from asset_dag_run_queue q
        where q.asset_id = any($1::int[]) and q.xmin = (select l.xmin from log l where l.id = $2::int)
     ), needed as (
       select c.dag_id, c.asset_id, min(e.timestamp) as first_pending
         from created c
         join asset_event e on e.asset_id = c.asset_id and e.id <> all($3::int[]) and e.timestamp >= c.created_at
        where e.timestamp > coalesce((select max(r.run_after) from dag_run r
                                       where r.dag_id = c.dag_id and r.run_type = 'asset_triggered'), '-infinity')
        group by c.dag_id, c.asset_id
     ), kept as (
       update asset_dag_run_queue q set created_at = n.first_pending
         from needed n where q.target_dag_id = n.dag_id and q.asset_id = n.asset_id
       returning q.target_dag_id as dag_id, q.asset_id
     ), gone as (
       delete from asset_dag_run_queue q using created c
        where q.target_dag_id = c.dag_id and q.asset_id = c.asset_id
          and not exists (select 1 from needed n where n.dag_id = c.dag_id and n.asset_id = c.asset_id)
       returning q.target_dag_id as dag_id, q.asset_id
     )
     select 'deleted' as kind, dag_id, asset_id from gone
     union all
     select 'kept', dag_id, asset_id from kept
      order by 1, 2, 3`,
  )
  return async (
    ex: Executor,
    of: {assetIds: readonly number[]; logId: number},
    undoneEventIds: readonly number[],
  ): Promise<{deleted: Array<{dagId: string; assetId: number}>; kept: Array<{dagId: string; assetId: number}>}> => {
    if (of.assetIds.length === 0) return {deleted: [], kept: []}
    const result = await ex.query<{kind: 'deleted' | 'kept'; dag_id: string; asset_id: number}>(
      remove([of.assetIds, of.logId, undoneEventIds]),
    )
    const rowsOf = (kind: string) =>
      result.filter((r) => r.kind === kind).map((r) => ({dagId: r.dag_id, assetId: r.asset_id}))
    return {deleted: rowsOf('deleted'), kept: rowsOf('kept')}
  }
}

/**
 * What taking back a write's events does to the queue, decided on reads (the same rows
 * deleteCreatedQueueRows then deletes and keeps; from 3.4 the rows that go with the events by
 * their foreign key): the (DAG, asset) keys no longer queued afterwards, the keys kept (before
 * 3.4, another pending event still needs the row), and per DAG the aliases its queue no longer
 * reaches (linked only to assets that leave it). The downstream preview of an undo is the facts
 * read with the events, less these: one answer for the write, --dry-run and --plan. From 3.4
 * `kept` is the keys another event keeps queued: together with `deleted`, every key the events
 * hold in the queue (a row of each stays when a run consumed them for another DAG).
 */
function readUndoQueueEffect(capabilities: Pick<Capabilities, 'queueShape'>) {
  const perEvent = capabilities.queueShape === 'per_event'
  const keys = perEvent
    ? // One row per event (3.4): a key leaves the queue when every row of it is one of the events'.
      `gone as (
       select distinct q.target_dag_id as dag_id, q.asset_id
         from asset_dag_run_queue q
        where q.asset_event_id = any($1::int[])
          and not exists (select 1 from asset_dag_run_queue o
                           where o.target_dag_id = q.target_dag_id and o.asset_id = q.asset_id
                             and o.asset_event_id <> all($1::int[]))
     ), kept as (
       -- Still queued on another event: listed (what a consumed write leaves queued), not deleted.
       select distinct q.target_dag_id as dag_id, q.asset_id
         from asset_dag_run_queue q
        where q.asset_event_id = any($1::int[])
          and not exists (select 1 from gone g where g.dag_id = q.target_dag_id and g.asset_id = q.asset_id)
     )`
    : // deleteCreatedQueueRows' own choice, read: its created and needed rows.
      `created as (
       select q.target_dag_id as dag_id, q.asset_id, q.created_at
         from asset_dag_run_queue q
        where q.asset_id = any($1::int[]) and q.xmin = (select l.xmin from log l where l.id = $2::int)
     ), kept as (
       select c.dag_id, c.asset_id
         from created c
         join asset_event e on e.asset_id = c.asset_id and e.id <> all($3::int[]) and e.timestamp >= c.created_at
        where e.timestamp > coalesce((select max(r.run_after) from dag_run r
                                       where r.dag_id = c.dag_id and r.run_type = 'asset_triggered'), '-infinity')
        group by c.dag_id, c.asset_id
     ), gone as (
       select c.dag_id, c.asset_id from created c
        where not exists (select 1 from kept k where k.dag_id = c.dag_id and k.asset_id = c.asset_id)
     )`
  const read = prepared(
    `undo_queue_effect_${capabilities.queueShape}`,
    `with ${keys}, lost as (
       select distinct g.dag_id, al.name
         from gone g
         join asset_alias_asset l on l.asset_id = g.asset_id
         join asset_alias al on al.id = l.alias_id
        where not exists (select 1 from asset_dag_run_queue q join asset_alias_asset o on o.asset_id = q.asset_id
                           where q.target_dag_id = g.dag_id and o.alias_id = l.alias_id
                             and not exists (select 1 from gone n where n.dag_id = q.target_dag_id and n.asset_id = q.asset_id))
     )
     select 'deleted' as kind, dag_id, asset_id, null::varchar as alias from gone
     union all
     select 'kept', dag_id, asset_id, null from kept
     union all
     select 'alias', dag_id, null, name from lost
      order by 1, 2, 3, 4`,
  )
  return async (
    ex: Executor,
    of: {assetIds: readonly number[]; logId: number},
    undoneEventIds: readonly number[],
  ): Promise<UndoQueueEffect> => {
    if (of.assetIds.length === 0 || undoneEventIds.length === 0) return {deleted: [], kept: [], lostAliases: []}
    const rows = await ex.query<{kind: string; dag_id: string; asset_id: number | null; alias: string | null}>(
      // 3.4's text names the events alone.
      read(perEvent ? [undoneEventIds] : [of.assetIds, of.logId, undoneEventIds]),
    )
    const rowsOf = (kind: string) =>
      rows.filter((r) => r.kind === kind).map((r) => ({dagId: r.dag_id, assetId: r.asset_id!}))
    return {
      deleted: rowsOf('deleted'),
      kept: rowsOf('kept'),
      lostAliases: rows.filter((r) => r.kind === 'alias').map((r) => ({dagId: r.dag_id, alias: r.alias!})),
    }
  }
}

/**
 * The queue rows a write's events still hold (`undo --withdraw-queued`'s before-image), as JSON
 * rows (timestamps as PostgreSQL writes them, to the microsecond): before 3.4 the rows the write
 * created (its audit row's xmin, as deleteCreatedQueueRows finds them), from 3.4 the rows naming
 * its events. A consumer whose run consumed the events has none left: the scheduler deletes a
 * DAG's queue rows when it creates the run (`SchedulerJobRunner._create_dag_runs_asset_triggered`).
 */
function readWriteQueueRows(capabilities: Pick<Capabilities, 'queueShape'>) {
  const perEvent = capabilities.queueShape === 'per_event'
  const read = prepared(
    `undo_write_queue_rows_${capabilities.queueShape}`,
    perEvent
      ? `select json_build_object('dag_id', q.target_dag_id, 'asset_id', q.asset_id, 'created_at', q.created_at,
                                  'event_id', q.asset_event_id) as row
           from asset_dag_run_queue q where q.asset_event_id = any($1::int[])
          order by q.target_dag_id, q.asset_id, q.asset_event_id`
      : `select json_build_object('dag_id', q.target_dag_id, 'asset_id', q.asset_id, 'created_at', q.created_at) as row
           from asset_dag_run_queue q
          where q.asset_id = any($1::int[]) and q.xmin = (select l.xmin from log l where l.id = $2::int)
          order by q.target_dag_id, q.asset_id`,
  )
  return async (
    ex: Executor,
    of: {assetIds: readonly number[]; logId: number},
    eventIds: readonly number[],
  ): Promise<QueueImageRow[]> => {
    if (eventIds.length === 0) return []
    return (await ex.query<{row: QueueImageRow}>(read(perEvent ? [eventIds] : [of.assetIds, of.logId]))).map(
      (r) => r.row,
    )
  }
}

/** 3.4: the queue rows naming these events deleted (keyed per event, nothing else needs them). */
function deleteEventQueueRows() {
  const remove = prepared(
    'undo_withdraw_event_queue_rows',
    `delete from asset_dag_run_queue q where q.asset_event_id = any($1::int[])
      returning q.target_dag_id as dag_id, q.asset_id`,
  )
  return async (ex: Executor, eventIds: readonly number[]): Promise<Array<{dagId: string; assetId: number}>> =>
    (await ex.query<{dag_id: string; asset_id: number}>(remove([eventIds])))
      .map((r) => ({dagId: r.dag_id, assetId: r.asset_id}))
      .sort((a, b) => a.dagId.localeCompare(b.dagId) || a.assetId - b.assetId)
}

/**
 * Why withdrawn queue rows cannot be put back, one phrase per row (none: all can): the DAG or the
 * asset is gone, the write's events of the asset are gone, or a run of that DAG consumed them
 * since (`dagrun_asset_event`): a row put back would queue a run on events already consumed.
 */
function readQueueRowsUnrestorable() {
  const check = prepared(
    'undo_queue_rows_unrestorable',
    `select format('%s/asset %s: %s', b.dag_id, b.asset_id,
                   case when not exists (select 1 from dag d where d.dag_id = b.dag_id) then 'the DAG is gone'
                        when not exists (select 1 from asset a where a.id = b.asset_id) then 'the asset is gone'
                        when not exists (select 1 from asset_event e where e.asset_id = b.asset_id and e.id = any($2::int[])
                                            and (b.event_id is null or e.id = b.event_id))
                          then 'its events are gone'
                        else 'a run of it consumed the events since' end) as problem
       from json_to_recordset($1::json) as b(dag_id text, asset_id int, created_at timestamptz, event_id int)
      where not exists (select 1 from dag d where d.dag_id = b.dag_id)
         or not exists (select 1 from asset a where a.id = b.asset_id)
         or not exists (select 1 from asset_event e where e.asset_id = b.asset_id and e.id = any($2::int[])
                           and (b.event_id is null or e.id = b.event_id))
         or exists (select 1 from dagrun_asset_event c join dag_run r on r.id = c.dag_run_id
                     join asset_event e on e.id = c.event_id
                    where r.dag_id = b.dag_id and e.asset_id = b.asset_id and c.event_id = any($2::int[]))
      order by 1`,
  )
  return async (ex: Executor, rows: readonly QueueImageRow[], eventIds: readonly number[]): Promise<string[]> =>
    (await ex.query<{problem: string}>(check([JSON.stringify(rows), eventIds]))).map((r) => r.problem)
}

/**
 * Withdrawn queue rows put back from the withdrawal's before-image. Before 3.4 a key queued again
 * since keeps its row with the earlier of the two times (the scheduler takes the events stamped up
 * to the newest created_at of the DAG's rows: the earlier time keeps the write's event in the
 * window, as `AssetManager._queue_dagruns_nonpartitioned_postgres` would have left it); from 3.4 a
 * row per event, one queued again since left as it is.
 */
function restoreQueueRows(capabilities: Pick<Capabilities, 'queueShape'>) {
  const perEvent = capabilities.queueShape === 'per_event'
  const restore = prepared(
    `undo_restore_queue_rows_${capabilities.queueShape}`,
    perEvent
      ? `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at, asset_event_id)
         select b.asset_id, b.dag_id, b.created_at, b.event_id
           from json_to_recordset($1::json) as b(dag_id text, asset_id int, created_at timestamptz, event_id int)
          order by b.dag_id, b.event_id
         on conflict (target_dag_id, asset_event_id) do nothing
         returning target_dag_id as dag_id, asset_id`
      : `insert into asset_dag_run_queue as q (asset_id, target_dag_id, created_at)
         select b.asset_id, b.dag_id, b.created_at
           from json_to_recordset($1::json) as b(dag_id text, asset_id int, created_at timestamptz)
          order by b.asset_id, b.dag_id
         on conflict (asset_id, target_dag_id) do update set created_at = least(q.created_at, excluded.created_at)
         returning q.target_dag_id as dag_id, q.asset_id`,
  )
  return async (ex: Executor, rows: readonly QueueImageRow[]): Promise<Array<{dagId: string; assetId: number}>> => {
    if (rows.length === 0) return []
    return (await ex.query<{dag_id: string; asset_id: number}>(restore([JSON.stringify(rows)])))
      .map((r) => ({dagId: r.dag_id, assetId: r.asset_id}))
      .sort((a, b) => a.dagId.localeCompare(b.dagId) || a.assetId - b.assetId)
  }
}

/**
 * Under the task instance's row lock: whether it is still exactly the row version airlock's write
 * left. PostgreSQL stamps every row version with the transaction that wrote it (xmin): the
 * task_instance row and the audit row of one write carry the same one until anything writes the
 * row again (a heartbeat, a clear, the UI, the scheduler). Its state and try, to say what moved.
 */
function compareTaskInstanceLeft() {
  const compare = prepared(
    'undo_compare_ti',
    `select ti.xmin = l.xmin as same, ti.state, ti.try_number
       from task_instance ti, log l
      where ti.id = $1::uuid and l.id = $2::int`,
  )
  return async (
    ex: Executor,
    tiId: string,
    logId: number,
  ): Promise<{same: boolean; state: string | null; tryNumber: number | null} | undefined> => {
    const [row] = await ex.query<{same: boolean; state: string | null; try_number: number | null}>(
      compare([tiId, logId]),
    )
    return row ? {same: row.same, state: row.state, tryNumber: row.try_number} : undefined
  }
}

/**
 * The task instance's columns as they were before airlock's write, from its before-image: what
 * `complete` changed (state, start_date, end_date, duration, updated_at, next_method; next_kwargs
 * stays NULL, and a write that found it set is not undone).
 */
function restoreTaskInstance() {
  const restore = prepared(
    'undo_restore_ti',
    `update task_instance ti
        set state = b.state, start_date = b.start_date, end_date = b.end_date, duration = b.duration,
            updated_at = b.updated_at, next_method = b.next_method
       from json_populate_record(null::task_instance, $2::json) as b
      where ti.id = $1::uuid
  returning ti.id`,
  )
  return async (ex: Executor, tiId: string, before: unknown): Promise<boolean> =>
    (await ex.query(restore([tiId, JSON.stringify(before)]))).length === 1
}

/**
 * Events the duplicate repair removed, put back from its before-image (every column as it was, the
 * id included) with their alias links. The before-image leaves the extra out (free-form data the
 * audit log's readers need not see): a duplicate's extra equals its kept event's, so it is taken
 * from the kept event, which must still exist. An id that exists again is left alone and not
 * returned (a concurrent undo of the same fix put it back).
 */
function restoreEvents() {
  const restore = prepared(
    'undo_restore_events',
    `with kept as (
       select extra from asset_event where id = $2::int
     ), rows as (
       select (r.row::jsonb || jsonb_build_object('extra', (select extra from kept)))::json as row, (r.row ->> 'id')::int as id
         from json_array_elements($1::json) as r(row)
        where exists (select 1 from kept)
     ), back as (
       insert into asset_event
       select (json_populate_record(null::asset_event, rows.row)).* from rows
       on conflict (id) do nothing
       returning id
     ), links as (
       insert into asset_alias_asset_event (alias_id, event_id)
       select a.alias_id::int, rows.id from rows join back on back.id = rows.id,
              json_array_elements_text(coalesce(rows.row -> 'alias_ids', '[]'::json)) as a(alias_id)
        where exists (select 1 from asset_alias al where al.id = a.alias_id::int)
     )
     select id from back order by id`,
  )
  return async (ex: Executor, rows: readonly unknown[], keptEventId: number): Promise<number[]> =>
    (await ex.query<{id: number}>(restore([JSON.stringify(rows), keptEventId]))).map((row) => row.id)
}

/**
 * The clear of a completion that continued its run, under undo: the task instances it cleared (by the ids it gave
 * them) and the run locked in the protocol's order (task instances by key, then the run), then
 * compared with what the clear left. Returns what moved on since, one phrase per row; empty when
 * every row is still exactly that.
 */
function lockAndCompareClear() {
  const lockTis = prepared(
    'undo_lock_cleared',
    'select id from task_instance where id = any($1::uuid[]) order by task_id, map_index for update',
  )
  const lockRun = prepared('undo_lock_cleared_run', 'select id from dag_run where id = $1::int for update')
  const compare = prepared(
    'undo_compare_cleared',
    `select format('%s[%s] %s', l.task_id, l.map_index,
                   case when ti.id is null then 'has another id now (cleared again, or retried)'
                        else 'changed (' || array_to_string(array_remove(array[
                               case when ti.state is distinct from l.state then 'state, now ' || coalesce(ti.state, 'none') end,
                               case when ti.try_number is distinct from l.try_number then 'try_number' end,
                               case when ti.updated_at is distinct from l.updated_at then 'updated_at' end], null), ', ') || ')' end) as change
       from json_populate_recordset(null::task_instance, $1::json) as l
       left join task_instance ti on ti.id = l.id
      where ti.id is null or ti.state is distinct from l.state or ti.try_number is distinct from l.try_number
         or ti.updated_at is distinct from l.updated_at
     union all
     select format('the run changed (%s)', array_to_string(array_remove(array[
              case when d.state is distinct from l.state then 'state, now ' || coalesce(d.state, 'none') end,
              case when d.clear_number is distinct from l.clear_number then 'clear_number' end,
              case when d.updated_at is distinct from l.updated_at then 'updated_at' end], null), ', '))
       from json_populate_record(null::dag_run, $2::json) as l join dag_run d on d.id = l.id
      where d.state is distinct from l.state or d.clear_number is distinct from l.clear_number
         or d.updated_at is distinct from l.updated_at`,
  )
  return async (
    ex: Executor,
    left: {taskInstances: readonly unknown[]; dagRun: unknown},
    options: {lock: boolean} = {lock: true},
  ): Promise<string[]> => {
    const ids = left.taskInstances.map((t) => (t as {id: string}).id)
    if (options.lock) {
      await ex.query(lockTis([ids]))
      await ex.query(lockRun([(left.dagRun as {id: number}).id]))
    }
    const rows = await ex.query<{change: string}>(
      compare([JSON.stringify(left.taskInstances), JSON.stringify(left.dagRun)]),
    )
    return rows.map((row) => row.change)
  }
}

/**
 * The clear taken back: each cleared task instance gets its old id and columns again (its note
 * and HITL record follow the id by ON UPDATE CASCADE, as they followed the clear), the tries the
 * clear archived leave task_instance_history, the reschedules it deleted come back whole, and the
 * run's columns are put back.
 */
function restoreClear() {
  const ids = prepared(
    'undo_restore_cleared',
    `update task_instance ti
        set id = b.id, state = b.state, max_tries = b.max_tries, external_executor_id = b.external_executor_id,
            next_method = b.next_method, updated_at = b.updated_at
       from json_populate_recordset(null::task_instance, $1::json) as b
       join json_populate_recordset(null::task_instance, $2::json) as l on l.task_id = b.task_id and l.map_index = b.map_index
      where ti.id = l.id`,
  )
  const history = prepared(
    'undo_unarchive_cleared',
    `delete from task_instance_history h using json_populate_recordset(null::task_instance, $1::json) as b
      where h.task_instance_id = b.id and h.try_number = b.try_number`,
  )
  const reschedules = prepared(
    'undo_restore_reschedules',
    `insert into task_reschedule select (json_populate_record(null::task_reschedule, r)).* from json_array_elements($1::json) as r`,
  )
  const run = prepared(
    'undo_restore_run',
    `update dag_run d
        set state = b.state, queued_at = b.queued_at, start_date = b.start_date, end_date = b.end_date,
            last_scheduling_decision = b.last_scheduling_decision, clear_number = b.clear_number, updated_at = b.updated_at
       from json_populate_record(null::dag_run, $1::json) as b
      where d.id = b.id`,
  )
  return async (ex: Executor, image: ClearImage): Promise<void> => {
    await ex.query(ids([JSON.stringify(image.taskInstances), JSON.stringify(image.left.taskInstances)]))
    const archived = image.taskInstances.filter((t) => (t as {archived_before?: boolean}).archived_before === false)
    if (archived.length > 0) await ex.query(history([JSON.stringify(archived)]))
    if (image.reschedules.length > 0) await ex.query(reschedules([JSON.stringify(image.reschedules)]))
    await ex.query(run([JSON.stringify(image.dagRun)]))
  }
}

/**
 * What the scheduler did with a completion since it committed: task instances of its run (of
 * `taskIds`, its downstream; null: every other one) whose row changed after the completed task
 * instance's `updated_at` (the caller checked it is still the row the completion wrote), and the
 * run when it finished after it. `except`: rows another check covers (the ones its clear cleared).
 */
function readMovedSince() {
  const read = prepared(
    'undo_moved_since',
    `select format('%s[%s] is %s since', ti.task_id, ti.map_index, coalesce(ti.state, 'none')) as change
       from task_instance ti
      where ti.dag_id = $1 and ti.run_id = $2 and ti.id <> $3::uuid and ti.id <> all($5::uuid[])
        and ($4::text[] is null or ti.task_id = any($4::text[]))
        and ti.updated_at > (select c.updated_at from task_instance c where c.id = $3::uuid)
     union all
     select format('the run is %s since', coalesce(d.state, 'none')) from dag_run d
      where d.dag_id = $1 and d.run_id = $2
        and d.end_date >= (select c.updated_at from task_instance c where c.id = $3::uuid)
      order by 1`,
  )
  return async (
    ex: Executor,
    of: {dagId: string; runId: string; tiId: string; taskIds: readonly string[] | null; except: readonly string[]},
  ): Promise<string[]> =>
    (await ex.query<{change: string}>(read([of.dagId, of.runId, of.tiId, of.taskIds, of.except]))).map(
      (row) => row.change,
    )
}

/** The undo family for one capability set. */
export function undoStore(
  capabilities: Pick<Capabilities, 'partitionedTimetables' | 'eventPartitionKey' | 'queueShape'>,
): UndoStore {
  return {
    readAuditRecords: readAuditRecords(),
    readAuditRecordWindow: readAuditRecordWindow(),
    findUndoOf: findUndoOf(),
    lockEventConsumers: lockEventConsumers(capabilities),
    readConsumingRuns: readConsumingRuns(capabilities),
    deleteEvents: deleteEvents(),
    deleteCreatedQueueRows: deleteCreatedQueueRows(),
    readUndoQueueEffect: readUndoQueueEffect(capabilities),
    readWriteQueueRows: readWriteQueueRows(capabilities),
    deleteEventQueueRows: deleteEventQueueRows(),
    readQueueRowsUnrestorable: readQueueRowsUnrestorable(),
    restoreQueueRows: restoreQueueRows(capabilities),
    compareTaskInstanceLeft: compareTaskInstanceLeft(),
    restoreTaskInstance: restoreTaskInstance(),
    readMovedSince: readMovedSince(),
    restoreEvents: restoreEvents(),
    lockAndCompareClear: lockAndCompareClear(),
    restoreClear: restoreClear(),
  }
}
