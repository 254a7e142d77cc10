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

/**
 * An export line as the store reads it: the line's JSON in two halves around `extra` (`head` is
 * `{"id":…,"asset":{…}}`, `tail` is `{"source_dag_id":…,"consumed_by":[…]}`), and extra's text
 * as Airflow stored it.
 */
export interface EventLineParts {
  id: number
  head: string
  extra: string
  tail: string
}

/**
 * The NDJSON line of an event (without its newline): exactly JSON.stringify of its EventLine, the
 * key order above. Only `extra` is re-serialised: Airflow stores it as Python's json.dumps wrote it
 * (`{"a": 1}`, spaces and its own escapes and number forms), and export lines have always carried
 * it as JSON.stringify writes the parsed value.
 */
export function eventLineText(parts: EventLineParts): string {
  return `${parts.head.slice(0, -1)},"extra":${compactExtra(parts.extra)},${parts.tail.slice(1)}`
}

/**
 * Extras repeat (`{}` most of all), so each distinct text is serialised once, in a table bounded
 * so that an export of millions of distinct extras keeps flat memory.
 */
const compactExtras = new Map<string, string>()
const compactExtrasKept = 4096

function compactExtra(text: string): string {
  let compact = compactExtras.get(text)
  if (compact === undefined) {
    compact = JSON.stringify(JSON.parse(text))
    if (compactExtras.size >= compactExtrasKept) compactExtras.clear()
    compactExtras.set(text, compact)
  }
  return compact
}
