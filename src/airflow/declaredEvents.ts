import {tasksOf, type DeclaredOutlet, type VersionDag} from './serializedDag.js'

/**
 * How many events of one content a try's declared outlets call for on one asset, or why the
 * serialized DAG cannot tell. What `audit-events` allows a group of identical events of one try
 * before it calls the rest duplicates, and what `--fix` rechecks under its locks.
 */
export type DeclaredAllowance = {known: true; count: number} | {known: false; reason: string}

/**
 * The events `TaskInstance.register_asset_changes_in_db` (airflow-core/src/airflow/models/
 * taskinstance.py) writes for `asset` from a task's declared outlets: one per declared asset key
 * (a set: an asset declared twice is one key), then, in a loop of its own, one per distinct
 * `Asset.ref(name=…)` resolving to it, then one per distinct `Asset.ref(uri=…)`. So an asset
 * declared directly and by both refs gets three events of the same content. The copies read (3.0-
 * and 3.1-era, commit 005f2678; a 3.2-era one with per-run partition keys) all have the three
 * loops. From 3.3 (apache/airflow #66782) each loop writes one event per partition key the task
 * added (a set per asset, #65447), so per key the count is the same.
 *
 * A ref resolves among active assets by name or uri, both unique among them
 * (`idx_asset_active_name_unique`, `idx_asset_active_uri_unique`, 3.0.0's schema): when this try
 * wrote an event of `asset`, the asset was active, and every ref naming its name or uri resolved
 * to it. So no other asset row can change the count: ref resolution is not ambiguous here.
 */
export function declaredEventCount(outlets: readonly DeclaredOutlet[], asset: {name: string; uri: string}): number {
  const direct = outlets.some((o) => o.kind === 'asset' && o.name === asset.name && o.uri === asset.uri)
  const byName = outlets.some((o) => o.kind === 'name_ref' && o.name === asset.name)
  const byUri = outlets.some((o) => o.kind === 'uri_ref' && o.uri === asset.uri)
  return Number(direct) + Number(byName) + Number(byUri)
}

/**
 * The allowance of a try from the serialized DAG of its DAG version. `versions` are the DAG
 * versions the rows of that try name (task_instance and, when archived, task_instance_history),
 * each with its serialized DAG (undefined: none stored). The database cannot tell when the try
 * names no version or two, when the version has no serialized DAG (airlock's only other source,
 * task_outlet_asset_reference, lists concrete assets, never refs), when the task is not in it, or
 * when it does not declare the asset at all: then the worker ran a DAG file other than the one
 * serialized for that version, and its outlets are not known.
 */
export function declaredAllowance(
  versions: readonly VersionDag[],
  taskId: string,
  asset: {name: string; uri: string},
): DeclaredAllowance {
  if (versions.length === 0) return {known: false, reason: 'the try names no DAG version'}
  if (versions.length > 1)
    return {
      known: false,
      reason: `the try's rows name ${versions.length} DAG versions (${versions.map((v) => v.id).join(', ')})`,
    }
  const [version] = versions
  if (version!.unreadable !== undefined)
    return {
      known: false,
      reason: `the serialized DAG of version ${version!.id} could not be read: ${version!.unreadable}`,
    }
  if (version!.serialized === undefined)
    return {known: false, reason: `no serialized DAG for its DAG version ${version!.id}`}
  const task = tasksOf(version!.serialized).get(taskId)
  if (!task) return {known: false, reason: `task ${taskId} is not in the serialized DAG of version ${version!.id}`}
  const count = declaredEventCount(task.outlets, asset)
  if (count === 0)
    return {
      known: false,
      reason: `the serialized DAG of version ${version!.id} does not declare this asset as an outlet of ${taskId}: the worker ran other code`,
    }
  return {known: true, count}
}
