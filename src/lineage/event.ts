import type {DeclaredJob} from '../store/families/lineage.js'
import {datasetOf} from './datasets.js'
import {
  documentationSchema,
  jobDocumentation,
  jobOwners,
  jobTags,
  nominalTime,
  nominalTimeSchema,
  ownershipSchema,
  tagsSchema,
} from './facets.js'
import {generateStaticUuid, pythonIsoformat, type MicroInstant} from './staticUuid.js'

/** What the database says about a committed task instance, for its COMPLETE event. */
export interface LineageFacts {
  dagId: string
  taskId: string
  mapIndex: number
  tryNumber: number
  /** task_instance.end_date, as recorded. */
  endDate: MicroInstant
  /** The dag run's logical_date, or its run_after when it has none (Airflow 3 manual and asset runs). */
  runInstant: MicroInstant
  clearNumber: number
  /** dag_run.conf["openlineage"], when it is an object. */
  confOpenLineage: Record<string, unknown> | null
  /** The assets of the events airlock wrote for this try, in event order. */
  outputs: Array<{name: string; uri: string}>
  /** dag_run.data_interval_start / data_interval_end in epoch microseconds (null: not set). */
  dataIntervalStartMicros: bigint | null
  dataIntervalEndMicros: bigint | null
  /** The task and DAG as the try's serialized DAG declares them (null: no serialized DAG for its version). */
  declared: DeclaredJob | null
}

export interface LineageIdentity {
  namespace: string
  airlockVersion: string
}

const specUrl = 'https://openlineage.io/spec'
export const producer = 'https://github.com/airflow-airlock/airlock'

/**
 * The COMPLETE RunEvent Airflow's OpenLineage provider sends for a try that succeeded on a worker,
 * built from the database (apache-airflow-providers-openlineage, read in the released wheels
 * 2.0.0 to 2.20.3: plugins/listener.py `_on_task_instance_success`, plugins/adapter.py
 * `build_task_instance_run_id`, `build_dag_run_id`, `complete_task`, `_build_run`, `_build_job`,
 * utils/utils.py `get_task_parent_run_facet`; docs/lineage.md names the release that first
 * carries each part):
 *
 * - run.runId: `generate_static_uuid(logical_date or run_after,
 *   f"{namespace}.{dag_id}.{task_id}.{try_number}.{map_index}")`, the id the worker's START used
 *   (2.1.0+; 2.10.0 moved it to utils.py `build_task_instance_ol_run_id`, same data);
 * - the parent facet: the dag run (`generate_static_uuid(same instant,
 *   f"{namespace}.{dag_id}.{clear_number}")`, job `{namespace, dag_id}`), its root the dag run too
 *   unless `dag_run.conf["openlineage"]` names a complete root (rootParentRunId,
 *   rootParentJobNamespace, rootParentJobName; 2.8.0+) or, failing that, a complete parent
 *   (2.9.0+);
 * - job `{namespace, "{dag_id}.{task_id}"}` with the job-type facet (BATCH, AIRFLOW, TASK);
 * - eventTime: the recorded end_date, as Python's isoformat writes it. The provider's listener
 *   sends `timezone.utcnow()` of the moment it runs (every release, worker and manual paths
 *   alike); airlock keeps the instant the try was recorded to end, so an event rebuilt later
 *   (`lineage resend --since`) still says when the task finished;
 * - outputs: the datasets the provider's converters make of the assets airlock wrote events for
 *   (datasets.ts `datasetOf`), as the worker's COMPLETE carries a task's Asset outlets from
 *   2.16.0; an asset the provider makes no dataset of is left out (the caller passes none when
 *   `extract_operator_metadata` is off);
 * - a processing_engine facet naming airlock, so nobody takes it for the worker's event;
 * - the `nominalTime` run facet and the `documentation`, `ownership` and `tags` job facets, as
 *   the worker's `_on_task_instance_success` makes them (facets.ts), from the run's data interval
 *   and the try's serialized DAG; without a serialized DAG the three job facets are left out.
 */
export function completeEvent(facts: LineageFacts, identity: LineageIdentity): Record<string, unknown> {
  const {namespace} = identity
  const runId = generateStaticUuid(
    facts.runInstant,
    `${namespace}.${facts.dagId}.${facts.taskId}.${facts.tryNumber}.${facts.mapIndex}`,
  )
  const parentRunId = generateStaticUuid(facts.runInstant, `${namespace}.${facts.dagId}.${facts.clearNumber}`)
  const root = rootFromConf(facts.confOpenLineage) ?? {runId: parentRunId, namespace, name: facts.dagId}
  const facet = (schema: string) => ({_producer: producer, _schemaURL: `${specUrl}/facets/${schema}`})
  const nominal = nominalTime(micro(facts.dataIntervalStartMicros), micro(facts.dataIntervalEndMicros))
  return {
    eventType: 'COMPLETE',
    eventTime: pythonIsoformat(facts.endDate),
    producer,
    schemaURL: `${specUrl}/2-0-2/OpenLineage.json#/$defs/RunEvent`,
    run: {
      runId,
      facets: {
        parent: {
          ...facet('1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet'),
          run: {runId: parentRunId},
          job: {namespace, name: facts.dagId},
          root: {run: {runId: root.runId}, job: {namespace: root.namespace, name: root.name}},
        },
        // _build_run adds nominalTime after the other run facets, then processing_engine.
        ...(nominal ? {nominalTime: {...facet(nominalTimeSchema), ...nominal}} : {}),
        processing_engine: {
          ...facet('1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet'),
          name: 'airlock',
          version: identity.airlockVersion,
        },
      },
    },
    job: {
      namespace,
      name: `${facts.dagId}.${facts.taskId}`,
      facets: {
        // _build_job's order: documentation, ownership, tags, then jobType.
        ...(facts.declared ? jobFacets(facts.declared, facet) : {}),
        jobType: {
          ...facet('2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet'),
          processingType: 'BATCH',
          integration: 'AIRFLOW',
          jobType: 'TASK',
        },
      },
    },
    inputs: [],
    outputs: facts.outputs.flatMap((asset) => datasetOf(asset.uri) ?? []),
  }
}

const micro = (epochMicros: bigint | null): MicroInstant | null => (epochMicros === null ? null : {epochMicros})

/**
 * `_build_job`'s facets other than jobType, each only when it has content: documentation (with
 * its contentType), ownership (`owners: [{name}]`, sorted), tags (sorted, source AIRFLOW). The
 * listener always passes a non-empty owner list (`split` never returns an empty one).
 */
function jobFacets(
  declared: DeclaredJob,
  facet: (schema: string) => {_producer: string; _schemaURL: string},
): Record<string, unknown> {
  const documentation = jobDocumentation(declared)
  const tags = jobTags(declared)
  return {
    ...(documentation ? {documentation: {...facet(documentationSchema), ...documentation}} : {}),
    ownership: {...facet(ownershipSchema), owners: jobOwners(declared).map((name) => ({name}))},
    ...(tags.length > 0 ? {tags: {...facet(tagsSchema), tags}} : {}),
  }
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * The root the provider reads from `dag_run.conf["openlineage"]`: a complete root (all three
 * keys, a valid UUID), else a complete parent used as the root (utils.py
 * `get_root_information_from_dagrun_conf`, `get_parent_information_from_dagrun_conf`).
 */
function rootFromConf(
  conf: Record<string, unknown> | null,
): {runId: string; namespace: string; name: string} | undefined {
  if (!conf) return undefined
  const read = (run: string, namespace: string, name: string) => {
    const [r, ns, n] = [conf[run], conf[namespace], conf[name]]
    return typeof r === 'string' &&
      typeof ns === 'string' &&
      typeof n === 'string' &&
      r &&
      ns &&
      n &&
      uuidPattern.test(r)
      ? {runId: r, namespace: ns, name: n}
      : undefined
  }
  return (
    read('rootParentRunId', 'rootParentJobNamespace', 'rootParentJobName') ??
    read('parentRunId', 'parentJobNamespace', 'parentJobName')
  )
}
