import type {Executor} from '../engine/engine.js'
import type {AirflowStore, TaskInstanceFilter} from '../store/airflowStore.js'

/**
 * Which task instances a command works on, from the selection flags. Filters select task
 * instances whatever their state: the protocol reports each one's outcome (completed,
 * already_success, conflict), so an operator sees what a run really holds.
 */
export interface SelectionFilter extends TaskInstanceFilter {
  limit?: number | undefined
  /** Keyset start: only ids after this one (a resumed --checkpoint). */
  afterId?: string | undefined
}

export const pageSize = 1000

/** Streams the selection in keyset pages, so memory stays flat however many task instances match. */
export async function* selectTaskInstances(store: AirflowStore, ex: Executor, filter: SelectionFilter): AsyncGenerator<{tiId: string}> {
  let last = filter.afterId
  let remaining = filter.limit ?? Number.POSITIVE_INFINITY
  while (remaining > 0) {
    const ids = await store.selectTaskInstanceIds(ex, filter, last, Math.min(pageSize, remaining))
    for (const id of ids) yield {tiId: id}
    if (ids.length === 0) return
    remaining -= ids.length
    last = ids.at(-1)
    if (ids.length < pageSize) return
  }
}

export async function countSelection(store: AirflowStore, ex: Executor, filter: SelectionFilter): Promise<number> {
  const n = await store.countTaskInstances(ex, filter)
  return filter.limit === undefined ? n : Math.min(n, filter.limit)
}
