import {inflateSync} from 'node:zlib'

/**
 * A task's declared outlets as the DAG processor serialized them, per task id. Operators'
 * fields go through `BaseSerialization.serialize`
 * (airflow-core/src/airflow/serialization/serialized_objects.py, the same encoding in the 3.x code
 * read, which includes the 3.0 line): an asset becomes
 * `{"__type": "asset", "__var": {name, uri, group, extra}}`, `Asset.ref(name=…)` /
 * `Asset.ref(uri=…)` become `{"__type": "asset_ref", "__var": {"name": …}}` / `{… {"uri": …}}`,
 * an alias `{"__type": "asset_alias", "__var": {name, group}}`. Tasks sit in `dag.tasks` as
 * `{"__type": "operator", "__var": {task_id, outlets, …}}`; a mapped task keeps its outlets
 * there too (or in `partial_kwargs`), and every map index uses that one entry.
 */
export type DeclaredOutlet =
  {kind: 'asset'; name: string; uri: string} | {kind: 'name_ref'; name: string} | {kind: 'uri_ref'; uri: string} | {kind: 'alias'; name: string}

/** `serialized_dag.data` (JSON) or, when it is NULL, `data_compressed` (zlib, [core] compress_serialized_dags). */
export function serializedDagJson(data: unknown, compressed: Buffer | null): unknown {
  if (data !== null && data !== undefined) return typeof data === 'string' ? JSON.parse(data) : data
  if (compressed) return JSON.parse(inflateSync(compressed).toString('utf8'))
  return undefined
}

export function declaredOutletsByTask(serialized: unknown): Map<string, DeclaredOutlet[]> {
  const byTask = new Map<string, DeclaredOutlet[]>()
  const tasks = field(field(serialized, 'dag'), 'tasks')
  if (!Array.isArray(tasks)) return byTask
  for (const task of tasks as unknown[]) {
    const op = field(task, '__var') ?? task
    const taskId = field(op, 'task_id')
    if (typeof taskId !== 'string') continue
    const outlets = field(op, 'outlets') ?? field(field(op, 'partial_kwargs'), 'outlets')
    byTask.set(taskId, Array.isArray(outlets) ? outlets.flatMap(declaredOutlet) : [])
  }

  return byTask
}

function declaredOutlet(encoded: unknown): DeclaredOutlet[] {
  const type = field(encoded, '__type')
  const value = field(encoded, '__var')
  const name = field(value, 'name')
  const uri = field(value, 'uri')
  switch (type) {
    case 'asset':
      return typeof name === 'string' && typeof uri === 'string' ? [{kind: 'asset', name, uri}] : []
    case 'asset_ref':
      if (typeof name === 'string') return [{kind: 'name_ref', name}]
      return typeof uri === 'string' ? [{kind: 'uri_ref', uri}] : []
    case 'asset_alias':
      return typeof name === 'string' ? [{kind: 'alias', name}] : []
    default:
      // Conditions (asset_all / asset_any) are schedules, not outlets; anything else is not an asset.
      return []
  }
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined
}
