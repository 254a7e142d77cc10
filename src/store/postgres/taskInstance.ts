import type {Capabilities} from '../../airflow/schema.js'
import {tasksOf, type DeclaredOutlet, type SerializedTask} from '../../airflow/serializedDag.js'
import {storedDagJson} from './storedDag.js'
import type {
  OutletAsset,
  StoredState,
  TaskInstanceContext,
  TaskInstanceKey,
  TaskInstanceRef,
} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {LockedTaskInstance, RowHolder} from '../families/taskInstances.js'
import type {TaskInstanceStore} from '../families/taskInstances.js'
import {keyedTaskInstanceOf, taskInstanceKeyOf, type KeyedTaskInstanceRow, type TaskInstanceKeyRow} from './rows.js'

interface TaskInstanceRow extends KeyedTaskInstanceRow {
  state: StoredState
  try_number: number | null
  start_date: Date | null
  end_date: Date | null
  dag_run_id: number
  logical_date: Date | null
  partition_key: string | null
  owners: string | null
  dag_version_id: string | null
  /** The serialized DAG of the task instance's version, when one exists (its hash keys the cache). */
  dag_hash: string | null
  /** Only without a serialized DAG: the outlets of task_outlet_asset_reference. */
  legacy_outlets: Array<{id: number; name: string; uri: string; active: boolean}> | null
  /**
   * Only in the read that guessed the task (see readTaskInstance), and only when the guess was
   * right: the guessed outlets resolved in this same statement, in declared order.
   */
  guessed_ids?: Array<number | null> | null
  guessed_names?: string[] | null
  guessed_uris?: string[] | null
  guessed_active?: boolean[] | null
}

/** A declared outlet that names an asset (an alias names none: it gets no event of its own). */
type AssetOutlet = Exclude<DeclaredOutlet, {kind: 'alias'}>

/** Parsed declared outlets per DAG version: a serialized DAG is parsed once, not once per task instance. */
const cachedVersions = 64

/**
 * Protocol step 1: the task instance with its run, DAG and declared outlets, WITHOUT a lock.
 * Decisions made on this read are only early exits; the commit decision is taken on the locked
 * read.
 *
 * The outlets are the task's as its DAG version declared them: the worker emits events for the
 * task's `outlets` (assets, `Asset.ref(name=…)`, `Asset.ref(uri=…)`, aliases), and the database
 * keeps them in the serialized DAG of that version (task_instance.dag_version_id →
 * serialized_dag). `TaskInstance.register_asset_changes_in_db`
 * (airflow-core/src/airflow/models/taskinstance.py, Airflow 3.x as read at main) resolves them among ACTIVE assets: an asset by
 * (name, uri), a name reference by name, a uri reference by uri, one event each. Without a
 * serialized DAG (none was ever written for that version) the outlets come from
 * task_outlet_asset_reference, which holds only the concrete assets of the latest parse; the
 * caller says so.
 */
function readTaskInstance(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const statements = readStatements(capabilities)
  const serializedTask = serializedTaskCache()
  const resolveOutlets = outletResolver()
  // The task the last read by id resolved outlets for. A batch completes the same task of many
  // runs, so the next read names it and resolves its outlets in the same statement (one round
  // trip instead of two); a read whose task instance turns out to be another task's ignores them
  // and resolves its own, as without a guess.
  let guess: {versionId: string; hash: string; taskId: string; assets: AssetOutlet[]} | undefined

  return async (
    ex: Executor,
    ref: TaskInstanceRef,
    options: {withOutlets: boolean},
  ): Promise<TaskInstanceContext | undefined> => {
    const byTiId = 'tiId' in ref
    const guessed = byTiId && options.withOutlets ? guess : undefined
    const statement = guessed
      ? statements.idOutletsGuessed
      : statements[`${byTiId ? 'id' : 'key'}${options.withOutlets ? 'Outlets' : ''}`]
    const values: unknown[] = byTiId ? [ref.tiId] : [ref.key.dagId, ref.key.runId, ref.key.taskId, ref.key.mapIndex]
    if (guessed) values.push(guessed.versionId, guessed.hash, guessed.taskId, ...outletArrays(guessed.assets))
    const [row] = await ex.query<TaskInstanceRow>(statement(values))
    if (!row) return undefined
    const context = contextOf(row)
    if (!options.withOutlets) return context
    if (row.dag_hash === null || row.dag_version_id === null) {
      context.outletsFrom = 'task_outlet_asset_reference'
      context.outlets = (row.legacy_outlets ?? []).map((o): OutletAsset => ({
        kind: 'asset',
        assetId: o.id,
        name: o.name,
        uri: o.uri,
        active: o.active,
      }))
      return context
    }

    const task = await serializedTask(ex, row.dag_version_id, row.dag_hash, row.task_id)
    context.mappedDependants = task.mappedDependants
    context.declaredAliases = task.outlets.flatMap((o) => (o.kind === 'alias' ? [o.name] : []))
    const assets = task.outlets.filter((o): o is AssetOutlet => o.kind !== 'alias')
    if (guessed && row.guessed_ids) {
      context.outlets = outletAssets(assets, {
        ids: row.guessed_ids,
        names: row.guessed_names ?? [],
        uris: row.guessed_uris ?? [],
        active: row.guessed_active ?? [],
      })
    } else {
      context.outlets = await resolveOutlets(ex, assets)
    }
    if (byTiId && assets.length > 0)
      guess = {versionId: row.dag_version_id, hash: row.dag_hash, taskId: row.task_id, assets}
    return context
  }
}

/**
 * The reads of step 1: by id or by key, with or without what the outlets need; and by id with a
 * guessed task's outlets resolved in the same statement ($2 version, $3 hash, $4 task id: only when
 * the row is that task of that version; $5 … $7 the outlets, as resolveOutletsText reads them).
 */
function readStatements(capabilities: Pick<Capabilities, 'eventPartitionKey'>) {
  const partitionKey = capabilities.eventPartitionKey ? 'dr.partition_key' : 'null::varchar'
  const legacyOutlets = `(select json_agg(json_build_object('id', a.id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null) order by a.id)
          from task_outlet_asset_reference r
          join asset a on a.id = r.asset_id
          left join asset_active aa on aa.name = a.name and aa.uri = a.uri
         where r.dag_id = ti.dag_id and r.task_id = ti.task_id)`
  const text = (withOutlets: boolean, where: string, guessed = false) =>
    `select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
            dr.id as dag_run_id, dr.logical_date, ${partitionKey} as partition_key, d.owners, ti.dag_version_id,
            ${withOutlets ? 'sd.dag_hash' : 'null::varchar'} as dag_hash,
            ${withOutlets ? `case when sd.id is null then ${legacyOutlets} end` : 'null::json'} as legacy_outlets${
              guessed
                ? `,
            g.ids as guessed_ids, g.names as guessed_names, g.uris as guessed_uris, g.active as guessed_active`
                : ''
            }
       from task_instance ti
       join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
       left join dag d on d.dag_id = ti.dag_id
       ${withOutlets ? 'left join serialized_dag sd on sd.dag_version_id = ti.dag_version_id' : ''}
       ${
         guessed
           ? `left join lateral (
         select array_agg(r.id order by r.n) as ids, array_agg(r.name order by r.n) as names,
                array_agg(r.uri order by r.n) as uris, array_agg(r.active order by r.n) as active
           from (${resolveOutletsText('$5', '$6', '$7')}) as r
       ) as g on sd.dag_hash = $3 and ti.dag_version_id = $2::uuid and ti.task_id = $4`
           : ''
       }
      where ${where}`
  const byId = 'ti.id = $1::uuid'
  const byKey = 'ti.dag_id = $1 and ti.run_id = $2 and ti.task_id = $3 and ti.map_index = $4'
  return {
    idOutlets: prepared('read_ti_id_outlets', text(true, byId)),
    idOutletsGuessed: prepared('read_ti_id_outlets_guessed', text(true, byId, true)),
    id: prepared('read_ti_id', text(false, byId)),
    keyOutlets: prepared('read_ti_key_outlets', text(true, byKey)),
    key: prepared('read_ti_key', text(false, byKey)),
  }
}

function contextOf(row: TaskInstanceRow): TaskInstanceContext {
  return {
    ...keyedTaskInstanceOf(row),
    state: row.state,
    tryNumber: row.try_number,
    startDate: row.start_date,
    endDate: row.end_date,
    dagRunId: row.dag_run_id,
    logicalDate: row.logical_date,
    partitionKey: row.partition_key,
    owners: row.owners,
    dagVersionId: row.dag_version_id,
    outlets: [],
    outletsFrom: 'serialized_dag',
    declaredAliases: [],
    mappedDependants: [],
  }
}

/** A task's outlets and mapped dependants from its DAG version's serialized DAG, parsed once per version. */
function serializedTaskCache() {
  const serializedDag = prepared(
    'serialized_dag',
    'select data::text as data, data_compressed from serialized_dag where dag_version_id = $1::uuid',
  )
  const versions = new Map<string, Map<string, SerializedTask>>()
  return async (ex: Executor, versionId: string, hash: string, taskId: string): Promise<SerializedTask> => {
    const cacheKey = `${versionId}:${hash}`
    let byTask = versions.get(cacheKey)
    if (!byTask) {
      const [row] = await ex.query<{data: string | null; data_compressed: Buffer | null}>(serializedDag([versionId]))
      byTask = tasksOf(row ? storedDagJson(row.data, row.data_compressed) : undefined)
      if (versions.size >= cachedVersions) versions.delete(versions.keys().next().value!)
      versions.set(cacheKey, byTask)
    }

    return byTask.get(taskId) ?? {outlets: [], mappedDependants: []}
  }
}

/**
 * Each declared outlet (not an alias) to its asset, preferring an active one (asset_active keeps
 * names and uris unique among active assets, so an active match is the one Airflow finds). One
 * join per kind, so each can use an index on asset instead of an OR over all of them. The three
 * arrays are the outlets' kinds, names and uris, as outletArrays builds them; a row per outlet,
 * `n` its place.
 */
function resolveOutletsText(kinds: string, names: string, uris: string): string {
  return `with d as (
       select * from unnest(${kinds}::text[], ${names}::text[], ${uris}::text[]) with ordinality as d(kind, name, uri, n)
     ), matched as (
       select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'asset' and a.name = d.name and a.uri = d.uri
       union all
       select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'name_ref' and a.name = d.name
       union all
       select d.n, a.id, a.name, a.uri from d join asset a on d.kind = 'uri_ref' and a.uri = d.uri
     ), best as (
       select distinct on (m.n) m.n, m.id, m.name, m.uri, aa.name is not null as active
         from matched m
         left join asset_active aa on aa.name = m.name and aa.uri = m.uri
        order by m.n, aa.name is null, m.id
     )
     select d.n, b.id, coalesce(b.name, d.name) as name, coalesce(b.uri, d.uri) as uri, coalesce(b.active, false) as active
       from d left join best b on b.n = d.n
      order by d.n`
}

/** The declared asset outlets (aliases left out) as resolveOutletsText's three arrays. */
function outletArrays(assets: readonly AssetOutlet[]): [string[], string[], string[]] {
  return [
    assets.map((o) => o.kind),
    assets.map((o) => ('name' in o ? o.name : '')),
    assets.map((o) => ('uri' in o ? o.uri : '')),
  ]
}

/** Resolved rows, in declared order, as the outlets the registration emits for. */
function outletAssets(
  assets: readonly AssetOutlet[],
  resolved: {
    ids: ReadonlyArray<number | null>
    names: readonly string[]
    uris: readonly string[]
    active: readonly boolean[]
  },
): OutletAsset[] {
  return assets.map((o, i): OutletAsset => ({
    kind: o.kind,
    assetId: resolved.ids[i] ?? null,
    name: resolved.names[i]!,
    uri: resolved.uris[i]!,
    active: resolved.active[i]!,
  }))
}

function outletResolver() {
  const resolve = prepared('resolve_outlets', resolveOutletsText('$1', '$2', '$3'))
  return async (ex: Executor, assets: readonly AssetOutlet[]): Promise<OutletAsset[]> => {
    if (assets.length === 0) return []
    const resolved = await ex.query<{n: string; id: number | null; name: string; uri: string; active: boolean}>(
      resolve(outletArrays(assets)),
    )
    return outletAssets(assets, {
      ids: resolved.map((r) => r.id),
      names: resolved.map((r) => r.name),
      uris: resolved.map((r) => r.uri),
      active: resolved.map((r) => r.active),
    })
  }
}

/**
 * Airflow 3 gives every try a new task_instance id (`TaskInstance.prepare_db_for_next_try`,
 * airflow-core/src/airflow/models/taskinstance.py, Airflow 3.0 and later: `TaskInstanceHistory.record_ti`, then
 * `self.id = uuid7()`): an id named by an operator, or selected a moment ago, may now be an
 * earlier try's, archived in task_instance_history with its key.
 */
function readArchivedTaskInstanceKey() {
  const read = prepared(
    'archived_ti_key',
    'select dag_id, run_id, task_id, map_index from task_instance_history where task_instance_id = $1::uuid order by try_number desc limit 1',
  )
  return async (ex: Executor, tiId: string): Promise<TaskInstanceKey | undefined> => {
    const [row] = await ex.query<TaskInstanceKeyRow>(read([tiId]))
    return row ? taskInstanceKeyOf(row) : undefined
  }
}

/**
 * Protocol step 3: lock the task_instance row and read its state under the lock.
 *
 * The WHERE clause names the row by id only. Filtering on state here ("… and state = 'running'")
 * would turn a row that changed state into a missing row, and the caller could no longer tell
 * `conflict` from `not_found`.
 */
function lockTaskInstance() {
  const lock = prepared(
    'lock_ti',
    'select state, try_number, xmin::text as xmin from task_instance where id = $1 for update',
  )
  return async (ex: Executor, tiId: string): Promise<LockedTaskInstance | undefined> => {
    const [row] = await ex.query<{state: StoredState; try_number: number | null; xmin: string}>(lock([tiId]))
    return row ? {state: row.state, tryNumber: row.try_number, xmin: row.xmin} : undefined
  }
}

/**
 * Who holds a task_instance row lock, best effort, for a lock-timeout message: the row's xmax is
 * the locking transaction's id while it runs (a plain FOR UPDATE or UPDATE; a shared multixact
 * lock is not resolved), and pg_stat_activity.backend_xid names the session that has it.
 */
function readRowHolder() {
  const holder = prepared(
    'ti_row_holder',
    `select a.pid, a.application_name, a.xact_start, a.state, a.usename::text as usename
       from task_instance t join pg_stat_activity a on a.backend_xid::text = t.xmax::text
      where t.id = $1 and t.xmax::text <> '0'`,
  )
  return async (ex: Executor, tiId: string): Promise<RowHolder | undefined> => {
    const [row] = await ex.query<{
      pid: number
      application_name: string
      xact_start: Date | null
      state: string | null
      usename: string
    }>(holder([tiId]))
    return row
      ? {
          pid: row.pid,
          applicationName: row.application_name,
          since: row.xact_start,
          state: row.state,
          user: row.usename,
        }
      : undefined
  }
}

/**
 * Protocol step 4 for `complete`, the only statement run under the row lock before COMMIT. It
 * mirrors the success branch of Airflow's `ti_update_state`
 * (airflow-core/src/airflow/api_fastapi/execution_api/routes/task_instances.py, Airflow 3.0): state, end_date
 * (given, or the clock now), duration from start_date computed in SQL (`duration_expression_update`),
 * updated_at. next_method and next_kwargs are cleared as the fix for apache/airflow #56704 clears
 * them on every terminal state (`_create_ti_state_update_query_and_update_state`); 3.0's success
 * branch left them, which only a deferred task's resume reads. A task instance that never started gets start_date =
 * end_date, and one that has already ended (failed, up_for_retry, …: the UI's mark-success path,
 * not the worker's) keeps its end_date unless --end-date gives one, as `TaskInstance.set_state` does
 * (`self.end_date = self.end_date or current_time`, airflow/models/taskinstance.py, 3.0.6–3.3.2;
 * the judge lane holds `complete --continue-run` to `patch_task_instance` on each).
 */
function markTaskInstanceSuccess() {
  const update = prepared(
    'mark_ti_success',
    `update task_instance ti
        set state = 'success', end_date = stamp.end_date,
            start_date = coalesce(ti.start_date, stamp.end_date),
            -- Never negative: an end before the start is refused unless forced, and then recorded as 0.
            duration = greatest(0, extract(epoch from (stamp.end_date - coalesce(ti.start_date, stamp.end_date)))),
            next_method = null, next_kwargs = null, updated_at = clock_timestamp()
       from (select coalesce($1::timestamptz, ended.end_date, clock_timestamp()) as end_date
               from task_instance ended where ended.id = $2::uuid) as stamp
      where ti.id = $2::uuid`,
  )
  return async (ex: Executor, tiId: string, endDate: Date | null): Promise<void> => {
    await ex.query(update([endDate, tiId]))
  }
}

/**
 * A success clears the task's state store when `[state_store] clear_on_success` is on
 * (apache/airflow #66586, `_clear_task_state_store_on_success` beside `ti_update_state` and the REST
 * mark-success: `backend.clear(scope)` for the task instance's dag run, task and map index), from
 * `task_state_store` (migration fde9ed84d07b, 3.3.0: unique on dag_run_id, task_id, map_index, key).
 */
function clearTaskState(capabilities: Pick<Capabilities, 'taskStateTable'>) {
  const table = capabilities.taskStateTable
  const clear = table
    ? prepared(
        `clear_${table}`,
        `delete from ${table} where dag_run_id = $1::int and task_id = $2 and map_index = $3::int returning 1`,
      )
    : undefined
  return async (ex: Executor, ti: TaskInstanceContext): Promise<number> => {
    if (!clear) return 0
    return (await ex.query(clear([ti.dagRunId, ti.taskId, ti.mapIndex]))).length
  }
}

/** The task-instance family for one capability set. */
export function taskInstanceStore(
  capabilities: Pick<Capabilities, 'eventPartitionKey' | 'taskStateTable'>,
): TaskInstanceStore {
  return {
    readTaskInstance: readTaskInstance(capabilities),
    readArchivedTaskInstanceKey: readArchivedTaskInstanceKey(),
    lockTaskInstance: lockTaskInstance(),
    readRowHolder: readRowHolder(),
    markTaskInstanceSuccess: markTaskInstanceSuccess(),
    clearTaskState: clearTaskState(capabilities),
  }
}
