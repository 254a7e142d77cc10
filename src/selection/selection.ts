import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import {
  rangeOfRuns,
  type SelectedTaskInstance,
  type SelectionGroup,
  type TaskInstanceFilter,
  type SelectionStore,
} from '../store/families/selection.js'

/**
 * Which task instances a command works on, from the selection flags. A writer's states (complete's
 * --from-state) are part of the filter: what it matches in other states is not selected, only
 * counted (NotSelected); the protocol reports each selected one's outcome, and a state that
 * changed before the row lock is its conflict.
 */
export interface SelectionFilter extends TaskInstanceFilter {
  limit?: number | undefined
  /** Keyset start: only ids after this one (a resumed checkpoint). */
  afterId?: string | undefined
}

/** A selected task instance: its id, and its row where the page read one (paged by id). */
export interface SelectedRef {
  tiId: string
  row?: SelectedTaskInstance
  /** The key the selection saw, when it read one. */
  key?: TaskInstanceKey
}

export const pageSize = 1000

/**
 * Task instances per page of a missing-events selection: each of its pages scans task_instance
 * (see selectTaskInstancePage), so fewer, larger pages (ids, runs and states: about 2 MB).
 */
export const scanPageSize = 10_000

/** Runs per page of a run_after range (their task instances are then paged by pageSize). */
export const runPageSize = 200

/**
 * Streams the selection in keyset pages, so memory stays flat however many task instances match.
 * A run_after range (a since/until window, not resumed from a checkpoint) is paged run by run in
 * (run_after, run, id) order, so it costs what it selects; any other selection by task instance id.
 */
export async function* selectTaskInstances(
  store: SelectionStore,
  ex: Executor,
  filter: SelectionFilter,
): AsyncGenerator<SelectedRef> {
  const budget = {remaining: filter.limit ?? Number.POSITIVE_INFINITY}
  if (!rangeOfRuns(filter) || filter.afterId !== undefined) {
    yield* readAhead(
      budget,
      filter.missingEventsOnly ? scanPageSize : pageSize,
      (after: SelectedTaskInstance | undefined, limit) =>
        store.selectTaskInstancePage(ex, filter, after?.id ?? filter.afterId, limit),
      (row) => ({tiId: row.id, row}),
    )
    return
  }

  let afterRun: {runAfter: Date; id: number} | undefined
  while (budget.remaining > 0) {
    const runs = await store.selectRunPage(ex, filter, afterRun, runPageSize)
    if (runs.length === 0) return
    yield* readAhead(
      budget,
      pageSize,
      (after: {n: number; id: string; key: TaskInstanceKey} | undefined, limit) =>
        store.selectTaskInstanceIdsOfRuns(ex, filter, runs, after, limit),
      (row) => ({tiId: row.id, key: row.key}),
    )
    if (runs.length < runPageSize) return
    afterRun = runs.at(-1)
  }
}

/**
 * Keyset pages of `read`, the next one read while the workers take the current one's items (two
 * pages in memory at most), until a short page or the budget is spent.
 */
async function* readAhead<Row>(
  budget: {remaining: number},
  size: number,
  read: (after: Row | undefined, limit: number) => Promise<Row[]>,
  refOf: (row: Row) => SelectedRef,
): AsyncGenerator<SelectedRef> {
  const page = (after: Row | undefined) => read(after, Math.min(size, budget.remaining))
  let next: Promise<Row[]> | undefined = budget.remaining > 0 ? page(undefined) : undefined
  try {
    while (next) {
      const rows = await next
      budget.remaining -= rows.length
      next = rows.length === size && budget.remaining > 0 ? page(rows.at(-1)) : undefined
      // A failed read ahead surfaces when its page is awaited, not as an unhandled rejection now.
      next?.catch(() => undefined)
      for (const row of rows) yield refOf(row)
    }
  } finally {
    // Stopped early (an interrupt, a failure): the page read ahead is awaited, never left running.
    await next?.catch(() => undefined)
  }
}

/** What a filter selection holds, run by run, shown before a bulk write is confirmed and in a dry run. */
export interface SelectionBreakdown {
  /** Runs in (dag_id, run_id) order with their task instances per state ("none": no state yet). */
  runs: Array<{dag_id: string; run_id: string; task_instances: number; states: Record<string, number>}>
  dags: number
  /** The selection has more (run, state) groups than were read: `runs` is its first part, `dags` a lower bound. */
  truncated: boolean
}

/** Groups read for a breakdown: beyond this many the count is taken separately and the list is cut. */
const breakdownGroups = 1000

/** The selection's size and its breakdown by run; one grouped query unless the selection spans very many runs. */
export async function summarizeSelection(
  store: SelectionStore,
  ex: Executor,
  filter: SelectionFilter,
): Promise<{count: number; breakdown: SelectionBreakdown}> {
  const groups = await store.summarizeTaskInstances(ex, filter, breakdownGroups + 1)
  const {breakdown, listed} = breakdownOf(groups)
  const count = breakdown.truncated ? await countSelection(store, ex, filter) : listed
  return {count, breakdown}
}

/**
 * The first page of a missing-events selection, and whether it is the whole selection (shorter
 * than a page, or all its limit). Each page scans task_instance and probes each task instance's
 * events, and a breakdown would be one more such scan: the usual selection (a few missing task
 * instances) is summarised from this page instead (summarizeRows), one scan where it took two.
 * The page is worked either way (pagesFrom), never read again.
 */
export async function readFirstScanPage(
  store: SelectionStore,
  ex: Executor,
  filter: SelectionFilter,
): Promise<{rows: SelectedTaskInstance[]; whole: boolean}> {
  const size = Math.min(scanPageSize, filter.limit ?? Number.POSITIVE_INFINITY)
  const rows = await store.selectTaskInstancePage(ex, filter, filter.afterId, size)
  return {rows, whole: rows.length < size || size === filter.limit}
}

/** The selection from a first page already read (readFirstScanPage): its rows, then the pages after its last id. */
export async function* pagesFrom(
  store: SelectionStore,
  ex: Executor,
  filter: SelectionFilter,
  first: {rows: readonly SelectedTaskInstance[]; whole: boolean},
): AsyncGenerator<SelectedRef> {
  for (const row of first.rows) yield {tiId: row.id, row}
  const last = first.rows.at(-1)
  if (first.whole || !last) return
  const limit = filter.limit === undefined ? undefined : filter.limit - first.rows.length
  yield* selectTaskInstances(store, ex, {...filter, afterId: last.id, limit})
}

/** The size and breakdown of a selection read whole (readFirstScanPage). */
export function summarizeRows(rows: readonly SelectedTaskInstance[]): {count: number; breakdown: SelectionBreakdown} {
  const counts = new Map<string, SelectionGroup>()
  for (const row of rows) {
    const key = JSON.stringify([row.dagId, row.runId, row.state])
    const group = counts.get(key) ?? {dagId: row.dagId, runId: row.runId, state: row.state, count: 0}
    group.count++
    counts.set(key, group)
  }
  // The grouped query's order: DAG, run, then state with no state last.
  const byKey = (a: SelectionGroup, b: SelectionGroup) =>
    compare(a.dagId, b.dagId) ||
    compare(a.runId, b.runId) ||
    (a.state === b.state ? 0 : a.state === null ? 1 : b.state === null ? -1 : compare(a.state, b.state))
  return {count: rows.length, breakdown: breakdownOf([...counts.values()].sort(byKey)).breakdown}
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** The breakdown of (DAG, run, state) groups in key order: the first breakdownGroups of them. */
function breakdownOf(groups: readonly SelectionGroup[]): {breakdown: SelectionBreakdown; listed: number} {
  const runs: SelectionBreakdown['runs'] = []
  for (const group of groups.slice(0, breakdownGroups)) {
    let run = runs.at(-1)
    if (!run || run.dag_id !== group.dagId || run.run_id !== group.runId) {
      run = {dag_id: group.dagId, run_id: group.runId, task_instances: 0, states: {}}
      runs.push(run)
    }
    run.task_instances += group.count
    run.states[group.state ?? 'none'] = group.count
  }
  const listed = runs.reduce((sum, run) => sum + run.task_instances, 0)
  return {
    breakdown: {runs, dags: new Set(runs.map((run) => run.dag_id)).size, truncated: groups.length > breakdownGroups},
    listed,
  }
}

export async function countSelection(store: SelectionStore, ex: Executor, filter: SelectionFilter): Promise<number> {
  const n = await store.countTaskInstances(ex, filter)
  return filter.limit === undefined ? n : Math.min(n, filter.limit)
}
