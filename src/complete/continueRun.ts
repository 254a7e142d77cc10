import {compareVersions} from '../airflow/revisions.js'
import {clearSubset, taskGraph} from '../airflow/serializedDag.js'
import type {StoredState, TaskInstanceContext} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import {clearImageStandIn} from '../protocol/auditIdentity.js'
import type {ClearRun, ClearTarget, ClearStore} from '../store/families/clear.js'

/**
 * `complete --continue-run`: after the marked task instance, what Airflow's REST
 * `PATCH /api/v2/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}` with
 * `new_state=success` (and the include_* flags false, their default) does next:
 * `set_task_instance_state` (airflow-core/src/airflow/models/dag.py in 3.0, `SerializedDAG` from
 * 3.1) clears the failed and upstream_failed task instances downstream of it in the same run and
 * puts a finished run back to queued, so the scheduler carries on. The UI's "Mark as success"
 * calls the same endpoint; 3.0.3 to 3.2 preselect its "Downstream" option, which marks the
 * downstream success instead of re-running it (see the docs).
 *
 * Planned on the unlocked read (the protocol's step 1), checked again under the locks, applied in
 * the same transaction as the completion: the clear set is what was planned, or nothing is
 * written (`downstream_changed`).
 */
export interface ClearPlan {
  run: ClearRun
  /** The subset's tasks, or null when it is every task of the DAG (no task filter, as Airflow). */
  taskIds: string[] | null
  targets: ClearTarget[]
  /** `task.retries` per task in the DAG version `clear_task_instances` refreshes from; a task it lacks is absent. */
  retries: Map<string, number>
  /** Why airlock will not do this clear (the item is rolled back with unsupported_downstream). */
  refusal?: string
  /** 3.2+ (apache/airflow #60848): a queued or running run's queued_at and clear_number move too. */
  touchActiveRun: boolean
  /** What the operator should know about the clear (a retries value airlock had to assume). */
  warnings: string[]
}

/** What the item reports and the audit row records. */
export interface ClearReport {
  cleared: Array<{
    ti_id: string
    new_ti_id: string | null
    task_id: string
    map_index: number
    previous_state: StoredState
  }>
  dag_run: {id: number; previous_state: string | null; state: string | null}
}

export async function planClear(
  store: ClearStore,
  ex: Executor,
  ti: TaskInstanceContext,
  behaviourVersion: string,
): Promise<ClearPlan> {
  const latest = taskGraph(await store.readLatestSerializedDag(ex, ti.dagId))
  const run = await store.readClearRun(ex, ti.dagRunId, {lock: false})
  if (!run) throw new Error(`the dag run ${ti.dagRunId} of task instance ${ti.id} is gone`)
  const touchActiveRun = compareVersions(behaviourVersion, '3.2.0') >= 0
  const refused = (refusal: string): ClearPlan => ({
    run,
    taskIds: [],
    targets: [],
    retries: new Map(),
    refusal,
    touchActiveRun,
    warnings: [],
  })
  if (!latest) return refused(`DAG ${ti.dagId} has no serialized DAG to read its downstream tasks from`)
  // Airflow's `get_task` raises for a task the latest DAG no longer has: the REST call fails.
  if (!latest.tasks.has(ti.taskId)) return refused(`the latest version of DAG ${ti.dagId} has no task ${ti.taskId}`)

  const subset = clearSubset(latest, ti.taskId)
  const taskIds = subset.partial ? [...subset.taskIds].sort() : null
  const targets = await store.readClearTargets(ex, ti, taskIds, {lock: false})

  // `clear_task_instances` refreshes each task instance from the run's DAG version when the run
  // records a bundle version (`DBDagBag.get_dag_for_run`, 3.1+), else from the latest version.
  // A run with a bundle version whose DAG version cannot be read: Airflow finds no DAG and keeps
  // max(max_tries, try_number) for every task instance (no retries known).
  const versioned = run.bundleVersion
    ? run.createdDagVersionId
      ? taskGraph(await store.readVersionSerializedDag(ex, run.createdDagVersionId))
      : undefined
    : latest
  const retries = new Map([...(versioned?.tasks ?? [])].map(([id, task]) => [id, task.retries]))

  const hitl = await store.readHitlTaskInstances(
    ex,
    targets.map((t) => t.id),
  )
  if (hitl.length > 0)
    return refused(
      `human-in-the-loop task instances would be cleared (${hitl.length}); Airflow also archives their hitl_detail rows, which airlock does not: clear them in Airflow`,
    )
  if (touchActiveRun && targets.length > 0 && (await store.countRunDeadlines(ex, run.id)) > 0)
    return refused(
      "the run has deadline alerts; from 3.2 Airflow's clear re-anchors those measured from the run's queued_at, which airlock does not: clear it in Airflow",
    )
  const markers = targets.filter((t) => t.operator === 'ExternalTaskMarker')
  if (compareVersions(behaviourVersion, '3.1.0') < 0 && markers.length > 0)
    return refused(
      `ExternalTaskMarker task instances would be cleared (${markers.map((t) => t.taskId).join(', ')}); Airflow 3.0 then clears the DAGs they point to as well, which airlock does not: clear them in Airflow`,
    )
  // Only when there is something to clear: with nothing, Airflow's `clear` returns before it.
  const unversioned =
    targets.length > 0 && (run.createdDagVersionId === null || targets.some((t) => t.dagVersionId === null))
  if (compareVersions(behaviourVersion, '3.4.0') >= 0 && unversioned)
    return refused(
      'the run or a task instance to clear has no DAG version; Airflow 3.4 moves them onto the latest version when it clears, which airlock does not',
    )

  // Format 2 (3.0) leaves out retries equal to [core] default_task_retries: 0 is assumed, and said.
  const assumed =
    versioned && !versioned.statesDefaults
      ? [...new Set(targets.map((t) => t.taskId))].filter((id) => versioned.tasks.get(id)?.retriesStated === false)
      : []
  const warnings =
    assumed.length > 0
      ? [
          `max_tries of the cleared ${assumed.join(', ')} counts 0 retries: the serialized DAG leaves out a value equal to [core] default_task_retries, which airlock cannot read (set it on the task to be exact)`,
        ]
      : []
  return {run, taskIds, targets, retries, touchActiveRun, warnings}
}

/** Under the marked task instance's lock: the clear set and the run, locked in key order, must be as planned. */
export async function recheckClear(
  store: ClearStore,
  tx: Executor,
  ti: TaskInstanceContext,
  plan: ClearPlan,
): Promise<string | undefined> {
  const locked = await store.readClearTargets(tx, ti, plan.taskIds, {lock: true})
  const describe = (targets: readonly ClearTarget[]) =>
    targets.map((t) => `${t.taskId}[${t.mapIndex}]=${t.state ?? 'none'}`).join(', ')
  if (describe(locked) !== describe(plan.targets) || locked.some((t, i) => t.id !== plan.targets[i]!.id))
    return `the task instances to clear changed since they were read (planned: ${describe(plan.targets) || 'none'}; now: ${describe(locked) || 'none'}); nothing was written, run it again`
  // The run is written only when something is cleared, so it is locked only then.
  if (plan.targets.length === 0) return undefined
  const run = await store.readClearRun(tx, plan.run.id, {lock: true})
  if (run?.state !== plan.run.state)
    return `the dag run changed state since it was read (${plan.run.state ?? 'none'} → ${run?.state ?? 'gone'}); nothing was written, run it again`
  return undefined
}

export async function applyClear(
  store: ClearStore,
  tx: Executor,
  plan: ClearPlan,
  logId: number,
): Promise<ClearReport> {
  // What airlock undo puts back: read under the locks recheckClear took, recorded after the clear.
  const image =
    plan.targets.length > 0
      ? await store.readClearImage(
          tx,
          plan.targets.map((t) => t.id),
          plan.run.id,
        )
      : undefined
  const cleared = await store.clearTaskInstances(
    tx,
    plan.targets.map((t) => ({id: t.id, retries: plan.retries.get(t.taskId) ?? null})),
  )
  const newIds = new Map(cleared.map((c) => [c.oldId, c.newId]))
  // `clear` returns before `clear_task_instances` when nothing matched: the run is not touched.
  const requeued =
    plan.targets.length > 0 && (await store.requeueDagRun(tx, plan.run.id, {touchActive: plan.touchActiveRun}))
  await store.recordClearImage(
    tx,
    logId,
    clearImageStandIn,
    image ?? null,
    cleared.map((c) => c.newId),
    plan.run.id,
  )
  return {
    cleared: plan.targets.map((t) => ({
      ti_id: t.id,
      new_ti_id: newIds.get(t.id) ?? null,
      task_id: t.taskId,
      map_index: t.mapIndex,
      previous_state: t.state,
    })),
    dag_run: {
      id: plan.run.id,
      previous_state: plan.run.state,
      state: requeued && (plan.run.state === 'success' || plan.run.state === 'failed') ? 'queued' : plan.run.state,
    },
  }
}
