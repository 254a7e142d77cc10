import type {EventFilter} from '../airflowStore.js'
import type {Params} from './params.js'

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
    conditions.push(`e.asset_id in (select id from asset where name = any(${names}::text[]) or uri = any(${names}::text[]))`)
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
 * replay-events' row list the events they wrote in extra.airlock.event_ids): evidence that needs
 * no clock at all. Without `tryNumber`, a row of any try counts. log.extra is free text, so it is
 * read as JSON only on airlock's rows.
 */
export function namedByAirlockRow(
  eventId: string,
  on: Omit<TryKey, 'tryNumber'> & {tryNumber?: string},
  events: readonly string[] = ['success', 'airlock.replay-events'],
): string {
  return `exists (
    select 1 from log l
     where l.dag_id = ${on.dagId} and l.task_id = ${on.taskId} and l.run_id = ${on.runId} and l.map_index = ${on.mapIndex}
       ${on.tryNumber ? `and l.try_number = ${on.tryNumber} ` : ''}and l.event in (${events.map((event) => `'${event}'`).join(', ')})
       and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(${eventId}), false) else false end)`
}

/**
 * Evidence that this try succeeded without events on purpose, as a log row says it:
 * - an operator set it to success through the REST API or the UI (which calls the same API):
 *   `PATCH …/taskInstances/{task_id}[/{map_index}]` is logged by `action_logging`
 *   (airflow-core/src/airflow/api_fastapi/logging/decorators.py) as event `patch_task_instance`
 *   (the endpoint's function name, for both routes) with dag_id, task_id, run_id and the request
 *   body in extra (`new_state`), the map index only when the route names it; no try number, so a
 *   row after the try began counts. That path sets the state and emits no events;
 * - airlock's own `complete --no-events` (its success row names no events).
 * log.extra is free text: read as JSON only on those rows.
 */
export function deliberatelySilent(on: TryKey): string {
  return `exists (
    select 1 from log l
     where l.dag_id = ${on.dagId} and l.task_id = ${on.taskId} and l.run_id = ${on.runId}
       and case
             when l.event = 'patch_task_instance' and l.extra like '{%'
               then l.dttm > ${tryBegan(on)}
                    and (l.extra::jsonb ->> 'new_state') = 'success'
                    and coalesce(l.extra::jsonb ->> 'map_index', ${on.mapIndex}::text) = ${on.mapIndex}::text
             when l.event = 'success' and l.extra like '{%"airlock"%'
               then l.map_index = ${on.mapIndex} and l.try_number = ${on.tryNumber}
                    and (l.extra::jsonb -> 'airlock' ->> 'command') = 'complete'
                    and coalesce((l.extra::jsonb -> 'airlock' ->> 'events')::int, -1) = 0
             else false
           end)`
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
export function tryEventsFrom(on: TryKey & {earliest: string}): string {
  return `greatest(${tryBegan(on)}, coalesce(${on.earliest} - interval '1 day', '-infinity'))`
}

/** `earliest` for tryEventsFrom, on a task_instance row. */
export const tryEarliest = (ti: string) => `least(${ti}.queued_dttm, ${ti}.scheduled_dttm, ${ti}.start_date)`

/**
 * "This asset has no event of this try": no event attributed to the task instance's key stamped
 * since the try could have begun (tryEventsFrom), and none that airlock's audit row of this try
 * names (a completion of a task that never started stamps its events before the start_date it
 * sets). The anti-join behind replay-events' missing mode and the audit's missing_events, in one
 * place; the two halves are separate so each reads an index (idx_asset_id_timestamp by range,
 * idx_log_task_instance by try) instead of every event of the asset.
 */
export function noEventOfThisTry(on: TryKey & {assetId: string; earliest: string; extra?: string}): string {
  const eventOfKey = `e.asset_id = ${on.assetId}
       and e.source_dag_id = ${on.dagId} and e.source_run_id = ${on.runId} and e.source_task_id = ${on.taskId}
       and e.source_map_index = ${on.mapIndex}${on.extra ? `\n       and ${on.extra}` : ''}`
  return `not exists (
    select 1 from asset_event e
     where ${eventOfKey}
       and e."timestamp" > ${tryEventsFrom(on)})
   and not exists (
    select 1 from log l
     -- log.extra is free text: read as JSON only on airlock's rows, and only the numbers its
     -- event_ids holds (a path query never fails on a missing key or a scalar, as expanding would).
     cross join lateral jsonb_path_query(case when l.extra like '{%"airlock"%' then l.extra::jsonb end,
                                         '$.airlock.event_ids[*] ? (@.type() == "number")') as named(id)
      join asset_event e on e.id = named.id::int
     where l.dag_id = ${on.dagId} and l.task_id = ${on.taskId} and l.run_id = ${on.runId} and l.map_index = ${on.mapIndex}
       and l.try_number = ${on.tryNumber} and l.event in ('success', 'airlock.replay-events')
       and ${eventOfKey})`
}

export const whereAll = (conditions: readonly string[]) => (conditions.length > 0 ? `where ${conditions.join(' and ')}` : '')
