import {describe, expect, it} from 'vitest'

import type {Executor} from '../../src/engine/engine.js'
import {pageSize, readWholeSelection, scanPageSize, selectTaskInstances} from '../../src/selection/selection.js'
import type {AirflowStore} from '../../src/store/airflowStore.js'

/** A store whose keyset pages come from an array of ids, recording each page query. */
function pagedStore(total: number): {store: AirflowStore; calls: Array<{after: string | undefined; limit: number}>} {
  const ids = Array.from({length: total}, (_, i) => `id-${String(i).padStart(8, '0')}`)
  const calls: Array<{after: string | undefined; limit: number}> = []
  const store = {
    selectTaskInstancePage(_ex: Executor, _filter: unknown, after: string | undefined, limit: number) {
      calls.push({after, limit})
      const from = after === undefined ? 0 : ids.indexOf(after) + 1
      return Promise.resolve(ids.slice(from, from + limit).map((id) => ({id, dagId: 'etl', runId: 'r', state: 'success'})))
    },
  } as unknown as AirflowStore
  return {store, calls}
}

const filter = {runIds: [], taskIds: []}

describe('selection pages', () => {
  it('the next page is asked for before the current one is handed out, and every id comes once, in order', async () => {
    const {store, calls} = pagedStore(pageSize * 2 + 5)
    const seen: string[] = []
    for await (const {tiId} of selectTaskInstances(store, {} as Executor, filter)) {
      // From the first item of a full page on, the next page is already on its way.
      if (seen.length === 0) expect(calls).toHaveLength(2)
      seen.push(tiId)
    }
    expect(seen).toHaveLength(pageSize * 2 + 5)
    expect(new Set(seen).size).toBe(seen.length)
    expect([...seen].sort()).toEqual(seen)
    expect(calls.map((c) => c.after)).toEqual([
      undefined,
      `id-${String(pageSize - 1).padStart(8, '0')}`,
      `id-${String(pageSize * 2 - 1).padStart(8, '0')}`,
    ])
  })

  it('--limit asks for no more than it takes, and a short page ends the stream without another query', async () => {
    const {store, calls} = pagedStore(pageSize * 3)
    let n = 0
    for await (const _ of selectTaskInstances(store, {} as Executor, {...filter, limit: pageSize + 10})) n++
    expect(n).toBe(pageSize + 10)
    expect(calls.map((c) => c.limit)).toEqual([pageSize, 10])
  })

  it('a missing-events selection takes larger pages, each a scan of task_instance', async () => {
    const {store, calls} = pagedStore(scanPageSize + 5)
    let n = 0
    for await (const _ of selectTaskInstances(store, {} as Executor, {...filter, missingEventsOnly: true})) n++
    expect(n).toBe(scanPageSize + 5)
    expect(calls.map((c) => c.limit)).toEqual([scanPageSize, scanPageSize])
  })

  it('a missing-events selection is read whole when it fits one page (or its --limit), not when it fills the page', async () => {
    const missing = {...filter, missingEventsOnly: true}
    expect(await readWholeSelection(pagedStore(scanPageSize - 1).store, {} as Executor, missing)).toHaveLength(scanPageSize - 1)
    expect(await readWholeSelection(pagedStore(scanPageSize).store, {} as Executor, missing)).toBeUndefined()
    expect(await readWholeSelection(pagedStore(scanPageSize * 2).store, {} as Executor, {...missing, limit: 7})).toHaveLength(7)
    expect(await readWholeSelection(pagedStore(scanPageSize * 2).store, {} as Executor, {...missing, limit: scanPageSize + 1})).toBeUndefined()
  })
})
