import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import type {EventLine} from '../export/eventLine.js'

export interface EventPageFilter {
  afterId: number
  limit: number
  since?: Date | undefined
  until?: Date | undefined
  sourceDagId?: string | undefined
  /** Asset names or uris. */
  assets: string[]
}

/**
 * One keyset page of events (id > afterId, ORDER BY id) with everything an export line carries,
 * so an export of millions of events reads in constant memory.
 */
export async function readEventPage(db: Knex, filter: EventPageFilter, capabilities: Pick<Capabilities, 'eventPartitionKey' | 'queueShape'>): Promise<EventLine[]> {
  const queued = capabilities.queueShape === 'per_event' ? 'q.asset_event_id = e.id' : 'q.asset_id = e.asset_id'
  const query = db('asset_event as e')
    .join('asset as a', 'a.id', 'e.asset_id')
    .where('e.id', '>', filter.afterId)
    .orderBy('e.id')
    .limit(filter.limit)
    .select(
      'e.id',
      'a.name as asset_name',
      'a.uri as asset_uri',
      'e.extra',
      'e.source_dag_id',
      'e.source_run_id',
      'e.source_task_id',
      'e.source_map_index',
      db.raw(capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar as partition_key'),
      'e.timestamp',
      db.raw(`coalesce((select array_agg(al.name order by al.name) from asset_alias_asset_event l join asset_alias al on al.id = l.alias_id where l.event_id = e.id), '{}') as aliases`),
      db.raw(`coalesce((select array_agg(distinct q.target_dag_id order by q.target_dag_id) from asset_dag_run_queue q where ${queued}), '{}') as queued_for`),
      db.raw(`coalesce((select json_agg(json_build_object('dag_id', dr.dag_id, 'run_id', dr.run_id) order by dr.id) from dagrun_asset_event c join dag_run dr on dr.id = c.dag_run_id where c.event_id = e.id), '[]') as consumed_by`),
    )
  if (filter.since) query.where('e.timestamp', '>=', filter.since)
  if (filter.until) query.where('e.timestamp', '<', filter.until)
  if (filter.sourceDagId) query.where('e.source_dag_id', filter.sourceDagId)
  if (filter.assets.length > 0) query.where((q) => q.whereIn('a.name', filter.assets).orWhereIn('a.uri', filter.assets))
  const rows = (await query) as Array<Record<string, unknown>>
  return rows.map((row) => ({
    id: row.id as number,
    asset: {name: row.asset_name as string, uri: row.asset_uri as string},
    extra: row.extra as Record<string, unknown>,
    source_dag_id: row.source_dag_id as string | null,
    source_run_id: row.source_run_id as string | null,
    source_task_id: row.source_task_id as string | null,
    source_map_index: row.source_map_index as number | null,
    partition_key: row.partition_key as string | null,
    timestamp: (row.timestamp as Date).toISOString(),
    aliases: row.aliases as string[],
    queued_for: row.queued_for as string[],
    consumed_by: row.consumed_by as EventLine['consumed_by'],
  }))
}
