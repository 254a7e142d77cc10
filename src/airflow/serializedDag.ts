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
  | {kind: 'asset'; name: string; uri: string}
  | {kind: 'name_ref'; name: string}
  | {kind: 'uri_ref'; uri: string}
  | {kind: 'alias'; name: string}

/** A stored serialized DAG that is not zlib or not JSON: airlock cannot read it, nor could Airflow load it. */
export class UnreadableSerializedDag extends Error {
  constructor(
    /** The column that held it. */
    readonly column: 'data' | 'data_compressed',
    cause: unknown,
  ) {
    super(`serialized_dag.${column}: ${(cause as Error).message}`, {cause})
    this.name = 'UnreadableSerializedDag'
  }
}

/**
 * `serialized_dag.data` (JSON) or, when it is NULL, `data_compressed` (zlib, [core] compress_serialized_dags);
 * UnreadableSerializedDag when the payload is not. A reader that can go on without it (the
 * audit's declared outlets: versionDag) says it cannot tell; the store stops the others with exit 8.
 */
export function serializedDagJson(data: unknown, compressed: Buffer | null): unknown {
  const column = data !== null && data !== undefined ? 'data' : 'data_compressed'
  try {
    if (column === 'data') return typeof data === 'string' ? JSON.parse(data) : data
    if (compressed) return JSON.parse(inflateSync(compressed).toString('utf8'))
    return undefined
  } catch (error) {
    throw new UnreadableSerializedDag(column, error)
  }
}

/** A DAG version's serialized DAG as a reader that can say "cannot tell" takes it: unreadable, not thrown. */
export interface VersionDag {
  id: string
  /** undefined: no serialized DAG stored for the version (or it could not be read). */
  serialized: unknown
  /** Why the stored payload could not be read. */
  unreadable?: string
}

/** serializedDagJson of a version's row (undefined: none stored), or why it could not be read. */
export function versionDag(id: string, row: {data: unknown; data_compressed: Buffer | null} | undefined): VersionDag {
  if (!row) return {id, serialized: undefined}
  try {
    return {id, serialized: serializedDagJson(row.data, row.data_compressed)}
  } catch (error) {
    if (!(error instanceof UnreadableSerializedDag)) throw error
    return {id, serialized: undefined, unreadable: error.message}
  }
}

/** What the protocol's read needs of a task in its serialized DAG. */
export interface SerializedTask {
  outlets: DeclaredOutlet[]
  /**
   * The mapped tasks (and tasks of mapped task groups) directly downstream of this task, when the
   * task is not mapped itself: a worker pushes the length of its return value for them (task_map),
   * without which they cannot expand.
   */
  mappedDependants: string[]
}

export function tasksOf(serialized: unknown): Map<string, SerializedTask> {
  const byTask = new Map<string, SerializedTask>()
  const tasks = field(field(serialized, 'dag'), 'tasks')
  if (!Array.isArray(tasks)) return byTask
  const ops = (tasks as unknown[]).map((task) => field(task, '__var') ?? task)
  const mapped = new Set([
    ...ops.flatMap((op) =>
      field(op, '_is_mapped') === true && typeof field(op, 'task_id') === 'string'
        ? [field(op, 'task_id') as string]
        : [],
    ),
    ...tasksOfMappedGroups(field(field(serialized, 'dag'), 'task_group'), false),
  ])
  for (const op of ops) {
    const taskId = field(op, 'task_id')
    if (typeof taskId !== 'string') continue
    const outlets = field(op, 'outlets') ?? field(field(op, 'partial_kwargs'), 'outlets')
    const downstream = field(op, 'downstream_task_ids') ?? field(op, '_downstream_task_ids')
    const dependants =
      field(op, '_is_mapped') === true || !Array.isArray(downstream)
        ? []
        : downstream.filter((id) => mapped.has(id as string))
    byTask.set(taskId, {
      outlets: Array.isArray(outlets) ? outlets.flatMap(declaredOutlet) : [],
      mappedDependants: dependants as string[],
    })
  }

  return byTask
}

/**
 * The task ids inside mapped task groups of a serialized task group tree (`serialize_task_group`:
 * `children` maps each child to `["operator", task_id]` or `["taskgroup", {…}]`, and a mapped group
 * carries `is_mapped`), as `iter_mapped_dependants` counts a mapped task group downstream.
 */
function tasksOfMappedGroups(group: unknown, insideMapped: boolean): string[] {
  const mappedHere = insideMapped || field(group, 'is_mapped') === true
  const children = field(group, 'children')
  if (typeof children !== 'object' || children === null) return []
  return Object.values(children as Record<string, unknown>).flatMap((child) => {
    if (!Array.isArray(child) || child.length !== 2) return []
    const [kind, value] = child as [unknown, unknown]
    if (kind === 'taskgroup') return tasksOfMappedGroups(value, mappedHere)
    return mappedHere && typeof value === 'string' ? [value] : []
  })
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
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined
}

/**
 * A DAG's task graph as the DAG processor serialized it: per task, `downstream_task_ids` (a plain
 * sorted array; absent when empty), `is_setup` / `is_teardown` and `retries` in
 * `dag.tasks[].__var` (`SerializedBaseOperator`, airflow-core/src/airflow/serialization/serialized_objects.py).
 * Task-level edges already list the members of a downstream task group, so the closure over them
 * is Airflow's `get_flat_relatives`. A value equal to its default is left out: format 3 (3.1+)
 * keeps the defaults once, in `client_defaults.tasks` (for example `{"retries": 2}`); format 2
 * (3.0) leaves out a value equal to the operator's default, which for `retries` is `[core]
default_task_retries` (0 unless configured), a setting airlock cannot read: `retriesStated` says
whether the document gave the value.
 */
export interface TaskGraph {
  tasks: Map<
    string,
    {downstream: string[]; isSetup: boolean; isTeardown: boolean; retries: number; retriesStated: boolean}
  >
  /** Format 3 (3.1+): the defaults are in the document (`client_defaults`), so a left-out retries is known. */
  statesDefaults: boolean
}

export function taskGraph(serialized: unknown): TaskGraph | undefined {
  const dagTasks = field(field(serialized, 'dag'), 'tasks')
  if (!Array.isArray(dagTasks)) return undefined
  const clientDefaults = field(serialized, 'client_defaults')
  const defaultRetries = field(field(clientDefaults, 'tasks'), 'retries')
  const tasks: TaskGraph['tasks'] = new Map()
  for (const task of dagTasks as unknown[]) {
    const op = field(task, '__var') ?? task
    const taskId = field(op, 'task_id')
    if (typeof taskId !== 'string') continue
    const downstream = field(op, 'downstream_task_ids') ?? field(op, '_downstream_task_ids')
    const own = field(op, 'retries') ?? field(field(op, 'partial_kwargs'), 'retries')
    const retries = own ?? defaultRetries
    tasks.set(taskId, {
      downstream: Array.isArray(downstream) ? downstream.filter((id): id is string => typeof id === 'string') : [],
      isSetup: field(op, 'is_setup') === true,
      isTeardown: field(op, 'is_teardown') === true,
      retries: typeof retries === 'number' ? retries : 0,
      retriesStated: typeof own === 'number',
    })
  }

  return {tasks, statesDefaults: clientDefaults !== undefined}
}

/**
 * The tasks Airflow clears after marking `taskId` success: `partial_subset(task_ids={taskId},
 * include_downstream=True, include_upstream=False)` of `set_task_instance_state`
 * (airflow-core/src/airflow/models/dag.py in 3.0; `SerializedDAG` from 3.1). That is the task, its
 * transitive downstream, and for the task and each downstream task that is neither a setup nor a
 * teardown its relevant upstream setups with their teardowns (`get_upstreams_only_setups_and_teardowns`).
 * `partial` is false when that reaches every task: Airflow's clear then filters by run only,
 * so task instances of tasks no longer in the DAG are cleared too.
 */
export function clearSubset(graph: TaskGraph, taskId: string): {taskIds: Set<string>; partial: boolean} {
  const downstreamOf = (id: string) => closure(id, (x) => graph.tasks.get(x)?.downstream ?? [])
  const upstreams = new Map<string, string[]>()
  for (const [id, task] of graph.tasks)
    for (const down of task.downstream) upstreams.set(down, [...(upstreams.get(down) ?? []), id])
  const upstreamOf = (id: string) => closure(id, (x) => upstreams.get(x) ?? [])

  const relevantSetupsAndTeardowns = (id: string): string[] => {
    const downstreamTeardowns = new Set([...downstreamOf(id)].filter((x) => graph.tasks.get(x)?.isTeardown))
    const found: string[] = []
    for (const setup of upstreamOf(id)) {
      const task = graph.tasks.get(setup)
      if (!task?.isSetup) continue
      const teardowns = task.downstream.filter((x) => graph.tasks.get(x)?.isTeardown)
      if (teardowns.length === 0 || task.downstream.some((x) => downstreamTeardowns.has(x)))
        found.push(setup, ...teardowns.filter((x) => x !== id))
    }
    return found
  }

  const downstream = downstreamOf(taskId)
  const taskIds = new Set([taskId, ...downstream])
  for (const id of [taskId, ...downstream]) {
    const task = graph.tasks.get(id)
    if (task && !task.isSetup && !task.isTeardown)
      for (const related of relevantSetupsAndTeardowns(id)) taskIds.add(related)
  }

  return {taskIds, partial: taskIds.size < graph.tasks.size}
}

/** Every node reachable from `start` along `next`, `start` excluded. */
function closure(start: string, next: (id: string) => readonly string[]): Set<string> {
  const seen = new Set<string>()
  const stack = [...next(start)]
  while (stack.length > 0) {
    const id = stack.pop()!
    if (seen.has(id) || id === start) continue
    seen.add(id)
    stack.push(...next(id))
  }
  return seen
}
