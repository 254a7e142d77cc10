import type {Capabilities} from '../airflow/schema.js'
import type {OutletAsset, StoredState, TaskInstanceContext, TaskInstanceRef} from '../airflow/taskInstance.js'
import {prepared, type DriverConnection} from './driverConnection.js'
import {truncateUtf8, type TransactionLocals} from './transactionLocals.js'

interface TaskInstanceRow {
  id: string
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
  state: string | null
  try_number: number | null
  start_date: Date | null
  end_date: Date | null
  dag_run_id: number
  logical_date: Date | null
  partition_key: string | null
  owners: string | null
  outlets: Array<{id: number; name: string; uri: string; active: boolean}> | null
}

export interface ReadOptions {
  capabilities: Pick<Capabilities, 'eventPartitionKey'>
  /** Also read the task's declared outlets with whether each asset is active. */
  withOutlets: boolean
  /**
   * SET LOCAL lock_timeout, statement_timeout and application_name in the same round trip (a
   * materialised CTE of set_config(…, true)); they govern the statements that follow.
   */
  locals?: TransactionLocals
}

/**
 * Protocol step 1: the task instance with its run, DAG and outlets, WITHOUT a lock. Decisions
 * made on this read are only early exits; the commit decision is taken on the locked read.
 */
export async function readTaskInstance(conn: DriverConnection, ref: TaskInstanceRef, options: ReadOptions): Promise<TaskInstanceContext | undefined> {
  const partitionKey = options.capabilities.eventPartitionKey ? 'dr.partition_key' : 'null::varchar'
  const outlets = options.withOutlets
    ? `(select json_agg(json_build_object('id', a.id, 'name', a.name, 'uri', a.uri, 'active', aa.name is not null) order by a.id)
          from task_outlet_asset_reference r
          join asset a on a.id = r.asset_id
          left join asset_active aa on aa.name = a.name and aa.uri = a.uri
         where r.dag_id = ti.dag_id and r.task_id = ti.task_id)`
    : 'null::json'
  const locals = options.locals
  const with_ = locals
    ? `with locals as materialized (
         select set_config('lock_timeout', ?, true), set_config('statement_timeout', ?, true), set_config('application_name', ?, true)
       ) `
    : ''
  const where = 'tiId' in ref ? 'ti.id = ?::uuid' : 'ti.dag_id = ? and ti.run_id = ? and ti.task_id = ? and ti.map_index = ?'
  const bindings: unknown[] = locals ? [`${locals.lockTimeoutMs}ms`, `${locals.statementTimeoutMs}ms`, truncateUtf8(locals.applicationName, 63)] : []
  bindings.push(...('tiId' in ref ? [ref.tiId] : [ref.key.dagId, ref.key.runId, ref.key.taskId, ref.key.mapIndex]))
  let n = 0
  const rows = await prepared<TaskInstanceRow>(
    conn,
    `${with_}select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
            dr.id as dag_run_id, dr.logical_date, ${partitionKey} as partition_key, d.owners, ${outlets} as outlets
       from task_instance ti
       join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
       left join dag d on d.dag_id = ti.dag_id
       ${locals ? 'cross join locals' : ''}
      where ${where}`.replace(/\?(?!\?)/g, () => `$${++n}`),
    bindings,
  )
  const row = rows[0]
  if (!row) return undefined
  return {
    id: row.id,
    dagId: row.dag_id,
    runId: row.run_id,
    taskId: row.task_id,
    mapIndex: row.map_index,
    state: row.state as StoredState,
    tryNumber: row.try_number,
    startDate: row.start_date,
    endDate: row.end_date,
    dagRunId: row.dag_run_id,
    logicalDate: row.logical_date,
    partitionKey: row.partition_key,
    owners: row.owners,
    outlets: row.outlets?.map((o): OutletAsset => ({assetId: o.id, name: o.name, uri: o.uri, active: o.active})) ?? [],
  }
}
