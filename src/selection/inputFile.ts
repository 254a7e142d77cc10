import {taskInstanceIdPattern} from '../airflow/taskInstance.js'
import {usageError} from '../errors.js'
import {checkedLines, checkReadable, parseJsonLine} from './ndjsonInput.js'
import {describeRef} from '../airflow/taskInstance.js'
import {plainSelectorNames} from './selectorNames.js'
import type {OutletEventInput, WorkItem} from './workItem.js'

/**
 * An input file of task instances (PATH, or - for stdin): NDJSON, one task instance per line, `{"ti_id": …}` or
 * `{"dag_id", "run_id", "task_id", "map_index"?}`, optionally with
 * `"outlet_events": [{"asset": "<name or uri>" or {"name", "uri", "extra"?}, "extra": {…}, "alias"?: "<alias name>",
 * "partition_key"?: "<key>" or "partition_keys"?: ["<key>", …]}]`.
 * Blank lines are skipped. Every line is checked before anything is written, so one bad line
 * means exit 2 and an untouched database.
 */
export function parseInputLine(text: string, line: number, source: string): WorkItem {
  const where = `${source} line ${line}`
  const value = parseJsonLine(text, where, [
    'Each line must be one JSON object: {"ti_id": "…"} or {"dag_id": …, "run_id": …, "task_id": …, "map_index": -1}.',
  ])

  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw usageError(`${where} must be a JSON object.`)
  const record = value as Record<string, unknown>
  const unknown = Object.keys(record).filter((key) => !inputKeys.includes(key))
  if (unknown.length > 0) {
    throw usageError(
      `${where}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}.`,
      [`A line has "ti_id", or "dag_id", "run_id", "task_id" and "map_index"; and optionally "outlet_events".`],
    )
  }
  if (
    record.ti_id !== undefined &&
    ['dag_id', 'run_id', 'task_id', 'map_index'].some((key) => record[key] !== undefined)
  ) {
    throw usageError(`${where}: give either "ti_id" or the key ("dag_id", "run_id", "task_id", "map_index"), not both.`)
  }
  const outletEvents = parseOutletEvents(record.outlet_events, where)

  if (record.ti_id !== undefined) {
    if (typeof record.ti_id !== 'string' || !taskInstanceIdPattern.test(record.ti_id))
      throw usageError(`${where}: ti_id must be a task instance UUID.`)
    return {ref: {tiId: record.ti_id.toLowerCase()}, outletEvents}
  }

  for (const field of ['dag_id', 'run_id', 'task_id'] as const) {
    if (typeof record[field] !== 'string' || record[field] === '')
      throw usageError(
        `${where}: needs "ti_id", or "dag_id", "run_id" and "task_id" (strings); "${field}" is missing or not a string.`,
      )
  }

  const mapIndex = record.map_index ?? -1
  if (!Number.isInteger(mapIndex) || (mapIndex as number) < -1)
    throw usageError(`${where}: map_index must be an integer ≥ -1.`)
  return {
    ref: {
      key: {
        dagId: record.dag_id as string,
        runId: record.run_id as string,
        taskId: record.task_id as string,
        mapIndex: mapIndex as number,
      },
    },
    outletEvents,
  }
}

/** An outlet_events entry's asset: a non-empty string, or an object with a non-empty name and uri (and its own extra). */
function outletAsset(value: unknown, at: string): OutletEventInput['asset'] | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const {name, uri, extra, ...rest} = value as Record<string, unknown>
  refuseUnknownKeys(rest, `${at}.asset`, '"name", "uri" and, for an alias emission, "extra" (the asset\'s own)')
  if (typeof name !== 'string' || name === '' || typeof uri !== 'string' || uri === '') return undefined
  if (extra !== undefined && !isJsonObject(extra)) throw usageError(`${at}.asset.extra must be a JSON object.`)
  return {name, uri, ...(extra ? {extra: extra as Record<string, unknown>} : {})}
}

const isJsonObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value)

/** asset_event.partition_key is varchar(250) (Airflow's StringID); Airflow refuses an empty key. */
const maxPartitionKeyLength = 250

function partitionKeysOf(entry: Record<string, unknown>, at: string): string[] | undefined {
  const {partition_key: one, partition_keys: many} = entry
  if (one !== undefined && many !== undefined)
    throw usageError(`${at}: give "partition_key" or "partition_keys", not both.`)
  const keys = many ?? (one === undefined || one === null ? undefined : [one])
  if (keys === undefined) return undefined
  if (!Array.isArray(keys) || keys.length === 0)
    throw usageError(`${at}.partition_keys must be a non-empty array of partition keys.`)
  for (const key of keys) {
    if (typeof key !== 'string' || key === '' || key.length > maxPartitionKeyLength)
      throw usageError(`${at}: a partition key is a non-empty string of at most ${maxPartitionKeyLength} characters.`)
  }
  // Airflow's accessor keeps a set: a key added twice is one event.
  return [...new Set(keys as string[])]
}

function refuseUnknownKeys(rest: Record<string, unknown>, at: string, allowed: string): void {
  const unknown = Object.keys(rest)
  if (unknown.length === 0) return
  throw usageError(
    `${at}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}.`,
    [`Its keys are ${allowed}.`],
  )
}

function parseOutletEvents(value: unknown, where: string): OutletEventInput[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw usageError(`${where}: outlet_events must be an array.`)
  return value.map((entry: unknown, index) => {
    const at = `${where}: outlet_events[${index}]`
    if (!isJsonObject(entry)) throw usageError(`${at} must be an object with "asset".`)
    const {
      asset: given,
      extra,
      alias,
      partition_key: _one,
      partition_keys: _many,
      ...rest
    } = entry as Record<string, unknown>
    refuseUnknownKeys(rest, at, '"asset", "extra", "alias", "partition_key" and "partition_keys"')
    const asset = outletAsset(given, at)
    if (!asset) throw usageError(`${at}.asset must be the asset's name or uri, or {"name": …, "uri": …}.`)
    if (extra !== undefined && !isJsonObject(extra)) throw usageError(`${at}.extra must be a JSON object.`)
    if (alias !== undefined && (typeof alias !== 'string' || alias === ''))
      throw usageError(`${at}.alias must be the alias name.`)
    if (typeof asset !== 'string' && asset.extra && !alias)
      throw usageError(
        `${at}.asset.extra is the extra of an asset an alias emission creates; give "alias" too, or drop it.`,
      )
    const partitionKeys = partitionKeysOf(entry as Record<string, unknown>, at)
    return {
      asset,
      ...(extra ? {extra: extra as Record<string, unknown>} : {}),
      ...(alias ? {alias} : {}),
      ...(partitionKeys ? {partitionKeys} : {}),
    }
  })
}

const inputKeys = ['ti_id', 'dag_id', 'run_id', 'task_id', 'map_index', 'outlet_events']

export interface InputFile {
  count: number
  items(): AsyncGenerator<WorkItem>
  /** Each asset the outlet_events name, once, with the first line naming it: checked before anything is written. */
  namedAssets: NamedAsset[]
}

/** An asset an outlet_events entry names, and the first line that names it so. */
export interface NamedAsset {
  asset: OutletEventInput['asset']
  /** Named as an alias's target (which may be created), rather than as an outlet of the task. */
  throughAlias: boolean
  where: string
}

/**
 * Validates the whole file first, then streams it again for the work: a file's items never sit in
 * memory together. Standard input cannot be read twice, so its items are kept in memory.
 */
export async function openInputFile(
  path: string,
  warn: (message: string) => void = () => undefined,
  /** How the caller names the file, for messages (the command line: --from-file). */
  name = plainSelectorNames.fromFile,
): Promise<InputFile> {
  const source = path === '-' ? 'stdin' : path
  await checkReadable(path, name)

  // The same task instance twice is one item: the first line wins, the repeat is said once.
  const firstLine = new Map<string, number>()
  const kept: WorkItem[] = []
  let count = 0
  const named = new Map<string, NamedAsset>()
  for await (const {text, line} of checkedLines(path, name)) {
    const item = parseInputLine(text, line, source)
    for (const entry of item.outletEvents) {
      const asset = typeof entry.asset === 'string' ? entry.asset : {name: entry.asset.name, uri: entry.asset.uri}
      const key = JSON.stringify([asset, Boolean(entry.alias)])
      if (!named.has(key)) named.set(key, {asset, throughAlias: Boolean(entry.alias), where: `${source} line ${line}`})
    }
    const key = describeRef(item.ref)
    const first = firstLine.get(key)
    if (first !== undefined) {
      warn(`${source} line ${line} names the same task instance as line ${first}: done once`)
      continue
    }

    firstLine.set(key, line)
    count++
    if (path === '-') kept.push(item)
  }

  return {
    count,
    namedAssets: [...named.values()],
    async *items() {
      if (path === '-') {
        yield* kept
        return
      }

      const seen = new Set<string>()
      for await (const {text, line} of checkedLines(path, name)) {
        const item = parseInputLine(text, line, source)
        const key = describeRef(item.ref)
        if (seen.has(key)) continue
        seen.add(key)
        yield item
      }
    },
  }
}
