import type {Knex} from 'knex'

import type {TaskInstanceRef} from '../airflow/taskInstance.js'

/**
 * Which task instances a command works on, from the selection flags of DESIGN §3. Filters select
 * task instances whatever their state: the protocol reports each one's outcome (completed,
 * already_success, conflict), so an operator sees what a run really holds.
 */
export interface SelectionFilter {
  dagId?: string | undefined
  runIds: string[]
  taskIds: string[]
  mapIndex?: number | undefined
  /** On the dag run's run_after (its logical date for scheduled runs; set for every run). */
  since?: Date | undefined
  until?: Date | undefined
  limit?: number | undefined
  shard?: {index: number; count: number} | undefined
  /** What --since/--until compare: the run's run_after (complete) or the TI's end_date (replay-events). */
  timeColumn?: 'run_after' | 'end_date'
  /** Only task instances in these states (replay-events: success). */
  states?: string[]
  /** Only task instances with an active declared outlet lacking an event since their start_date. */
  missingEventsOnly?: boolean
  /** Keyset start: only ids after this one (a resumed --checkpoint). */
  afterId?: string | undefined
}

export const pageSize = 1000

function filtered(db: Knex, filter: SelectionFilter): Knex.QueryBuilder {
  const query = db('task_instance as ti')
  if (filter.timeColumn === 'end_date') {
    if (filter.since) query.where('ti.end_date', '>=', filter.since)
    if (filter.until) query.where('ti.end_date', '<', filter.until)
  } else if (filter.since || filter.until) {
    query.join('dag_run as dr', (join) => join.on('dr.dag_id', 'ti.dag_id').andOn('dr.run_id', 'ti.run_id'))
    if (filter.since) query.where('dr.run_after', '>=', filter.since)
    if (filter.until) query.where('dr.run_after', '<', filter.until)
  }

  if (filter.dagId) query.where('ti.dag_id', filter.dagId)
  if (filter.runIds.length > 0) query.whereIn('ti.run_id', filter.runIds)
  if (filter.taskIds.length > 0) query.whereIn('ti.task_id', filter.taskIds)
  if (filter.mapIndex !== undefined) query.where('ti.map_index', filter.mapIndex)
  if (filter.states) query.whereIn('ti.state', filter.states)
  if (filter.missingEventsOnly) {
    // Anti-join: an active declared outlet with no event attributed to this TI since it started.
    query.whereExists(function () {
      this.select(db.raw('1'))
        .from('task_outlet_asset_reference as r')
        .join('asset as a', 'a.id', 'r.asset_id')
        .join('asset_active as aa', (join) => join.on('aa.name', 'a.name').andOn('aa.uri', 'a.uri'))
        .whereRaw('r.dag_id = ti.dag_id and r.task_id = ti.task_id')
        .whereNotExists(function () {
          this.select(db.raw('1'))
            .from('asset_event as e')
            .whereRaw(`e.asset_id = a.id and e.source_dag_id = ti.dag_id and e.source_run_id = ti.run_id and e.source_task_id = ti.task_id
                       and e.source_map_index = ti.map_index and e."timestamp" >= coalesce(ti.start_date, '-infinity')`)
        })
    })
  }

  // A stable hash of the id: N hosts with --shard 1/N … N/N split one backfill without overlap.
  if (filter.shard) query.whereRaw('mod(abs(hashtext(ti.id::text)::bigint), ?) = ?', [filter.shard.count, filter.shard.index - 1])
  return query
}

/**
 * Streams the selection in keyset pages (WHERE id > last ORDER BY id LIMIT 1000): memory stays
 * flat and each page is an index range scan, however many task instances match.
 */
export async function* selectTaskInstances(db: Knex, filter: SelectionFilter): AsyncGenerator<TaskInstanceRef> {
  let last = filter.afterId
  let remaining = filter.limit ?? Number.POSITIVE_INFINITY
  while (remaining > 0) {
    const query = filtered(db, filter).select('ti.id').orderBy('ti.id').limit(Math.min(pageSize, remaining))
    if (last) query.where('ti.id', '>', last)
    const rows = (await query) as Array<{id: string}>
    for (const row of rows) yield {tiId: row.id}
    if (rows.length === 0) return
    remaining -= rows.length
    last = rows.at(-1)!.id
    if (rows.length < pageSize) return
  }
}

export async function countSelection(db: Knex, filter: SelectionFilter): Promise<number> {
  const row = (await filtered(db, filter).count({n: '*'}).first()) as {n: string | number} | undefined
  const n = Number(row?.n ?? 0)
  return filter.limit === undefined ? n : Math.min(n, filter.limit)
}
