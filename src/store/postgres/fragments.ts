import type {EventFilter} from '../airflowStore.js'
import type {Params} from './params.js'

/**
 * The conditions of an event filter on `asset_event e` (time window, source DAG, asset names or
 * uris), shared by export, the audit's key pages, its external count and its classification.
 */
export function eventFilterConditions(params: Params, filter: EventFilter): string[] {
  const conditions: string[] = []
  if (filter.since) conditions.push(`e."timestamp" >= ${params.add(filter.since)}::timestamptz`)
  if (filter.until) conditions.push(`e."timestamp" < ${params.add(filter.until)}::timestamptz`)
  if (filter.sourceDagId) conditions.push(`e.source_dag_id = ${params.add(filter.sourceDagId)}`)
  if (filter.assets.length > 0) {
    const names = params.add([...filter.assets])
    conditions.push(`e.asset_id in (select id from asset where name = any(${names}::text[]) or uri = any(${names}::text[]))`)
  }

  return conditions
}

/**
 * "This asset has no event attributed to this task instance since it started": the anti-join
 * behind replay-events' missing mode and the audit's missing_events, in one place. The arguments
 * are SQL expressions (columns or placeholders) for the asset id and the task instance.
 */
export function noEventSinceStart(on: {
  assetId: string
  dagId: string
  runId: string
  taskId: string
  mapIndex: string
  startDate: string
  extra?: string
}): string {
  return `not exists (
    select 1 from asset_event e
     where e.asset_id = ${on.assetId}
       and e.source_dag_id = ${on.dagId} and e.source_run_id = ${on.runId} and e.source_task_id = ${on.taskId}
       and e.source_map_index = ${on.mapIndex}
       and e."timestamp" >= coalesce(${on.startDate}, '-infinity')${on.extra ? `\n       and ${on.extra}` : ''})`
}

export const whereAll = (conditions: readonly string[]) => (conditions.length > 0 ? `where ${conditions.join(' and ')}` : '')
