import {storedDagJson} from './storedDag.js'
import type {StoredState, TaskInstanceContext} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import {prepared, statement} from '../../engine/prepared.js'
import type {ClearRun, ClearStore, ClearTarget, ClearedTaskInstance} from '../families/clear.js'

/**
 * What a completion that continues its run writes after the marked task instance, mirroring what Airflow's
 * REST `PATCH …/taskInstances/{task_id}` with `new_state=success` does after `set_state`:
 * `set_task_instance_state` clears the failed downstream with `clear(only_failed=True,
 * run_id=…, exclude_task_ids={task_id})`, which ends in `clear_task_instances`
 * (airflow-core/src/airflow/models/taskinstance.py, 3.0 through 3.3) and re-queues the run.
 */

/**
 * The latest serialized DAG of a DAG: `SerializedDagModel.latest_item_select_object`
 * (airflow-core/src/airflow/models/serialized_dag.py) orders by created_at. The REST handler
 * builds the downstream set from it (`dag_bag.get_dag` in 3.0, `get_latest_version_of_dag` from
 * 3.1), not from the run's version.
 */
function readLatestSerializedDag() {
  const latest = prepared(
    'latest_serialized_dag',
    `select sd.data, sd.data_compressed
       from serialized_dag sd left join dag_version dv on dv.id = sd.dag_version_id
      where sd.dag_id = $1
      order by sd.created_at desc, dv.version_number desc nulls last
      limit 1`,
  )
  return async (ex: Executor, dagId: string): Promise<unknown> => {
    const [row] = await ex.query<{data: unknown; data_compressed: Buffer | null}>(latest([dagId]))
    return row ? storedDagJson(row.data, row.data_compressed) : undefined
  }
}

/** The serialized DAG of one DAG version (the run's, for the retries `clear_task_instances` reads). */
function readVersionSerializedDag() {
  const version = prepared(
    'version_serialized_dag',
    `select data, data_compressed from serialized_dag where dag_version_id = $1::uuid limit 1`,
  )
  return async (ex: Executor, dagVersionId: string): Promise<unknown> => {
    const [row] = await ex.query<{data: unknown; data_compressed: Buffer | null}>(version([dagVersionId]))
    return row ? storedDagJson(row.data, row.data_compressed) : undefined
  }
}

/** The run of a task instance, as the clear decides on it; `lock` takes its row (FOR UPDATE). */
function readClearRun() {
  const text = `select dr.id, dr.state, dr.bundle_version, dr.created_dag_version_id::text as created_dag_version_id
                  from dag_run dr where dr.id = $1`
  const read = prepared('clear_run', text)
  const lock = prepared('clear_run_lock', `${text} for update of dr`)
  return async (ex: Executor, dagRunId: number, options: {lock: boolean}): Promise<ClearRun | undefined> => {
    const [row] = await ex.query<{
      id: number
      state: string | null
      bundle_version: string | null
      created_dag_version_id: string | null
    }>((options.lock ? lock : read)([dagRunId]))
    return (
      row && {
        id: row.id,
        state: row.state,
        bundleVersion: row.bundle_version,
        createdDagVersionId: row.created_dag_version_id,
      }
    )
  }
}

/**
 * The task instances `clear(only_failed=True)` selects in the run: `failed` or `upstream_failed`
 * only (never skipped, removed or up_for_retry), every map index, the marked task excluded at
 * every map index, and limited to the subset's tasks only when the subset is partial
 * (`SerializedDAG._get_task_instances`). With `lock`, FOR UPDATE in (task_id, map_index) order:
 * a row a concurrent writer moved out of those states is not returned once its lock is granted,
 * which the caller sees as a changed set.
 */
function readClearTargets() {
  const text = `select ti.id::text as id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.operator,
                       ti.dag_version_id::text as dag_version_id
                  from task_instance ti
                 where ti.dag_id = $1 and ti.run_id = $2 and ti.state in ('failed', 'upstream_failed')
                   and ti.task_id <> $3 and ($4::text[] is null or ti.task_id = any($4::text[]))
                 order by ti.task_id, ti.map_index`
  const read = prepared('clear_targets', text)
  const lock = prepared('clear_targets_lock', `${text} for update of ti`)
  return async (
    ex: Executor,
    ti: TaskInstanceContext,
    taskIds: readonly string[] | null,
    options: {lock: boolean},
  ): Promise<ClearTarget[]> => {
    const rows = await ex.query<{
      id: string
      task_id: string
      map_index: number
      state: StoredState
      try_number: number | null
      operator: string | null
      dag_version_id: string | null
    }>((options.lock ? lock : read)([ti.dagId, ti.runId, ti.taskId, taskIds === null ? null : [...taskIds]]))
    return rows.map((row) => ({
      id: row.id,
      taskId: row.task_id,
      mapIndex: row.map_index,
      state: row.state,
      tryNumber: row.try_number,
      operator: row.operator,
      dagVersionId: row.dag_version_id,
    }))
  }
}

/**
 * Which of these task instances a human-in-the-loop task left a `hitl_detail` row for. From 3.2
 * `TaskInstanceHistory.record_ti` copies it to `hitl_detail_history`, which airlock does not
 * write: the caller refuses such a clear. On 3.1 (no history table) the row follows the new id by
 * its ON UPDATE CASCADE, as in Airflow, so nothing is reported.
 */
function readHitlTaskInstances(catalog: ClearCatalog) {
  return async (ex: Executor, tiIds: readonly string[]): Promise<string[]> => {
    if (tiIds.length === 0 || !(await catalog(ex)).hitlArchived) return []
    const rows = await ex.query<{ti_id: string}>(
      statement(`select ti_id::text as ti_id from hitl_detail where ti_id = any($1::uuid[])`, [[...tiIds]]),
    )
    return rows.map((row) => row.ti_id)
  }
}

/**
 * `clear_task_instances` for task instances that are not running, in three statements:
 *
 * 1. `prepare_db_for_next_try` → `TaskInstanceHistory.record_ti`: the try is archived in
 *    task_instance_history under the old id, every column the two tables share copied as it is
 *    (its state stays failed / upstream_failed, both finished), unless that try is archived
 *    already;
 * 2. its `task_reschedule` rows are deleted (their foreign key does not follow an id change);
 * 3. the row gets a new UUIDv7 id (`self.id = uuid7()`), state NULL, `max_tries = try_number +
 *    task.retries` (or `max(max_tries, try_number)` when the DAG version no longer has the task),
 *    external_executor_id, next_method and next_kwargs NULL. try_number stays: the scheduler
 *    raises it when it schedules the task again. The `refresh_from_task` columns (pool, queue,
 *    priority_weight, …) are left as they are: airlock cannot run the DAG's cluster policy.
 *
 * task_instance_note and hitl_detail follow the new id by their ON UPDATE CASCADE.
 */
function clearTaskInstances(catalog: ClearCatalog) {
  const update = prepared(
    'clear_ti',
    `update task_instance ti
        set id = ${uuidV7},
            state = null,
            max_tries = case when t.retries is null then greatest(ti.max_tries, ti.try_number) else ti.try_number + t.retries end,
            external_executor_id = null, next_method = null, next_kwargs = null, updated_at = clock_timestamp()
       from unnest($1::uuid[], $2::int[]) as t(id, retries)
      where ti.id = t.id
  returning t.id::text as old_id, ti.id::text as new_id`,
  )
  return async (
    ex: Executor,
    targets: ReadonlyArray<{id: string; retries: number | null}>,
  ): Promise<ClearedTaskInstance[]> => {
    if (targets.length === 0) return []
    const ids = targets.map((t) => t.id)
    const {historyColumns, taskReschedule} = await catalog(ex)
    await ex.query(statement(archiveText(historyColumns), [ids]))
    if (taskReschedule) await ex.query(statement(`delete from task_reschedule where ti_id = any($1::uuid[])`, [ids]))
    const rows = await ex.query<{old_id: string; new_id: string}>(update([ids, targets.map((t) => t.retries)]))
    return rows.map((row) => ({oldId: row.old_id, newId: row.new_id}))
  }
}

/**
 * The run after a clear that cleared something: a finished run (success / failed) goes back to
 * queued for the scheduler, as `clear_task_instances` does with `dag_run_state=QUEUED` and
 * `DagRun.set_state`: queued_at now, start_date, end_date and last_scheduling_decision NULL,
 * clear_number + 1. A queued or running run keeps its state: 3.0 and 3.1 leave it as it is; from
 * apache/airflow #60848 (3.2) its queued_at and clear_number move too (`touchActive`), its
 * start_date kept.
 */
function requeueDagRun() {
  const requeue = prepared(
    'requeue_dag_run',
    `update dag_run
        set state = 'queued', queued_at = clock_timestamp(), start_date = null, end_date = null,
            last_scheduling_decision = null, clear_number = clear_number + 1, updated_at = clock_timestamp()
      where id = $1 and state in ('success', 'failed')
  returning state`,
  )
  const touch = prepared(
    'touch_active_dag_run',
    `update dag_run set queued_at = clock_timestamp(), clear_number = clear_number + 1, updated_at = clock_timestamp()
      where id = $1 and state in ('queued', 'running')
  returning state`,
  )
  return async (ex: Executor, dagRunId: number, options: {touchActive: boolean}): Promise<boolean> => {
    if ((await ex.query(requeue([dagRunId]))).length > 0) return true
    return options.touchActive && (await ex.query(touch([dagRunId]))).length > 0
  }
}

/**
 * Deadline alerts of a run (the `deadline` table's rows for it). From 3.2 `clear_task_instances`
 * re-anchors those measured from the run's queued_at (`_recalculate_dagrun_queued_at_deadlines`,
 * apache/airflow #61372), which airlock does not reproduce: the caller refuses such a clear.
 */
function countRunDeadlines(catalog: ClearCatalog) {
  return async (ex: Executor, dagRunId: number): Promise<number> => {
    const {deadlineRunColumn} = await catalog(ex)
    if (!deadlineRunColumn) return 0
    const [row] = await ex.query<{n: number}>(
      statement(`select count(*)::int as n from deadline where "${deadlineRunColumn}" = $1`, [dagRunId]),
    )
    return row?.n ?? 0
  }
}

/**
 * A time-ordered UUID (version 7) as Airflow's `uuid7()` makes them, in SQL that PostgreSQL 13+
 * runs (uuidv7() itself is PostgreSQL 18): the first 48 bits are the Unix time in milliseconds,
 * the version nibble is 7, the rest random.
 */
const uuidV7 = `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6),
                  52, 1), 53, 1), 'hex')::uuid`

/**
 * What the clear needs from this database's catalog, read once per store (a failed read is not
 * kept): whether task_reschedule exists, whether HITL records are archived (hitl_detail_history,
 * 3.2+), the deadline table's run column if any, and the columns task_instance_history shares
 * with task_instance (what `TaskInstanceHistory(ti)` copies).
 */
export type ClearCatalog = (ex: Executor) => Promise<{
  taskReschedule: boolean
  hitlArchived: boolean
  deadlineRunColumn: string | null
  historyColumns: string[]
}>

function clearCatalog(): ClearCatalog {
  let facts: ReturnType<ClearCatalog> | undefined
  const read = async (ex: Executor) => {
    const [row] = await ex.query<{
      task_reschedule: boolean
      hitl_archived: boolean
      deadline_run_column: string | null
      history_columns: string[]
    }>(
      statement(
        `select to_regclass('public.task_reschedule') is not null as task_reschedule,
                to_regclass('public.hitl_detail') is not null and to_regclass('public.hitl_detail_history') is not null as hitl_archived,
                (select column_name::text from information_schema.columns
                  where table_schema = 'public' and table_name = 'deadline' and column_name in ('dagrun_id', 'dag_run_id')
                  order by column_name limit 1) as deadline_run_column,
                array(select h.column_name::text
                        from information_schema.columns h
                        join information_schema.columns t
                          on t.table_schema = h.table_schema and t.table_name = 'task_instance' and t.column_name = h.column_name
                       where h.table_schema = 'public' and h.table_name = 'task_instance_history'
                         and h.column_name not in ('task_instance_id', 'id')
                       order by h.ordinal_position) as history_columns`,
      ),
    )
    return {
      taskReschedule: row!.task_reschedule,
      hitlArchived: row!.hitl_archived,
      deadlineRunColumn: row!.deadline_run_column,
      historyColumns: row!.history_columns,
    }
  }
  return (ex) =>
    (facts ??= read(ex).catch((error: unknown) => {
      facts = undefined
      throw error
    }))
}

/** INSERT … SELECT of every column task_instance_history shares with task_instance, under the old id. */
function archiveText(historyColumns: readonly string[]): string {
  const columns = historyColumns.map((column) => `"${column}"`)
  return `insert into task_instance_history (task_instance_id, ${columns.join(', ')})
          select ti.id, ${columns.map((c) => `ti.${c}`).join(', ')}
            from task_instance ti
           where ti.id = any($1::uuid[])
             and not exists (select 1 from task_instance_history h
                              where h.dag_id = ti.dag_id and h.task_id = ti.task_id and h.run_id = ti.run_id
                                and h.map_index = ti.map_index and h.try_number = ti.try_number)`
}

/**
 * Under the clear's locks, just before it: the rows it is about to change, as JSON text (what
 * airlock undo puts back). Each task instance with the columns the clear writes and whether its
 * try was archived already (then the clear archives nothing for it), the reschedules it deletes
 * whole, and the run's columns a requeue writes.
 */
function readClearImage(catalog: ClearCatalog) {
  return async (ex: Executor, tiIds: readonly string[], dagRunId: number): Promise<string> => {
    const {taskReschedule} = await catalog(ex)
    const reschedules = taskReschedule
      ? `coalesce((select jsonb_agg(to_jsonb(r) order by r.id) from task_reschedule r where r.ti_id = any($1::uuid[])), '[]'::jsonb)`
      : `'[]'::jsonb`
    const [row] = await ex.query<{image: string}>(
      statement(
        `select jsonb_build_object(
           'task_instances', coalesce((select jsonb_agg(to_jsonb(t) order by t.task_id, t.map_index) from (
               select ti.id, ti.task_id, ti.map_index, ti.try_number, ti.state, ti.max_tries, ti.external_executor_id,
                      ti.next_method, ti.next_kwargs is not null as next_kwargs_set, ti.updated_at,
                      exists (select 1 from task_instance_history h
                               where h.dag_id = ti.dag_id and h.task_id = ti.task_id and h.run_id = ti.run_id
                                 and h.map_index = ti.map_index and h.try_number = ti.try_number) as archived_before
                 from task_instance ti where ti.id = any($1::uuid[])) as t), '[]'::jsonb),
           'task_reschedules', ${reschedules},
           'dag_run', (select to_jsonb(d) from (
               select id, state, queued_at, start_date, end_date, last_scheduling_decision, clear_number, updated_at
                 from dag_run where id = $2::int) as d)
         )::text as image`,
        [tiIds, dagRunId],
      ),
    )
    return row!.image
  }
}

/**
 * After the clear, still under its locks: its before-image (readClearImage) and what it left (the
 * new ids, state, try and updated_at of each task instance; the run's state, clear_number and
 * updated_at) into the completion's audit row, at `airlock.before.continue_run` (null when the
 * clear cleared nothing).
 */
function recordClearImage() {
  // In place of the stand-in, by text: rewriting the whole extra as jsonb would change its
  // spacing, and the evidence and undo's window read airlock's rows by `"airlock":{`.
  const record = prepared(
    'record_clear_image',
    `update log
        set extra = replace(extra, $2, coalesce(($3::jsonb || jsonb_build_object('left', jsonb_build_object(
              'task_instances', coalesce((select jsonb_agg(to_jsonb(t) order by t.task_id, t.map_index) from (
                  select ti.id, ti.task_id, ti.map_index, ti.try_number, ti.state, ti.updated_at
                    from task_instance ti where ti.id = any($4::uuid[])) as t), '[]'::jsonb),
              'dag_run', (select to_jsonb(d) from (select id, state, clear_number, updated_at from dag_run where id = $5::int) as d))))::text, 'null'))
      where id = $1`,
  )
  return async (
    ex: Executor,
    logId: number,
    standIn: string,
    image: string | null,
    newIds: readonly string[],
    dagRunId: number,
  ) => {
    await ex.query(record([logId, JSON.stringify(standIn), image, newIds, dagRunId]))
  }
}

/** The clear family, with what it reads from the catalog once per store. */
export function clearStore(): ClearStore {
  const catalog = clearCatalog()
  return {
    readLatestSerializedDag: readLatestSerializedDag(),
    readVersionSerializedDag: readVersionSerializedDag(),
    readClearRun: readClearRun(),
    readClearTargets: readClearTargets(),
    readHitlTaskInstances: readHitlTaskInstances(catalog),
    clearTaskInstances: clearTaskInstances(catalog),
    requeueDagRun: requeueDagRun(),
    readClearImage: readClearImage(catalog),
    recordClearImage: recordClearImage(),
    countRunDeadlines: countRunDeadlines(catalog),
  }
}
