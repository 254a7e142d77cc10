/**
 * One asset event as export-events writes it and replay-events --from-file reads it (NDJSON, one
 * object per line). Hand-written lines of the same shape are accepted; `id`, `queued_for` and
 * `consumed_by` are informative and ignored on replay.
 */
export interface EventLine {
  id: number | null
  asset: {name: string; uri: string}
  extra: Record<string, unknown>
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  partition_key: string | null
  /** ISO-8601 UTC. */
  timestamp: string
  /** Aliases the event was emitted through. */
  aliases: string[]
  /** DAGs with a queue row for the event (its asset before 3.4, the event itself from 3.4). */
  queued_for: string[]
  /** Dag runs that consumed the event (dagrun_asset_event). */
  consumed_by: Array<{dag_id: string; run_id: string}>
}
