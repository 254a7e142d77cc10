import type {Executor} from '../../engine/engine.js'

/** What OpenLineage COMPLETE events are built from (postgres/lineage.ts, postgres/lineageRebuild.ts). */
export interface LineageStore {
  /** After a commit: what the task instance's OpenLineage COMPLETE event is built from. */
  readLineageFacts(ex: Executor, tiId: string): Promise<LineageRow | undefined>
  /** The task instances whose current try airlock completed in the window (its own `success` audit row), still success. */
  readAirlockCompletions(
    ex: Executor,
    window: {since: Date; until: Date; dagId?: string | undefined},
  ): Promise<string[]>
}

/** A committed task instance as its OpenLineage COMPLETE event needs it (instants in epoch microseconds). */
export interface LineageRow {
  dagId: string
  taskId: string
  mapIndex: number
  tryNumber: number
  endMicros: bigint | null
  runMicros: bigint
  clearNumber: number
  confOpenLineage: Record<string, unknown> | null
  outputs: Array<{name: string; uri: string}>
  /** dag_run.data_interval_start / data_interval_end in epoch microseconds; null when not set. */
  dataIntervalStartMicros: bigint | null
  dataIntervalEndMicros: bigint | null
  /** The task and its DAG as the serialized DAG of the try's version declares them; null without one. */
  declared: DeclaredJob | null
}

/**
 * What the serialized DAG of a try's version says about the task and its DAG, for the job facets
 * the worker's COMPLETE carries (ownership, tags, documentation). A value the document leaves out
 * is Airflow's default: null for the docs and the description, no tags, and for `owner` the
 * document's `client_defaults.tasks.owner` (3.1+) or the schema default `airflow`.
 */
export interface DeclaredJob {
  /** The task's `owner`. */
  taskOwner: string
  /** The distinct owners of the DAG's tasks (the DAG's `owner` is them joined with ", "). */
  taskOwners: string[]
  /** The task's doc, doc_md, doc_json, doc_yaml and doc_rst. */
  taskDocs: {
    doc: string | null
    docMd: string | null
    docJson: string | null
    docYaml: string | null
    docRst: string | null
  }
  dagDocMd: string | null
  dagDescription: string | null
  dagTags: string[]
  /** The operator's fully qualified class name (`_task_module` + `.` + `task_type`), as `[openlineage] disabled_for_operators` names it. */
  operatorClass: string | null
  /** The task's `_selective_enable_ol` param (else the DAG's): true, false, or null when unset. */
  selectiveEnable: boolean | null
  /** The task's `_openlineage_emission_policy` param (its flags), or null when unset. */
  emissionPolicyFlags: Record<string, unknown> | null
}
