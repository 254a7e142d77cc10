import type {StoredState, TaskInstanceContext} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'

/** A completion that continues its run: Airflow's clear of the failed downstream (postgres/clear.ts). */
export interface ClearStore {
  /** The DAG's newest serialized DAG (parsed JSON), from which Airflow's REST handler takes the downstream set. */
  readLatestSerializedDag(ex: Executor, dagId: string): Promise<unknown>
  readVersionSerializedDag(ex: Executor, dagVersionId: string): Promise<unknown>
  /** The task instance's run; `lock` takes its row (FOR UPDATE). */
  readClearRun(ex: Executor, dagRunId: number, options: {lock: boolean}): Promise<ClearRun | undefined>
  /** The run's failed / upstream_failed task instances of these tasks (null: every task), the marked task excluded; `lock` takes them in key order. */
  readClearTargets(
    ex: Executor,
    ti: TaskInstanceContext,
    taskIds: readonly string[] | null,
    options: {lock: boolean},
  ): Promise<ClearTarget[]>
  /** Which of these task instances have a human-in-the-loop record (hitl_detail). */
  readHitlTaskInstances(ex: Executor, tiIds: readonly string[]): Promise<string[]>
  /** Archive, delete reschedules, new id and state NULL, as `clear_task_instances`. */
  clearTaskInstances(
    ex: Executor,
    targets: ReadonlyArray<{id: string; retries: number | null}>,
  ): Promise<ClearedTaskInstance[]>
  /** A finished run back to queued; an active one's queued_at and clear_number moved when `touchActive` (3.2+); false when nothing changed. */
  requeueDagRun(ex: Executor, dagRunId: number, options: {touchActive: boolean}): Promise<boolean>
  /** Under the clear's locks, before it: the rows it will change, as JSON text (undo's before-image). */
  readClearImage(ex: Executor, tiIds: readonly string[], dagRunId: number): Promise<string>
  /** After the clear: its before-image and what it left into the completion's audit row. */
  recordClearImage(
    ex: Executor,
    logId: number,
    standIn: string,
    image: string | null,
    newIds: readonly string[],
    dagRunId: number,
  ): Promise<void>
  /** How many deadline alerts the run has (refused from 3.2, whose clear re-anchors them). */
  countRunDeadlines(ex: Executor, dagRunId: number): Promise<number>
}

/** A dag run as the clear of its failed downstream decides on it. */
export interface ClearRun {
  id: number
  state: string | null
  bundleVersion: string | null
  createdDagVersionId: string | null
}

/** A task instance Airflow's clear would select (failed or upstream_failed). */
export interface ClearTarget {
  id: string
  taskId: string
  mapIndex: number
  state: StoredState
  tryNumber: number | null
  operator: string | null
  dagVersionId: string | null
}

export interface ClearedTaskInstance {
  oldId: string
  newId: string
}
