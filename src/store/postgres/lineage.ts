import {storedDagJson} from './storedDag.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {DeclaredJob, LineageRow, LineageStore} from '../families/lineage.js'
import {readAirlockCompletions} from './lineageRebuild.js'

/** Declared jobs per DAG version: a batch completes the same task of many runs, the DAG is parsed once. */
const cachedVersions = 64

/**
 * What a task instance's COMPLETE event is built from, read after its commit: its key and try,
 * end_date and its run's logical_date (or run_after) in microseconds since the epoch (the run id
 * hashes the microsecond instant; a JavaScript Date keeps milliseconds), the run's clear_number,
 * `conf["openlineage"]` and data interval, the assets of the events airlock's own `success` row
 * of this try and replay-events' rows of this try name (`extra.airlock.event_ids`): exactly what
 * airlock wrote; and the task and DAG as the serialized DAG of the try's version declares them
 * (task_instance.dag_version_id → serialized_dag, `data` or zlib `data_compressed`): the worker
 * builds the job facets from the DAG object it parsed, which that document records.
 */
function readLineageFacts() {
  const read = prepared(
    'lineage_facts',
    `select ti.dag_id, ti.task_id, ti.map_index, ti.try_number,
            (extract(epoch from ti.end_date) * 1000000)::bigint::text as end_micros,
            (extract(epoch from coalesce(dr.logical_date, dr.run_after)) * 1000000)::bigint::text as run_micros,
            (extract(epoch from dr.data_interval_start) * 1000000)::bigint::text as interval_start_micros,
            (extract(epoch from dr.data_interval_end) * 1000000)::bigint::text as interval_end_micros,
            dr.clear_number,
            case when jsonb_typeof(dr.conf::jsonb -> 'openlineage') = 'object' then dr.conf::jsonb -> 'openlineage' end as conf_openlineage,
            coalesce((select json_agg(json_build_object('name', a.name, 'uri', a.uri) order by e.id)
                        from (select distinct (jsonb_array_elements_text(l.extra::jsonb -> 'airlock' -> 'event_ids'))::int as id
                                from log l
                               where l.dag_id = ti.dag_id and l.task_id = ti.task_id and l.run_id = ti.run_id
                                 and l.map_index = ti.map_index and l.try_number = ti.try_number
                                 and l.event in ('success', 'airlock.replay-events') and l.extra like '{%"airlock"%') as named
                        -- From the audit rows' ids to the events, by key: never a pass over asset_event.
                        cross join lateral (select e.id, e.asset_id from asset_event e where e.id = named.id) as e
                        join asset a on a.id = e.asset_id), '[]'::json) as outputs,
            ti.dag_version_id::text as dag_version_id,
            (select sd.dag_hash from serialized_dag sd where sd.dag_version_id = ti.dag_version_id limit 1) as dag_hash
       from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
      where ti.id = $1::uuid`,
  )
  const declared = declaredJobCache()
  return async (ex: Executor, tiId: string): Promise<LineageRow | undefined> => {
    const [row] = await ex.query<{
      dag_id: string
      task_id: string
      map_index: number
      try_number: number
      end_micros: string | null
      run_micros: string
      interval_start_micros: string | null
      interval_end_micros: string | null
      clear_number: number
      conf_openlineage: Record<string, unknown> | null
      outputs: Array<{name: string; uri: string}>
      dag_version_id: string | null
      dag_hash: string | null
    }>(read([tiId]))
    if (!row) return undefined
    const micros = (text: string | null) => (text === null ? null : BigInt(text))
    return {
      dagId: row.dag_id,
      taskId: row.task_id,
      mapIndex: row.map_index,
      tryNumber: row.try_number,
      endMicros: micros(row.end_micros),
      runMicros: BigInt(row.run_micros),
      clearNumber: row.clear_number,
      confOpenLineage: row.conf_openlineage,
      outputs: row.outputs,
      dataIntervalStartMicros: micros(row.interval_start_micros),
      dataIntervalEndMicros: micros(row.interval_end_micros),
      declared:
        row.dag_version_id === null || row.dag_hash === null
          ? null
          : await declared(ex, row.dag_version_id, row.dag_hash, row.task_id),
    }
  }
}

function declaredJobCache() {
  const serializedDag = prepared(
    'lineage_serialized_dag',
    'select data::text as data, data_compressed from serialized_dag where dag_version_id = $1::uuid limit 1',
  )
  const versions = new Map<string, unknown>()
  return async (ex: Executor, versionId: string, hash: string, taskId: string): Promise<DeclaredJob | null> => {
    const cacheKey = `${versionId}:${hash}`
    if (!versions.has(cacheKey)) {
      const [row] = await ex.query<{data: string | null; data_compressed: Buffer | null}>(serializedDag([versionId]))
      if (versions.size >= cachedVersions) versions.delete(versions.keys().next().value!)
      versions.set(cacheKey, row ? storedDagJson(row.data, row.data_compressed) : undefined)
    }

    return declaredJob(versions.get(cacheKey), taskId)
  }
}

/**
 * The task's and DAG's fields the provider's job facets read, from a serialized DAG
 * (airflow-core/src/airflow/serialization/schema.json and `SerializedBaseOperator._is_excluded`):
 * `dag.tags`, `dag.doc_md`, `dag.description`, and per task in `dag.tasks[].__var` (a mapped
 * task's in `partial_kwargs`) `owner`, `doc`, `doc_md`, `doc_json`, `doc_yaml`, `doc_rst`. A value
 * equal to its default is left out of the document: `owner` then is `client_defaults.tasks.owner`
 * (format 3, 3.1+, which keeps the SDK's defaults once) or the schema default `airflow` (3.0
 * leaves out only a value equal to it; an `[operators] default_owner` other than `airflow` is
 * written on every task). null when the task is not in the document.
 */
export function declaredJob(serialized: unknown, taskId: string): DeclaredJob | null {
  const dag = field(serialized, 'dag')
  const tasks = field(dag, 'tasks')
  if (!Array.isArray(tasks)) return null
  const defaultOwner = text(field(field(field(serialized, 'client_defaults'), 'tasks'), 'owner')) ?? 'airflow'
  const ops = (tasks as unknown[]).map((task) => field(task, '__var') ?? task)
  const own = (op: unknown, key: string) => text(field(op, key)) ?? text(field(field(op, 'partial_kwargs'), key))
  const op = ops.find((candidate) => field(candidate, 'task_id') === taskId)
  if (op === undefined) return null
  const tags = field(dag, 'tags')
  // A set is encoded `{"__type": "set", "__var": [...]}`; serialize_to_json keeps only the list.
  const tagList = Array.isArray(tags) ? tags : field(tags, '__var')
  return {
    taskOwner: own(op, 'owner') ?? defaultOwner,
    taskOwners: [...new Set(ops.map((candidate) => own(candidate, 'owner') ?? defaultOwner))],
    taskDocs: {
      doc: own(op, 'doc'),
      docMd: own(op, 'doc_md'),
      docJson: own(op, 'doc_json'),
      docYaml: own(op, 'doc_yaml'),
      docRst: own(op, 'doc_rst'),
    },
    dagDocMd: text(field(dag, 'doc_md')),
    dagDescription: text(field(dag, 'description')),
    dagTags: Array.isArray(tagList) ? tagList.filter((tag): tag is string => typeof tag === 'string') : [],
    // providers/openlineage utils/utils.py get_fully_qualified_class_name, for a serialized
    // operator: `_task_module + "." + task_type` (`_task_type` in older documents).
    operatorClass: operatorClassOf(op),
    // utils/selective_enable.py is_task_lineage_enabled: the task's `_selective_enable_ol` param;
    // enable_lineage(dag) sets it on every task and on the DAG, whose params a task inherits.
    selectiveEnable: selectiveParam(field(op, 'params')) ?? selectiveParam(field(dag, 'params')),
    // utils/emission_policy.py `_read_param(operator, "_openlineage_emission_policy")`: the task's
    // own params only; a call on the DAG writes its task flags into every task's params.
    emissionPolicyFlags: emissionPolicyParam(field(op, 'params')),
  }
}

function operatorClassOf(op: unknown): string | null {
  const module = text(field(op, '_task_module'))
  const type = text(field(op, 'task_type')) ?? text(field(op, '_task_type'))
  return module && type ? `${module}.${type}` : null
}

/**
 * A param's value in serialized params: a list of [name, param] pairs (3.x,
 * `_serialize_params_dict`) or an object (older), each param `{"__class", "default", …}`;
 * undefined when the param is not there.
 */
function paramValue(params: unknown, name: string): unknown {
  const entries: unknown[] = Array.isArray(params)
    ? params
    : typeof params === 'object' && params !== null
      ? Object.entries(params)
      : []
  for (const entry of entries) {
    if (!Array.isArray(entry) || entry[0] !== name) continue
    const value: unknown = entry[1]
    return typeof value === 'object' && value !== null && 'default' in value ? value.default : value
  }
  return undefined
}

/** The `_selective_enable_ol` param: true, false, or null when unset or not a boolean. */
function selectiveParam(params: unknown): boolean | null {
  const setting = paramValue(params, '_selective_enable_ol')
  return typeof setting === 'boolean' ? setting : null
}

/**
 * The `_openlineage_emission_policy` param's flags: a dict, serialized `{"__type": "dict",
 * "__var": {…}}` (as Airflow 3.2.2's serializer writes `Param({"emit": False})`) or plain; null
 * when unset or not a dict (`_read_param` then reads `{}`).
 */
function emissionPolicyParam(params: unknown): Record<string, unknown> | null {
  const value = paramValue(params, '_openlineage_emission_policy')
  const dict = field(value, '__type') === 'dict' ? field(value, '__var') : value
  return typeof dict === 'object' && dict !== null && !Array.isArray(dict) ? (dict as Record<string, unknown>) : null
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)

/** The lineage family: a COMPLETE's facts, and the completions `lineage resend` rebuilds. */
export function lineageStore(): LineageStore {
  return {readLineageFacts: readLineageFacts(), readAirlockCompletions: readAirlockCompletions()}
}
