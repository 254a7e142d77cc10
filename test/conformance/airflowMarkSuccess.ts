import {inflateSync} from 'node:zlib'

import type {Knex} from 'knex'

import {compareVersions} from '../../src/airflow/revisions.js'
import type {AirflowSchema} from '../../src/airflow/schema.js'

/**
 * Airflow's REST mark-success of a task instance, `PATCH …/taskInstances/{task_id}` with
 * `new_state=success` and every include_* flag false, transcribed statement by statement from
 * the Python for the conformance suite, independently of airlock's code:
 *
 * 1. `mark_tasks.set_state` → `TaskInstance.set_state(SUCCESS)`: the row, locked, gets state
 *    success, start_date and end_date kept (now when NULL), duration = end - start.
 * 2. `set_task_instance_state`: `partial_subset(task_ids={task_id}, include_downstream=True,
 *    include_upstream=False)` of the latest serialized DAG, then `clear(only_failed=True,
 *    run_id=…, exclude_task_ids={task_id})`.
 * 3. `clear_task_instances`, per task instance in the order `_get_task_instances` returns them:
 *    `prepare_db_for_next_try` (`TaskInstanceHistory.record_ti`, the task_reschedule delete, a new
 *    id), then `max_tries`, state NULL, external_executor_id NULL, `clear_next_method_args`;
 *    then each finished run of them: `dag_run_state=QUEUED` through `DagRun.set_state`; from 3.2
 *    (apache/airflow #60848) a queued or running one gets a new `queued_at` and `clear_number`.
 *    A task's `retries` come from the run's DAG version when the run records a bundle version
 *    (`DBDagBag.get_dag_for_run`), else from the latest; a value the task leaves out is the
 *    document's `client_defaults.tasks` (format 3, 3.1+), else 0.
 *
 * Sources: airflow-core/src/airflow/api_fastapi/core_api/routes/public/task_instances.py
 * (`patch_task_instance`), models/dag.py (3.0) and SerializedDAG (3.1+) `set_task_instance_state`
 * and `partial_subset`, api/common/mark_tasks.py `set_state`, models/taskinstance.py
 * `clear_task_instances` and `prepare_db_for_next_try`, models/taskinstancehistory.py `record_ti`,
 * models/dagrun.py `set_state`.
 */
export async function airflowMarksSuccess(knex: Knex, schema: AirflowSchema, tiId: string): Promise<void> {
  await knex.transaction(async (trx) => {
    const ti = (
      await trx.raw<{rows: Array<{dag_id: string; run_id: string; task_id: string}>}>(
        `select dag_id, run_id, task_id from task_instance where id = ? and (state is null or state <> 'success') for update`,
        [tiId],
      )
    ).rows[0]
    if (!ti) throw new Error('Airflow answers 409: the task instance is already success')
    await trx.raw(
      `update task_instance
          set state = 'success', start_date = coalesce(start_date, now()), end_date = coalesce(end_date, now()),
              duration = extract(epoch from coalesce(end_date, now()) - coalesce(start_date, now())), updated_at = now()
        where id = ?`,
      [tiId],
    )

    // SerializedDagModel.latest_item_select_object; `data` NULL when [core] compress_serialized_dags.
    const {rows: serialized} = await trx.raw<{rows: Array<{data: unknown; data_compressed: Buffer | null}>}>(
      `select data, data_compressed from serialized_dag where dag_id = ? order by created_at desc limit 1`,
      [ti.dag_id],
    )
    const dag = documentOf(serialized[0]!)
    const tasks = new Map(dag.dag.tasks.map((t) => [t.__var.task_id, t.__var]))
    const downstreamList = (id: string) => tasks.get(id)?.downstream_task_ids ?? []
    const upstreamList = (id: string) =>
      [...tasks.values()].filter((t) => (t.downstream_task_ids ?? []).includes(id)).map((t) => t.task_id)
    // get_flat_relatives: every task reachable along one direction.
    const flatRelatives = (id: string, upstream: boolean): string[] => {
      const found = new Set<string>()
      const walk = (x: string) => {
        for (const next of upstream ? upstreamList(x) : downstreamList(x))
          if (!found.has(next)) {
            found.add(next)
            walk(next)
          }
      }
      walk(id)
      return [...found]
    }
    // get_upstreams_only_setups_and_teardowns
    const relevantSetups = (id: string): string[] => {
      const downstreamTeardownIds = new Set(flatRelatives(id, false).filter((x) => tasks.get(x)?.is_teardown))
      const out: string[] = []
      for (const task of flatRelatives(id, true)) {
        if (!tasks.get(task)?.is_setup) continue
        const hasNoTeardowns = !downstreamList(task).some((x) => tasks.get(x)?.is_teardown)
        if (hasNoTeardowns || downstreamList(task).some((x) => downstreamTeardownIds.has(x))) {
          out.push(task)
          for (const t of downstreamList(task)) if (tasks.get(t)?.is_teardown && t !== id) out.push(t)
        }
      }
      return out
    }
    // partial_subset(task_ids={task_id}, include_downstream=True, include_upstream=False)
    const also = new Set<string>()
    for (const rel of flatRelatives(ti.task_id, false)) {
      also.add(rel)
      if (rel !== ti.task_id && !tasks.get(rel)?.is_setup && !tasks.get(rel)?.is_teardown)
        for (const x of relevantSetups(rel)) also.add(x)
    }
    if (!tasks.get(ti.task_id)?.is_setup && !tasks.get(ti.task_id)?.is_teardown)
      for (const x of relevantSetups(ti.task_id)) also.add(x)
    const subset = new Set([ti.task_id, ...also])
    const partial = subset.size < tasks.size

    // clear(only_failed=True, run_id=…, exclude_task_ids={task_id}) → _get_task_instances
    const {rows: tis} = await trx.raw<{
      rows: Array<{id: string; task_id: string; try_number: number; max_tries: number; dag_run_id: number}>
    }>(
      `select ti.id, ti.task_id, ti.try_number, ti.max_tries, dr.id as dag_run_id
         from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
        where ti.dag_id = ? ${partial ? 'and ti.task_id = any(?)' : ''} and ti.run_id = ?
          and ti.state in ('failed', 'upstream_failed') and ti.task_id not in (?)`,
      partial ? [ti.dag_id, [...subset], ti.run_id, ti.task_id] : [ti.dag_id, ti.run_id, ti.task_id],
    )
    if (tis.length === 0) return

    // TaskInstanceHistory(ti, state=ti.state): every column the two tables share.
    const {rows: columns} = await trx.raw<{rows: Array<{column_name: string}>}>(
      `select column_name from information_schema.columns
        where table_schema = 'public' and table_name = 'task_instance_history' and column_name <> 'task_instance_id'
          and column_name in (select column_name from information_schema.columns where table_schema = 'public' and table_name = 'task_instance')`,
    )
    const shared = columns.map((c) => `"${c.column_name}"`).join(', ')
    // clear_task_instances: the run's DAG (get_dag_for_run) when it has a bundle version.
    const {rows: runs} = await trx.raw<{
      rows: Array<{bundle_version: string | null; created_dag_version_id: string | null}>
    }>(`select bundle_version, created_dag_version_id from dag_run where dag_id = ? and run_id = ?`, [
      ti.dag_id,
      ti.run_id,
    ])
    const run = runs[0]!
    let runDag: Document | undefined = dag
    if (run.bundle_version !== null) {
      const {rows: own} = await trx.raw<{rows: Array<{data: unknown; data_compressed: Buffer | null}>}>(
        `select data, data_compressed from serialized_dag where dag_version_id = ?`,
        [run.created_dag_version_id],
      )
      runDag = own[0] ? documentOf(own[0]) : undefined
    }
    const runTasks = new Map((runDag?.dag.tasks ?? []).map((t) => [t.__var.task_id, t.__var]))
    const defaultRetries = runDag?.client_defaults?.tasks?.retries ?? 0
    for (const row of tis) {
      // prepare_db_for_next_try → record_ti: unless this try is archived already.
      const {rows: archived} = await trx.raw<{rows: Array<{n: number}>}>(
        `select count(*)::int as n from task_instance_history h join task_instance ti
             on h.dag_id = ti.dag_id and h.task_id = ti.task_id and h.run_id = ti.run_id and h.map_index = ti.map_index and h.try_number = ti.try_number
          where ti.id = ?`,
        [row.id],
      )
      if (archived[0]!.n === 0)
        await trx.raw(
          `insert into task_instance_history (task_instance_id, ${shared}) select id, ${shared} from task_instance where id = ?`,
          [row.id],
        )
      await trx.raw(`delete from task_reschedule where ti_id = ?`, [row.id])
      // self.id = uuid7(); the run's DAG has the task: max_tries = try_number + task.retries.
      const task = runTasks.get(row.task_id)
      const maxTries =
        runDag && task ? row.try_number + (task.retries ?? defaultRetries) : Math.max(row.max_tries, row.try_number)
      await trx.raw(
        `update task_instance
            set id = gen_random_uuid(), max_tries = ?, state = null, external_executor_id = null,
                next_method = null, next_kwargs = null, updated_at = now()
          where id = ?`,
        [maxTries, row.id],
      )
    }

    // The runs of the cleared task instances that are finished: QUEUED, through DagRun.set_state.
    const runIds = [...new Set(tis.map((t) => t.dag_run_id))]
    // #60848 (3.2+): a run still queued or running is re-anchored, its state and start kept
    // (first, so the runs queued just below are not counted twice).
    if (compareVersions(schema.behaviourVersion, '3.2.0') >= 0)
      await trx.raw(
        `update dag_run set queued_at = now(), clear_number = clear_number + 1, updated_at = now() where id = any(?) and state in ('queued', 'running')`,
        [runIds],
      )
    await trx.raw(
      `update dag_run
          set state = 'queued', queued_at = now(), start_date = null, end_date = null,
              last_scheduling_decision = null, clear_number = clear_number + 1, updated_at = now()
        where id = any(?) and state in ('success', 'failed')`,
      [runIds],
    )
  })
}

interface Document {
  client_defaults?: {tasks?: {retries?: number}}
  dag: {
    tasks: Array<{
      __var: {
        task_id: string
        downstream_task_ids?: string[]
        retries?: number
        is_setup?: boolean
        is_teardown?: boolean
      }
    }>
  }
}

/** A serialized_dag row's document; `data` is NULL when [core] compress_serialized_dags is on. */
function documentOf(row: {data: unknown; data_compressed: Buffer | null}): Document {
  const text = row.data ?? (row.data_compressed ? inflateSync(row.data_compressed).toString('utf8') : null)
  return (typeof text === 'string' ? JSON.parse(text) : text) as Document
}

/**
 * A run's rows as a mark-success with its clear leaves them, comparable across two databases:
 * ids and fresh timestamps replaced by what they stand for (`new id`, `now`, `kept`).
 */
export async function runSnapshot(
  knex: Knex,
  runId: string,
  original: ReadonlyMap<string, string>,
  since: Date,
): Promise<Record<string, unknown>> {
  const {rows: tis} = await knex.raw<{
    rows: Array<{
      id: string
      task_id: string
      map_index: number
      state: string | null
      try_number: number
      max_tries: number
      external_executor_id: string | null
      next_method: string | null
    }>
  }>(
    `select id, task_id, map_index, state, try_number, max_tries, external_executor_id, next_method
       from task_instance where run_id = ? order by task_id, map_index`,
    [runId],
  )
  const {rows: history} = await knex.raw<{
    rows: Array<{task_instance_id: string; task_id: string; map_index: number; try_number: number; state: string}>
  }>(
    `select task_instance_id, task_id, map_index, try_number, state from task_instance_history where run_id = ? order by task_id, map_index, try_number`,
    [runId],
  )
  const {rows: runs} = await knex.raw<{
    rows: Array<{
      state: string
      clear_number: number
      queued_at: Date | null
      start_date: Date | null
      end_date: Date | null
      last_scheduling_decision: Date | null
    }>
  }>(
    `select state, clear_number, queued_at, start_date, end_date, last_scheduling_decision from dag_run where run_id = ?`,
    [runId],
  )
  const {rows: notes} = await knex.raw<{rows: Array<{task_id: string; content: string}>}>(
    `select ti.task_id, n.content from task_instance_note n join task_instance ti on ti.id = n.ti_id where ti.run_id = ? order by ti.task_id`,
    [runId],
  )
  const {rows: reschedules} = await knex.raw<{rows: Array<{n: number}>}>(
    `select count(*)::int as n from task_reschedule`,
  )
  const at = (t: Date | null) => (t === null ? 'null' : t >= since ? 'now' : 'kept')
  const key = (t: {task_id: string; map_index: number}) => `${t.task_id}[${t.map_index}]`
  return {
    taskInstances: tis.map(
      (t) =>
        `${key(t)} ${t.state ?? 'none'} try=${t.try_number} max_tries=${t.max_tries} executor_id=${t.external_executor_id ?? '-'} next=${t.next_method ?? '-'} id=${original.get(key(t)) === t.id ? 'kept' : 'new'}`,
    ),
    history: history.map(
      (h) =>
        `${key(h)} try=${h.try_number} ${h.state} archived_as=${original.get(key(h)) === h.task_instance_id ? 'old id' : h.task_instance_id}`,
    ),
    run: runs.map(
      (r) =>
        `${r.state} clear_number=${r.clear_number} queued_at=${at(r.queued_at)} start=${at(r.start_date)} end=${at(r.end_date)} decided=${at(r.last_scheduling_decision)}`,
    ),
    notes: notes.map((n) => `${n.task_id}: ${n.content}`),
    reschedules: reschedules[0]!.n,
  }
}
