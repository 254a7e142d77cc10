import type {Params} from '../../engine/prepared.js'
import type {EventFilter} from '../types.js'
import {attributedTry, namesEvent, namingEvents, notUndone} from './attribution.js'

/**
 * The conditions of an event filter on `asset_event e` (time window, source DAG, asset names or
 * uris), shared by export, the audit's key pages, its external count and its classification.
 */
export function eventFilterConditions(params: Params, filter: EventFilter): string[] {
  const conditions: string[] = []
  if (filter.since) conditions.push(`e."timestamp" >= ${params.add(filter.since)}::timestamptz`)
  if (filter.until) conditions.push(`e."timestamp" < ${params.add(filter.until)}::timestamptz`)
  if (filter.sourceDagId) conditions.push(`e.source_dag_id = ${params.add(filter.sourceDagId)}`)
  if (filter.assets.length > 0) {
    const names = params.add([...filter.assets])
    conditions.push(
      `e.asset_id in (select id from asset where name = any(${names}::text[]) or uri = any(${names}::text[]))`,
    )
  }

  return conditions
}

/** The task-instance key as SQL expressions (columns or placeholders). */
export interface TryKey {
  dagId: string
  runId: string
  taskId: string
  mapIndex: string
  tryNumber: string
}

/**
 * When this try began, as far as events can tell without trusting clocks to agree: when the
 * previous try's row was last written, archived in task_instance_history (`record_ti` copies every
 * column of the task instance, updated_at included, when the next try starts:
 * airflow-core/src/airflow/models/taskinstancehistory.py). That write is the previous try's final
 * state, made after its events by the same servers' clocks; end_date comes from the worker and can
 * be earlier than its own events. -infinity when there was no previous try. The try's own
 * start_date is never used: airlock sets it to the end date for a task that never started, and a
 * worker's clock can run ahead of the database's, so events of the try would fall before it.
 */
export function tryBegan(on: TryKey): string {
  return `coalesce((select max(coalesce(h.updated_at, h.end_date, h.start_date)) from task_instance_history h
     where h.dag_id = ${on.dagId} and h.run_id = ${on.runId} and h.task_id = ${on.taskId} and h.map_index = ${on.mapIndex}
       and h.try_number < ${on.tryNumber}), '-infinity')`
}

/**
 * Whether an audit row airlock wrote names event `eventId` (complete's `success` row and
 * replay-events' row list the events they wrote in extra.airlock.event_ids; namesEvent): evidence
 * that needs no clock at all. Without `tryNumber`, a row of any try counts; `missingMode`: only
 * replay-events' missing mode (it writes an event only when it found the try without one, unlike
 * re-emitting an event by id or from a file, which copies an event on purpose).
 */
export function namedByAirlockRow(
  eventId: string,
  on: Omit<TryKey, 'tryNumber'> & {tryNumber?: string},
  events: Parameters<typeof namesEvent>[2] = namingEvents,
  options: {missingMode?: boolean} = {},
): string {
  const mode = options.missingMode
    ? ` and coalesce((case when l.extra like '{%"airlock"%' then l.extra::jsonb end) -> 'airlock' ->> 'mode', 'missing') = 'missing'`
    : ''
  return `exists (
    select 1 from log l
     where ${namesEvent(eventId, on, events)}${on.tryNumber ? ` and l.try_number = ${on.tryNumber}` : ''}${mode})`
}

/**
 * What the database says about how this try of a task instance came to be success, when its
 * events are missing: the rows of every kind of evidence there is, best first (`rank`). Each row
 * names the `log` row it rests on (null for the run's own columns). Airflow writes these rows:
 *
 * - `worker_success` (lost): the execution API's own success row for this exact try
 *   (`ti_update_state`, airflow-core/src/airflow/api_fastapi/execution_api/routes/task_instances.py,
 *   apache/airflow #61932: `Log(event=updated_state.value, …)` with dag_id, task_id, run_id,
 *   map_index, try_number and `extra` `{"host_name": …}`, in the same transaction as the state
 *   and `register_asset_changes_in_db`). A worker's success always emits its outlets' events, so
 *   missing ones were lost. Releases without #61932 never write it (3.0, 3.1).
 * - `airlock_events` (lost): airlock's own row of this try names events it wrote (complete's
 *   `success` row with events, or replay-events' row): they existed, so missing ones were lost.
 *   A row that `airlock undo` took back (notUndone) is not counted, here or as
 *   `airlock_no_events`: the undo deleted its events on purpose, so the try has the evidence it
 *   had without that write (a mark-success in the UI after the undo is `marked_task`, nothing at
 *   all `unknown`), and a plain replay never writes again what the operator took back.
 * - deliberate, `not_emitted`: a path that sets SUCCESS and emits no events on purpose, through
 *   `mark_tasks.set_state` (airflow-core/src/airflow/api/common/mark_tasks.py), logged by the REST
 *   API's `action_logging` (airflow-core/src/airflow/api_fastapi/logging/decorators.py: event = the
 *   endpoint's function name, map_index and try_number NULL, `extra` the query and path values
 *   as strings, then the JSON body, then `"method"`), stamped before the state changes (3.2.2 and
 *   3.3.2 commit it at once; 3.0.6 and 3.1.8 add it to the request's session, so it commits with
 *   the change), so counted only when written after the try began (tryBegan):
 *   - `marked_task`: `patch_task_instance` (PATCH …/taskInstances/{task_id}[/{map_index}]) with
 *     `new_state` success; a row that names another map index does not count;
 *   - `marked_group`: `patch_task_group_instances` (PATCH …/taskGroupInstances/{group_id}) with
 *     `new_state` success, for a task whose id carries the group's prefix (`group_id.`, Airflow's
 *     default `prefix_group_id`);
 *   - `marked_run`: `patch_dag_run` (PATCH …/dagRuns/{dag_run_id}) with `state` success, task_id
 *     NULL: `set_dag_run_state_to_success` sets every task instance of the run that is not
 *     success yet;
 *   - `airlock_no_events`: airlock's complete without events (its success row names no events);
 *   - `dags_test`: a run of `airflow dags test` (`triggered_by` 'test'), whose
 *     `--mark-success-pattern` tasks are set success without running.
 * Nothing is evidence of a bulk mark (PATCH …/taskInstances with `actions`, the UI's multi-select
 * "Mark as success"): `bulk_task_instances` has no `action_logging`, so such a try has no row here
 * and is `unknown`, as is every try on 3.0 and 3.1 that airlock did not write.
 *
 * log.extra is free text: read as JSON only on rows whose event says who wrote them. airlock's
 * rows carry `"airlock":{` (JSON.stringify's spacing, which Python's json.dumps never writes).
 */
function tryEvidenceRows(on: EvidenceOn): string {
  // A writer's recheck leaves out the log row its own transaction wrote.
  const key = `l.dag_id = ${on.dagId} and l.task_id = ${on.taskId} and l.run_id = ${on.runId}${on.exceptLogId ? ` and l.id is distinct from ${on.exceptLogId}` : ''}`
  const thisTry = `${key} and l.map_index = ${on.mapIndex} and l.try_number = ${on.tryNumber}`
  const airlockRow = `l.extra like '{%"airlock":{%'`
  const airlockEvents = "coalesce((l.extra::jsonb -> 'airlock' ->> 'events')::int, -1)"
  const sinceTryBegan = `l.dttm > ${tryBegan(on)}`
  // An event that may be this try's (eventOfThisTry's 'unattributed') makes "lost" and "marked
  // success without events" both unprovable for its outlet alone: the callers decide that outlet
  // as unattributed_event and the others on the rows below.
  return `select 1 as rank, 'worker_success' as kind, l.id as log_id from log l
          where ${thisTry} and l.event = 'success' and not (coalesce(l.extra, '') like '{%"airlock":{%')
         union all
         select 2, 'airlock_events', l.id from log l
          where ${thisTry} and l.event in ('success', 'airlock.replay-events') and ${airlockRow}
            and ((l.extra::jsonb -> 'airlock' ->> 'command') = 'replay-events' or ${airlockEvents} > 0)
            and ${notUndone('l')}
         union all
         select 3, 'airlock_no_events', l.id from log l
          where ${thisTry} and l.event = 'success' and ${airlockRow}
            and (l.extra::jsonb -> 'airlock' ->> 'command') like 'complete%' and ${airlockEvents} = 0
            and ${notUndone('l')}
         union all
         select 4, 'marked_task', l.id from log l
          where ${key} and l.event = 'patch_task_instance' and l.extra like '{%' and ${sinceTryBegan}
            and (l.extra::jsonb ->> 'new_state') = 'success'
            and coalesce(l.extra::jsonb ->> 'map_index', ${on.mapIndex}::text) = ${on.mapIndex}::text
         union all
         select 5, 'marked_group', l.id from log l
          where l.dag_id = ${on.dagId} and l.task_id is null and l.run_id = ${on.runId} and l.event = 'patch_task_group_instances'
            and l.extra like '{%' and ${sinceTryBegan} and (l.extra::jsonb ->> 'new_state') = 'success'
            and starts_with(${on.taskId}, (l.extra::jsonb ->> 'group_id') || '.')
         union all
         select 6, 'marked_run', l.id from log l
          where l.dag_id = ${on.dagId} and l.task_id is null and l.run_id = ${on.runId} and l.event = 'patch_dag_run'
            and l.extra like '{%' and ${sinceTryBegan} and (l.extra::jsonb ->> 'state') = 'success'
         union all
         select 7, 'dags_test', null from dag_run r
          where r.dag_id = ${on.dagId} and r.run_id = ${on.runId} and r.triggered_by = 'test'`
}

/** The try and, for a writer's recheck, the log row its own transaction wrote (never counted). */
type EvidenceOn = TryKey & {exceptLogId?: string}

/** The strongest evidence of this try (tryEvidenceRows), as its kind: 'unknown' when there is none. */
export function tryEvidenceKind(on: EvidenceOn): string {
  return `coalesce((select v.kind from (${tryEvidenceRows(on)}) as v order by v.rank limit 1), 'unknown')`
}

/** The strongest evidence of this try with the log row it rests on (no row: unknown); `exceptLogId` is never counted. */
export function tryEvidence(on: EvidenceOn): string {
  return `select v.kind, l.id as log_id, l.event, l.owner, l.dttm
            from (${tryEvidenceRows(on)}) as v left join log l on l.id = v.log_id
           order by v.rank limit 1`
}

/**
 * The earliest an event of this try can be stamped, as a bound the asset's (asset_id, timestamp)
 * index can use: after the previous try's last write (tryBegan), and no more than a day before the
 * try's own first timestamp (`earliest`: queued, scheduled or started, whichever is first). Without
 * the second bound a first try, which has no previous one, reads every event its asset ever had:
 * the missing-events check then costs task instances × history (82 s on a 10M-event table). The
 * day is margin for the clocks involved (the worker's start_date, the API server's event time),
 * not a belief that they agree; a task instance with none of those timestamps (completed by
 * airlock without ever being queued) keeps no bound. Events replayed after the task ended are
 * later still, so no upper bound is ever applied.
 */
export function tryEventsFrom(on: TryKey & {earliest: string; began?: string}): string {
  return `greatest(${on.began ?? tryBegan(on)}, coalesce(${on.earliest} - interval '1 day', '-infinity'))`
}

/** `earliest` for tryEventsFrom, on a task_instance row. */
export const tryEarliest = (ti: string) => `least(${ti}.queued_dttm, ${ti}.scheduled_dttm, ${ti}.start_date)`

/**
 * Whether this try has an event of asset `assetId`, by the one attribution rule (attributedTry):
 * `'attributed'` (an event is this try's), `'unattributed'` (an event may be this try's or the
 * one before's, and the database cannot tell: never counted as present, never as lost) or
 * `'none'`. The check behind replay-events' missing mode, the audit's missing_* classes and every
 * writer's recheck under the row lock, in one place. `began`: tryBegan of the same try, when the
 * caller has it.
 *
 * Only the current try is asked, so the key's tries reduce to two: this one (its start_date) and
 * everything before it (ending at `began`); attributedTry then decides exactly as it does over all
 * the tries in the audit's classification. Two halves, each on an index: the events airlock's
 * audit row of this try names (idx_log_task_instance, then asset_event_pkey), then the events of
 * the key stamped since the try could have begun (tryEventsFrom, idx_asset_id_timestamp). The
 * audit row first, in a CASE, so its order is kept (the planner reorders an AND of subplans by
 * their estimated cost): right after a bulk complete of old runs every try began long ago and its
 * events were stamped today, so the range probe reads every event of the backfill on that asset
 * for each task instance (task instances × events: loops=9,028 × ~17,800 index entries, 15 s, in
 * a user's trial), while each try's audit row names its events in one index probe.
 */
export function eventOfThisTry(
  on: TryKey & {assetId: string; earliest: string; start: string; began?: string; extra?: string},
): string {
  const key = {dagId: on.dagId, runId: on.runId, taskId: on.taskId, mapIndex: on.mapIndex}
  const eventOfKey = `e.asset_id = ${on.assetId}
       and e.source_dag_id = ${on.dagId} and e.source_run_id = ${on.runId} and e.source_task_id = ${on.taskId}
       and e.source_map_index = ${on.mapIndex}${on.extra ? `\n       and ${on.extra}` : ''}`
  // The previous tries' end, read once per look at the events (b, behind offset 0) rather than
  // at each of its uses below: inlined, its history probe ran per event and per use.
  const began = 'b.began'
  const first = `${began} = '-infinity'::timestamptz`
  const tries = {
    numbers: `case when ${first} then array[${on.tryNumber}] else array[${on.tryNumber} - 1, ${on.tryNumber}] end`,
    starts: `case when ${first} then array[${on.start}]::timestamptz[] else array[null, ${on.start}]::timestamptz[] end`,
    lastWrites: `case when ${first} then array[null]::timestamptz[] else array[${began}, null]::timestamptz[] end`,
  }
  // Each event of the key since the try could have begun, with its attribution (offset 0: the
  // attribution computed once per event, not once per element read).
  const attributedEventsOfKey = `select ${attributedTry({id: 'e.id', timestamp: 'e."timestamp"'}, key, tries)} as a
      from (select ${on.began ?? tryBegan(on)} as began offset 0) as b
      join asset_event e
        on ${eventOfKey}
       and e."timestamp" > ${tryEventsFrom({...on, began})}`
  return `case when exists (
    select 1 from log l
     where l.dag_id = ${on.dagId} and l.task_id = ${on.taskId} and l.run_id = ${on.runId} and l.map_index = ${on.mapIndex}
       and l.try_number = ${on.tryNumber} and l.event in ('success', 'airlock.replay-events')
       and exists (
        select 1 from asset_event e
         -- log.extra is free text: read as JSON only on airlock's rows, and only the numbers its
         -- event_ids holds (a path query never fails on a missing key or a scalar, as expanding
         -- would). As an array the ids are probes of asset_event_pkey; joined as a set function,
         -- the planner hashed the whole asset_event table for every task instance.
         where e.id = any(array(
                 select named.id::int
                   from jsonb_path_query(case when l.extra like '{%"airlock"%' then l.extra::jsonb end,
                                         '$.airlock.event_ids[*] ? (@.type() == "number")') as named(id)))
           and ${eventOfKey}
           -- Named by this try's row alone: a row of another try (or of none) naming it too is a conflict.
           and not exists (select 1 from log l where ${namesEvent('e.id', key)} and l.try_number is distinct from ${on.tryNumber})))
   then 'attributed'
   when exists (
    select 1 from (${attributedEventsOfKey} offset 0) as x where x.a[1] = ${on.tryNumber})
   then 'attributed'
   when exists (
    select 1 from (${attributedEventsOfKey} offset 0) as x where x.a[1] is null and x.a[2] = ${on.tryNumber})
   then 'unattributed'
   else 'none'
   end`
}

export const whereAll = (conditions: readonly string[]) =>
  conditions.length > 0 ? `where ${conditions.join(' and ')}` : ''

/**
 * The consumer DAGs of some assets and aliases, by every reference Airflow schedules on: asset id
 * (dag_schedule_asset_reference), name, uri, and alias (dag_schedule_asset_alias_reference), as
 * `AssetManager.register_asset_change` collects them (airflow-core/src/airflow/assets/manager.py).
 * One `dag_id` column, distinct. The downstream preview and the duplicate repair read the same set.
 */
export function consumerDagsOf(assetIds: string, aliasIds: string): string {
  return `select r.dag_id from dag_schedule_asset_reference r where r.asset_id = any(${assetIds})
       union
       select r.dag_id from dag_schedule_asset_alias_reference r where r.alias_id = any(${aliasIds})
       union
       select r.dag_id from asset a join dag_schedule_asset_name_reference r on r.name = a.name where a.id = any(${assetIds})
       union
       select r.dag_id from asset a join dag_schedule_asset_uri_reference r on r.uri = a.uri where a.id = any(${assetIds})`
}

/**
 * `wanted` (the DAGs scheduled on the events of `$1`, by asset id, name, uri or alias) and
 * `locked` (their dag rows, in key order, FOR SHARE SKIP LOCKED with `lock`: the locks the
 * scheduler's `dags_needing_dagruns` FOR NO KEY UPDATE SKIP LOCKED conflicts with), with whether
 * each has a partitioned timetable (3.2+). The duplicate repair and undo hold consumers this way.
 */
export function heldConsumerDags(options: {partitionedTimetables: boolean; lock: boolean}): string {
  return `wanted as (
       ${consumerDagsOf(
         'array(select e.asset_id from asset_event e where e.id = any($1::int[]))',
         'array(select l.alias_id from asset_alias_asset_event l where l.event_id = any($1::int[]))',
       )}
     ), locked as (
       select d.dag_id, ${options.partitionedTimetables ? 'coalesce(d.timetable_partitioned, false)' : 'false'} as partitioned
         from dag d where d.dag_id in (select dag_id from wanted)
        order by d.dag_id${options.lock ? '\n          for share of d skip locked' : ''}
     )`
}
