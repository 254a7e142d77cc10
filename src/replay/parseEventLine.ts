import {usageError} from '../errors.js'
import {parseJsonLine} from '../selection/ndjsonInput.js'
import type {EventLine} from '../airflow/eventLine.js'

export type ParsedEventLine = Pick<EventLine, 'asset' | 'extra' | 'partition_key' | 'aliases'> & {
  source: {dagId: string; runId: string; taskId: string; mapIndex: number} | null
  timestamp: Date
}

/** The keys of an export-events line (`id`, `queued_for` and `consumed_by` are read and ignored). */
const eventLineKeys: readonly string[] = [
  'id',
  'asset',
  'extra',
  'source_dag_id',
  'source_run_id',
  'source_task_id',
  'source_map_index',
  'partition_key',
  'timestamp',
  'aliases',
  'queued_for',
  'consumed_by',
] satisfies ReadonlyArray<keyof EventLine>

/** A line of export-events' NDJSON (or a hand-written one of the same shape), checked field by field. */
export function parseEventLine(text: string, line: number, source: string): ParsedEventLine {
  const where = `${source} line ${line}`
  const value = parseJsonLine(text, where)

  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw usageError(`${where} must be a JSON object (one event as written by airlock export-events).`)
  const record = value as Record<string, unknown>
  // A misspelt key ("extras" for "extra") would replay the event with a default: refused instead.
  const unknown = Object.keys(record).filter((key) => !eventLineKeys.includes(key))
  if (unknown.length > 0) {
    throw usageError(
      `${where}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}; nothing was replayed.`,
      [`A line has the keys export-events writes: ${eventLineKeys.join(', ')}.`],
    )
  }
  const asset = record.asset as Record<string, unknown> | undefined
  if (!asset || typeof asset.name !== 'string' || typeof asset.uri !== 'string')
    throw usageError(`${where}: "asset" must be {"name": …, "uri": …}.`)
  const extra: unknown = record.extra ?? {}
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra))
    throw usageError(`${where}: "extra" must be a JSON object.`)
  const timestamp = new Date(String(record.timestamp))
  if (typeof record.timestamp !== 'string' || Number.isNaN(timestamp.getTime()))
    throw usageError(`${where}: "timestamp" must be an ISO-8601 time.`)
  const {source_dag_id: dagId, source_run_id: runId, source_task_id: taskId} = record
  const anySource = dagId != null || runId != null || taskId != null
  if (anySource && (typeof dagId !== 'string' || typeof runId !== 'string' || typeof taskId !== 'string')) {
    throw usageError(
      `${where}: source_dag_id, source_run_id and source_task_id must all be strings, or all null (an event without a source task).`,
    )
  }

  const mapIndex = record.source_map_index ?? -1
  if (!Number.isInteger(mapIndex)) throw usageError(`${where}: "source_map_index" must be an integer.`)
  const partitionKey = record.partition_key ?? null
  if (partitionKey !== null && typeof partitionKey !== 'string')
    throw usageError(`${where}: "partition_key" must be a string or null.`)
  const aliases = record.aliases ?? []
  if (!Array.isArray(aliases) || aliases.some((a) => typeof a !== 'string'))
    throw usageError(`${where}: "aliases" must be an array of alias names.`)
  return {
    asset: {name: asset.name, uri: asset.uri},
    extra: extra as Record<string, unknown>,
    source: anySource
      ? {dagId: dagId as string, runId: runId as string, taskId: taskId as string, mapIndex: mapIndex as number}
      : null,
    partition_key: partitionKey,
    timestamp,
    aliases: aliases as string[],
  }
}
