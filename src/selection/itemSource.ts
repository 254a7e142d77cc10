import {describeRef, type TaskInstanceKey, type TaskInstanceRef} from '../airflow/taskInstance.js'
import {retryingReads} from '../engine/retry.js'
import {AirlockError, usageError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {closeMatches} from '../input/closeMatches.js'
import {describeCounts, plural} from '../output/counts.js'
import {openInputFile, type NamedAsset} from './inputFile.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {
  pagesFrom,
  readFirstScanPage,
  selectTaskInstances,
  type SelectedRef,
  summarizeRows,
  summarizeSelection,
  type SelectionBreakdown,
  type SelectionFilter,
} from './selection.js'
import {plainSelectorNames, type SelectorNames} from './selectorNames.js'
import type {WorkItem} from './workItem.js'
import type {SelectionStore} from '../store/families/selection.js'

export interface SelectionRequest {
  tiIds: string[]
  /** Task instances named by key: the current try of each, whatever its id. */
  tiKeys?: TaskInstanceKey[] | undefined
  fromFile?: string | undefined
  filter: SelectionFilter
  /** A filter without a DAG is meant to reach every DAG. */
  allDags?: boolean | undefined
  /** How the caller's user names each part, for messages (the command line: its flags). */
  names?: SelectorNames | undefined
}

export interface ItemSource {
  count: number
  items: AsyncIterable<WorkItem>
  /** What the operator should know about the input (a task instance named twice). */
  warnings?: string[]
  /** Items named one by one (by id or key, or in a file): a missing one is `not_found`, exit 4. */
  explicit: boolean
  /** A filter selection's runs and states, for the operator to check before it is written. */
  breakdown?: SelectionBreakdown
  /** What the filter matched in states its states filter leaves out (NotSelected). */
  notSelected?: NotSelected
  /** The assets an input file's outlet_events name (see InputFile), for the writer to check first. */
  namedAssets?: NamedAsset[]
}

/**
 * The task instances a filter matched but its states filter (complete's --from-state) left out,
 * by state ("none": no state yet). They are not selected: no item, no outcome, no exit code; the
 * summary counts them, so a backfill over a DAG with history says what it passed over.
 */
export interface NotSelected {
  count: number
  states: Record<string, number>
}

/** Whether any filter flag narrows the selection (as opposed to naming task instances one by one). */
export const hasFilter = (filter: SelectionFilter) =>
  Boolean(
    filter.dagId ||
    filter.runIds.length > 0 ||
    filter.taskIds.length > 0 ||
    filter.mapIndex !== undefined ||
    filter.since ||
    filter.until,
  )

/** Turns the selection flags into a stream of work items and its size (for the confirmation). */
export async function openItemSource(
  airflow: Pick<AirflowDatabase<SelectionStore>, 'db' | 'store'>,
  request: SelectionRequest,
): Promise<ItemSource> {
  const {fromFile, filter} = request
  const n = request.names ?? plainSelectorNames
  const named: TaskInstanceRef[] = [
    ...request.tiIds.map((tiId) => ({tiId})),
    ...(request.tiKeys ?? []).map((key) => ({key})),
  ]
  const ways = [named.length > 0, Boolean(fromFile), hasFilter(filter)].filter(Boolean).length
  if (ways === 0) {
    throw usageError('Nothing selected: name the task instances to work on.', [
      `Use ${n.tiId}, ${n.fromFile}, or filters such as ${n.dagId} with ${n.runId} / ${n.taskId} / ${n.since} / ${n.until}.`,
    ])
  }

  if (ways > 1)
    throw usageError(
      `Use one way of selecting: ${n.tiId}, ${n.fromFile}, or the filter flags (${[n.dagId, n.runId, n.taskId, n.mapIndex, n.since, n.until].join(', ')}).`,
    )
  // A filter without a DAG reaches every DAG of the database: only when asked for in so many words.
  if (hasFilter(filter) && !filter.dagId && !request.allDags) {
    throw usageError(`This selection spans every DAG: it names no ${n.dagId}.`, [
      `Add ${n.dagId}, or ${n.allDags} if every DAG is meant (try ${n.dryRun} first to see what it selects).`,
    ])
  }

  if (filter.shard && (named.length > 0 || fromFile))
    throw usageError(
      `${capitalised(n.shard)} partitions a filter selection; split an explicit list (${n.tiId}, ${n.fromFile}) between hosts yourself.`,
    )

  if (named.length > 0) {
    const unique = [...new Map(named.map((ref) => [describeRef(ref), ref])).values()].slice(
      0,
      filter.limit ?? Number.POSITIVE_INFINITY,
    )
    return {
      count: unique.length,
      explicit: true,
      items: fromArray(unique.map((ref) => ({ref, outletEvents: []}))),
    }
  }

  if (fromFile) {
    const warnings: string[] = []
    const file = await openInputFile(fromFile, (message) => warnings.push(message), n.fromFile)
    // A pipeline's empty file (an audit that found nothing) stays exit 0, but is said, by name.
    if (file.count === 0)
      warnings.push(
        `${fromFile === '-' ? 'standard input' : fromFile} holds no task instance (empty, or blank lines only): nothing to do`,
      )
    const limit = filter.limit ?? Number.POSITIVE_INFINITY
    return {
      count: Math.min(file.count, limit),
      explicit: true,
      items: take(file.items(), limit),
      warnings,
      namedAssets: file.namedAssets,
    }
  }

  const {db, store} = airflow
  // The selection's reads are retried on a lost session: one killed connection during a scan
  // costs a page read again, not the run.
  const reads = retryingReads(db)
  const first = filter.missingEventsOnly ? await readFirstScanPage(store, reads, filter) : undefined
  const {count, breakdown} = first?.whole ? summarizeRows(first.rows) : await summarizeSelection(store, reads, filter)
  const notSelected = filter.states && !filter.missingEventsOnly ? await notSelectedOf(store, reads, filter) : undefined
  await requireNamedSelectors(airflow, filter, count + (notSelected?.count ?? 0))
  const warnings: string[] = []
  // Every named id exists, yet nothing matched (a window or a map index that holds nothing): an
  // empty result, said in so many words.
  if (count === 0 && !filter.missingEventsOnly) {
    if (notSelected && notSelected.count > 0)
      warnings.push(
        `no task instance matching ${describeFilter(filter, n)} is in a state ${n.states} takes (${describeStates(filter.states ?? [])}): ${plural(notSelected.count, 'task instance')} in other states (${describeCounts(notSelected.states)}) not selected`,
      )
    else warnings.push(`no task instance matches ${describeFilter(filter, n)}`)
  }
  const items = mapItems(first ? pagesFrom(store, reads, filter, first) : selectTaskInstances(store, reads, filter))
  return {count, breakdown, explicit: false, items, warnings, ...(notSelected ? {notSelected} : {})}
}

/** What the filter matches in the states its states filter leaves out. */
async function notSelectedOf(
  store: SelectionStore,
  ex: Parameters<SelectionStore['countTaskInstancesByState']>[0],
  filter: SelectionFilter,
): Promise<NotSelected> {
  const taken = new Set(filter.states)
  const byState = await store.countTaskInstancesByState(ex, {...filter, states: undefined})
  const states: Record<string, number> = {}
  let count = 0
  for (const {state, count: n} of byState) {
    if (taken.has(state)) continue
    states[state ?? 'none'] = n
    count += n
  }
  return {count, states}
}

/** "running, none". */
const describeStates = (states: ReadonlyArray<string | null>) => states.map((state) => state ?? 'none').join(', ')

/**
 * A DAG, run or task id that names nothing is a typo, exit 4 with the close matches,
 * never an empty selection a cron would report as "nothing to do". A DAG is looked up only when
 * nothing matched (a selection that matched proves it); run and task ids always, each one.
 */
async function requireNamedSelectors(
  airflow: Pick<AirflowDatabase<SelectionStore>, 'db' | 'store'>,
  filter: SelectionFilter,
  count: number,
): Promise<void> {
  const {db, store} = airflow
  const problems: string[] = []
  if (count === 0 && filter.dagId) {
    const dagIds = await store.readDagIds(db.executor)
    if (!dagIds.includes(filter.dagId)) problems.push(unknownName('DAG', filter.dagId, dagIds))
  }

  if (problems.length === 0 && (filter.runIds.length > 0 || filter.taskIds.length > 0)) {
    const unknown = await store.readUnknownSelectors(db.executor, filter.dagId, filter)
    const where = filter.dagId ? ` in DAG ${JSON.stringify(filter.dagId)}` : ''
    for (const runId of unknown.runIds) problems.push(unknownName('run', runId, unknown.runCandidates, where))
    for (const taskId of unknown.taskIds) problems.push(unknownName('task', taskId, unknown.taskCandidates, where))
  }

  if (problems.length === 0) return
  throw new AirlockError('NOT_FOUND', ExitCode.notFound, `Nothing selected: ${problems.join('; ')}.`, [
    'Check the ids (airlock does not guess); nothing was written.',
  ])
}

function unknownName(kind: string, name: string, candidates: readonly string[], where = ''): string {
  const close = closeMatches(name, candidates)
  return `no ${kind} is named ${JSON.stringify(name)}${where}${close.length > 0 ? ` (did you mean ${close.join(', ')}?)` : ''}`
}

/** An array as the async stream the batch runner pulls from. */
function fromArray<T>(items: T[]): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      const iterator = items[Symbol.iterator]()
      return {next: () => Promise.resolve(iterator.next())}
    },
  }
}

async function* take<T>(items: AsyncIterable<T>, limit: number): AsyncGenerator<T> {
  let n = 0
  for await (const item of items) {
    if (n++ >= limit) return
    yield item
  }
}

async function* mapItems(refs: AsyncIterable<SelectedRef>): AsyncGenerator<WorkItem> {
  for await (const {tiId, row, key} of refs) {
    const seen =
      key ?? (row ? {dagId: row.dagId, runId: row.runId, taskId: row.taskId, mapIndex: row.mapIndex} : undefined)
    yield {ref: seen ? {tiId, seen} : {tiId}, outletEvents: []}
  }
}

/** The filter as the operator wrote it (in their names for its parts), for a message. */
function describeFilter(filter: SelectionFilter, n: SelectorNames): string {
  const parts = [
    filter.dagId === undefined ? '' : `${n.dagId} ${filter.dagId}`,
    ...filter.runIds.map((id) => `${n.runId} ${id}`),
    ...filter.taskIds.map((id) => `${n.taskId} ${id}`),
    filter.mapIndex === undefined ? '' : `${n.mapIndex} ${filter.mapIndex}`,
    filter.since ? `${n.since} ${filter.since.toISOString()}` : '',
    filter.until ? `${n.until} ${filter.until.toISOString()}` : '',
  ]
  return parts.filter(Boolean).join(' ') || 'the selection'
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
