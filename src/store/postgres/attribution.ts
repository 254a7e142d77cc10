/**
 * Which try of its task instance an asset event belongs to: the one rule behind the event audit's
 * classes (`superseded_by_rerun`, `duplicate`, `unattributed`, `orphan_not_success`) and the
 * missing-events check that replay-events, the audit and every writer's recheck share. The table
 * of cases is in docs/audit-events.md ("Which try an event belongs to").
 *
 * The evidence, strongest first:
 * 1. `named`: an audit row airlock wrote for a try names the event (complete's `success` row,
 *    replay-events' `airlock.replay-events` row: `extra.airlock.event_ids`, with the row's
 *    `try_number`). No clock is involved. Rows of two different tries naming one event
 *    contradict each other: `conflict`.
 * 2. `window`: the event was stamped within the try's span: from its `start_date` to its last
 *    write (`updated_at`, else `end_date`). Airflow's success path stamps the events on the API
 *    server after the worker's `end_date` and before the row's own `updated_at`
 *    (`ti_update_state` registers them, then updates the row), so the span ends at the last write,
 *    not at `end_date`. A try's archived copy (`TaskInstanceHistory.record_ti`, called from
 *    `TaskInstance.prepare_db_for_next_try` when the next try is prepared,
 *    airflow-core/src/airflow/models/taskinstance.py) keeps both columns.
 * 3. `only_try`: the key has no earlier try, so an event before the first try's start has no
 *    other try to belong to (a worker whose clock runs ahead of the API server's).
 * 4. `unknown_try`: an airlock row names it without a try (a re-emitted copy of an event that was
 *    itself unattributed): unattributed, the key's last try counting as maybe having it.
 * 5. `gap`: stamped after one try's last write and before the next try's start (or before a next
 *    try that has not started: a cleared task instance keeps the old `start_date` until a worker
 *    starts it, and `DagRun.schedule_tis` only advances `try_number`): the earlier try's late copy
 *    or the later try's event under a skewed clock. The database cannot tell; the event is
 *    unattributed, never deleted, and the later try counts as maybe having it.
 * The last-write rule (an event stamped after a try's last write is not that try's) only bounds
 * the spans; it never attributes an event on its own.
 *
 * The Airflow code named here behaves so in every release read: 3.0.0, 3.1.0, 3.2.0, 3.3.0 and
 * 3.3.2 (airflow/models/taskinstance.py, taskinstancehistory.py, dagrun.py, asset.py and
 * api_fastapi/execution_api/routes/task_instances.py; docs/audit-events.md).
 */

import {attributionBasis} from '../../airflow/tryAttribution.js'
import {undoLogEvent} from '../families/undo.js'

/** A task-instance key as SQL expressions (columns or placeholders). */
export interface KeyColumns {
  dagId: string
  runId: string
  taskId: string
  mapIndex: string
}

/**
 * The tries of one key as three SQL arrays in try-number order, one element per try: its number,
 * its start_date and its last write (tryRows).
 */
export interface TryArrays {
  numbers: string
  starts: string
  lastWrites: string
}

/** The airlock audit rows that can name an event: complete's success row and replay-events' row. */
export const namingEvents = ['success', 'airlock.replay-events'] as const

/**
 * Whether airlock's audit row `row` (an alias of `log`) still stands: no committed `airlock undo`
 * took it back. An undo writes its own row (event `airlock.undo`, `extra.airlock.undoes` the id of
 * the row it takes back) under the undone row's task instance key (src/undo/undoItem.ts,
 * writeUndoRow), so the lookup is a probe of idx_log_task_instance; findUndoOf
 * (postgres/undo.ts) asks the same by id. A row an undo took back is no evidence of anything:
 * its events were deleted and the task instance put back, as if it had never been written.
 * Another session's undo that has not committed is not seen (MVCC), so it counts only once it
 * does.
 */
export function notUndone(row: string): string {
  return `not exists (select 1 from log u
     where u.dag_id = ${row}.dag_id and u.task_id = ${row}.task_id and u.run_id = ${row}.run_id and u.map_index = ${row}.map_index
       and u.event = '${undoLogEvent}'
       and (case when u.extra like '{%"airlock":{%' then u.extra::jsonb -> 'airlock' ->> 'undoes' end) = ${row}.id::text)`
}

/**
 * Whether `log l` is an airlock row of this key (of one of `events`) naming event `eventId` in
 * extra.airlock.event_ids, whatever its try_number (a re-emitted copy whose original's try could not be told has none).
 * log.extra is free text: read as JSON only on airlock's rows (`"airlock"` in it). A row an undo
 * took back needs no notUndone here: the undo deleted every event it names (or rolled back), and
 * event ids come from a sequence, so it names no event that exists.
 */
export function namesEvent(
  eventId: string,
  key: KeyColumns,
  events: readonly (typeof namingEvents)[number][] = namingEvents,
): string {
  return `l.dag_id = ${key.dagId} and l.task_id = ${key.taskId} and l.run_id = ${key.runId} and l.map_index = ${key.mapIndex}
       and l.event in (${events.map((event) => `'${event}'`).join(', ')})
       and case when l.extra like '{%"airlock"%' then coalesce((l.extra::jsonb -> 'airlock' -> 'event_ids') @> to_jsonb(${eventId}), false) else false end`
}

/**
 * The rows of every try of the keys `where` (and `join`, a join clause) select, each given the
 * alias `h` or `t`: the archived ones from task_instance_history, and the current one from
 * task_instance unless a try of the same number is archived. Both carry the number between a
 * clear and `DagRun.schedule_tis` (the archived row is the try that ran) and after a retry is
 * archived (`ti_update_state`, airflow-core/src/airflow/api_fastapi/execution_api/routes/
 * task_instances.py, calls `prepare_db_for_next_try` for a retry payload) until the scheduler
 * runs it again: a task instance marked
 * success then (airlock's complete from up_for_retry, a mark in the UI) succeeded in that
 * try, so the current row's success is the try's state, the archived row its span. Columns:
 * dag_id, run_id, task_id, map_index, try_number, state, start_date, last_write.
 *
 * Once the current row has left that try, the archive is all that is left of it, and it is
 * stale: a later clear (`clear_task_instances` → `TaskInstance.prepare_db_for_next_try` →
 * `TaskInstanceHistory.record_ti`, airflow-core/src/airflow/models/taskinstance.py and
 * taskinstancehistory.py) finds the try archived already and returns without writing, so the
 * archive keeps the `failed` record_ti gave the unfinished try. Then airlock's own `success` row
 * of that try (complete's) says it succeeded, when it stands (notUndone) and the archive is older
 * than it: record_ti copies the task instance's id into `task_instance_id` before
 * prepare_db_for_next_try gives the row a new one, so an archive made before airlock's write
 * names another id than the one airlock completed (its before-image, `airlock.before.task_instance.id`);
 * one made after (airlock completed the try, something marked it failed, a clear archived it)
 * names the same id and its state is the try's end. A row without a before-image (an airlock
 * before undo) cannot tell, and is not counted. While the current row still carries the try, its
 * state decides (cleared: NULL, the archive as above). Not told apart: a try completed by airlock
 * after its retry archive, marked failed, then cleared reads as success (record_ti kept no record
 * of the failure).
 */
export function tryRows(where: (alias: 'h' | 't') => string, join: (alias: 'h' | 't') => string = () => ''): string {
  return `select h.dag_id, h.run_id, h.task_id, h.map_index, h.try_number,
                case when c.state = 'success' or h.state = 'success' then 'success'
                     when c.state is null and exists (
                       select 1 from log l
                        where l.dag_id = h.dag_id and l.task_id = h.task_id and l.run_id = h.run_id
                          and l.map_index = h.map_index and l.try_number = h.try_number
                          and l.event = 'success' and l.extra like '{%"airlock":{%'
                          and (l.extra::jsonb -> 'airlock' -> 'before' -> 'task_instance' ->> 'id') <> h.task_instance_id::text
                          and ${notUndone('l')})
                     then 'success'
                     else h.state
                end as state, h.start_date,
                coalesce(h.updated_at, h.end_date, h.start_date) as last_write
           from task_instance_history h ${join('h')}
           left join task_instance c
             on c.dag_id = h.dag_id and c.task_id = h.task_id and c.run_id = h.run_id and c.map_index = h.map_index
            and c.try_number = h.try_number
          where ${where('h')}
         union all
         select t.dag_id, t.run_id, t.task_id, t.map_index, t.try_number, t.state, t.start_date,
                coalesce(t.updated_at, t.end_date, t.start_date)
           from task_instance t ${join('t')} where ${where('t')}
            and not exists (select 1 from task_instance_history x
                             where x.dag_id = t.dag_id and x.task_id = t.task_id and x.run_id = t.run_id
                               and x.map_index = t.map_index and x.try_number = t.try_number)`
}

/** TryArrays aggregated over tryRows grouped by key (`rows` is the alias of those rows). */
/**
 * The DAG versions (text, sorted, distinct) the rows of one try name: its task_instance row while
 * it carries the try, and its task_instance_history row once archived. Where a try's declared
 * outlets are read from (declaredAllowance): the audit's duplicates and --fix's recheck.
 */
export function tryDagVersionIds(key: KeyColumns, tryNumber: string): string {
  const sameTry = (alias: string) =>
    `${alias}.dag_id = ${key.dagId} and ${alias}.run_id = ${key.runId} and ${alias}.task_id = ${key.taskId} and ${alias}.map_index = ${key.mapIndex} and ${alias}.try_number = ${tryNumber}`
  return `array(select distinct v.dag_version_id::text
                  from (select t.dag_version_id from task_instance t where ${sameTry('t')}
                        union all
                        select h.dag_version_id from task_instance_history h where ${sameTry('h')}) as v
                 where v.dag_version_id is not null order by 1)`
}

export const tryArraysOf = (rows: string) => ({
  numbers: `array_agg(${rows}.try_number order by ${rows}.try_number)`,
  starts: `array_agg(${rows}.start_date order by ${rows}.try_number)`,
  lastWrites: `array_agg(${rows}.last_write order by ${rows}.try_number)`,
})

/**
 * The try event `event` belongs to, as an int[3] SQL expression: [the try (NULL: unattributed),
 * the latest try it may belong to, the basis (attributionBasis)]. `tries` are the key's tries
 * (TryArrays). A key whose only try is its first needs no evidence at all: the event can be no
 * other try's, so neither the log nor the clocks are read (the common case costs nothing). A
 * single try numbered above 1 had earlier ones whose archived rows are gone (`airflow db clean`
 * prunes task_instance_history): their audit rows still name their events.
 */
export function attributedTry(event: {id: string; timestamp: string}, key: KeyColumns, tries: TryArrays): string {
  const b = attributionBasis
  const only = `(${tries.numbers})[1]`
  const last = `(${tries.numbers})[cardinality(${tries.numbers})]`
  return `case when cardinality(${tries.numbers}) = 1 and ${only} <= 1 then array[${only}, ${only}, ${b.only_try}]
  else (
    select case
             -- A row naming it with no try: a copy of an event whose own try could not be told.
             when n.untried then array[null, ${last}, ${b.unknown_try}]
             when n.tries = 1 then array[n.first_try, n.first_try, ${b.named}]
             when n.tries > 1 then array[null, n.last_try, ${b.conflict}]
             when s.in_window then array[s.try_number, s.try_number, ${b.window}]
             when s.first then array[s.try_number, s.try_number, ${b.only_try}]
             else array[null, s.try_number, ${b.gap}]
           end
      from (select count(distinct l.try_number)::int as tries, min(l.try_number) as first_try, max(l.try_number) as last_try,
                   coalesce(bool_or(l.try_number is null), false) as untried
              from log l where ${namesEvent(event.id, key)}) as n,
           -- The try whose span the stamp falls in: the first whose last write is not before it,
           -- else the last try; in its window when it started after the tries before it ended
           -- (tries without any timestamp bound nothing, as in tryBegan).
           (select u.try_number, u.i = 1 or u.before is null as first,
                   u.start_date is not null and u.start_date > coalesce(u.before, '-infinity') and ${event.timestamp} >= u.start_date as in_window
              from (select x.try_number, x.start_date, x.last_write, x.i, max(x.last_write) over (order by x.i rows between unbounded preceding and 1 preceding) as before
                      from unnest(${tries.numbers}, ${tries.starts}, ${tries.lastWrites}) with ordinality as x(try_number, start_date, last_write, i)) as u
             where u.last_write >= ${event.timestamp} or u.i = cardinality(${tries.numbers})
             order by u.i limit 1) as s
  ) end`
}
