import {describe, expect, it} from 'vitest'

import type {Executor} from '../../src/engine/engine.js'
import {pageSize, selectTaskInstances} from '../../src/selection/selection.js'
import type {AirflowStore} from '../../src/store/airflowStore.js'

/** A store whose keyset pages come from an array of ids, recording each page query. */
function pagedStore(total: number): {store: AirflowStore; calls: Array<{after: string | undefined; limit: number}>} {
  const ids = Array.from({length: total}, (_, i) => `id-${String(i).padStart(8, '0')}`)
  const calls: Array<{after: string | undefined; limit: number}> = []
  const store = {
    selectTaskInstanceIds(_ex: Executor, _filter: unknown, after: string | undefined, limit: number) {
      calls.push({after, limit})
      const from = after === undefined ? 0 : ids.indexOf(after) + 1
      return Promise.resolve(ids.slice(from, from + limit))
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
})
