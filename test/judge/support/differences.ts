import {compareVersions} from '../../../src/airflow/revisions.js'
import type {Snapshot} from '../../conformance/snapshot.js'
import type {Release} from './airflow.js'

/**
 * Where airlock departs from the release on purpose, each with its reason. Both sides of a
 * comparison pass through here; nothing else may differ. docs/testing.md lists the same.
 */
export function deliberate(release: Release, side: Snapshot): Snapshot {
  const airflowLogsSuccess = compareVersions(release.version, '3.2.0') >= 0
  return {
    ...side,
    logs: side.logs
      // 1. The audit row. From 3.2.0 the execution API's success writes a `log` row (event
      //    'success', owner the DAG's owners, extra {"host_name": the worker}:
      //    api_fastapi/execution_api/routes/task_instances.py, ti_update_state). airlock writes the
      //    same row on every release, with the operator as owner and its own host and an `airlock`
      //    object in extra, so the audit log says who marked the task and `undo` can find it:
      //    before 3.2.0 that row is airlock's alone, and from 3.2.0 its owner and extra differ.
      .filter((row) => airflowLogsSuccess || !isAirlocks(row))
      .map((row) => (row.event === 'success' ? {...row, owner: '(who)', extra: '(where)'} : row))
      // 3. The order of the log rows of one success, and of the DAGs a `missing partition key`
      //    row lists: Airflow writes that row while it registers the event, before its success
      //    row, and lists the DAGs in the order of a Python set (assets/manager.py,
      //    AssetManager._queue_partitioned_dags), which no run repeats; airlock writes its audit
      //    row first and lists them sorted. Compared: the rows, not their order.
      .map((row) => ({...row, extra: sortListedDags(row.extra)}))
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)),
    // 2. An asset a task declares twice (directly and by Asset.ref) gets two events on both sides.
    //    Airflow registers them one by one and the first stamps the consumer's queue row, so the
    //    second event is younger than the row and the run the scheduler creates takes only the
    //    first (the second waits for the consumer's next run). airlock writes the queue rows after
    //    every event, so that run takes both. Compared here: which events a run takes, not how
    //    many copies of one.
    runs: side.runs.map((run) =>
      run.replace(
        /consumes=\[(.*)\]$/,
        (_all, events: string) => `consumes=[${[...new Set(events.split('; '))].join('; ')}]`,
      ),
    ),
  }
}

const isAirlocks = (row: Record<string, unknown>) => /"airlock":\{/.test(String(row.extra))

const sortListedDags = (extra: unknown) =>
  typeof extra === 'string'
    ? extra.replace(
        /listening_dags=\[([^\]]*)\]/,
        (_all, dags: string) => `listening_dags=[${dags.split(', ').sort().join(', ')}]`,
      )
    : extra

/**
 * 4. A success with a declared outlet whose asset is not active, on 3.0. 3.0's
 *    `register_asset_changes_in_db` (airflow/models/taskinstance.py, 3.0.6) registers the active
 *    outlets' events, then raises `AirflowInactiveAssetInInletOrOutletException`, and
 *    `ti_update_state` (api_fastapi/execution_api/routes/task_instances.py) catches it and sets
 *    the task instance FAILED, its events kept: a half-done success. From 3.1 the success skips
 *    the inactive asset and the task instance is SUCCESS, which airlock does on every release (the
 *    operator asked for a success; `--strict-outlets` refuses such a task instance instead, writing
 *    nothing). Compared on 3.0: every row but the task instance's state.
 */
export function inactiveOutletOn30(release: Release, side: Snapshot): Snapshot {
  if (compareVersions(release.version, '3.1.0') >= 0 || side.taskInstance.state !== 'failed') return side
  return {...side, taskInstance: {...side.taskInstance, state: 'success'}}
}
