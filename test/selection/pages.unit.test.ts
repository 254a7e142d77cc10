import {describe, expect, it} from 'vitest'

import type {Executor} from '../../src/engine/engine.js'
import {
  pagesFrom,
  pageSize,
  readFirstScanPage,
  runPageSize,
  scanPageSize,
  selectTaskInstances,
} from '../../src/selection/selection.js'
import type {SelectionStore} from '../../src/store/families/selection.js'

const pad = (n: number) => String(n).padStart(8, '0')

/**
 * A store over `runs` runs of `perRun` task instances each, answering the three keyset pages the
 * selection reads (runs; the task instances of a run page; task instances by id) and recording
 * each page query.
 */
function pagedStore(runs: number, perRun = 1) {
  const world = Array.from({length: runs}, (_, r) => ({
    id: r + 1,
    dagId: 'etl',
    runId: `run-${pad(r)}`,
    runAfter: new Date(Date.UTC(2026, 0, 1) + r * 60_000),
    tis: Array.from({length: perRun}, (_, t) => `id-${pad(r)}-${pad(t)}`),
  }))
  const byId = world
    .flatMap((run) => run.tis.map((id) => ({id, dagId: run.dagId, runId: run.runId, state: 'success'})))
    .sort((a, b) => (a.id < b.id ? -1 : 1))
  const calls = {
    runs: [] as number[],
    ofRuns: [] as number[],
    byId: [] as Array<{after: string | undefined; limit: number}>,
  }
  const store = {
    selectRunPage(_ex: Executor, _filter: unknown, after: {id: number} | undefined, limit: number) {
      calls.runs.push(limit)
      const from = after === undefined ? 0 : world.findIndex((run) => run.id === after.id) + 1
      return Promise.resolve(world.slice(from, from + limit))
    },
    selectTaskInstanceIdsOfRuns(
      _ex: Executor,
      _filter: unknown,
      page: Array<{runId: string}>,
      after: {n: number; id: string} | undefined,
      limit: number,
    ) {
      calls.ofRuns.push(limit)
      const rows = page.flatMap((run, i) => world.find((w) => w.runId === run.runId)!.tis.map((id) => ({n: i + 1, id})))
      const from = after === undefined ? 0 : rows.findIndex((row) => row.n === after.n && row.id === after.id) + 1
      return Promise.resolve(rows.slice(from, from + limit))
    },
    selectTaskInstancePage(_ex: Executor, _filter: unknown, after: string | undefined, limit: number) {
      calls.byId.push({after, limit})
      const from = after === undefined ? 0 : byId.findIndex((row) => row.id === after) + 1
      return Promise.resolve(byId.slice(from, from + limit))
    },
  } as unknown as SelectionStore
  return {store, calls}
}

const byDag = {dagId: 'etl', runIds: [], taskIds: []}
const byRange = {...byDag, since: new Date('2026-01-01T00:00:00Z')}
const missing = {...byRange, timeColumn: 'end_date' as const, missingEventsOnly: true}

describe('selection pages', () => {
  it('a run_after range is paged run by run; the next page is asked for before the current one is handed out; every task instance comes once, in run order', async () => {
    // Two pages of runs, the first holding more task instances than one page.
    const {store, calls} = pagedStore(runPageSize + 10, 9)
    const seen: string[] = []
    for await (const {tiId} of selectTaskInstances(store, {} as Executor, byRange)) {
      // From the first item of a full page on, the next page is already on its way.
      if (seen.length === 0) expect(calls.ofRuns).toHaveLength(2)
      seen.push(tiId)
    }
    expect(seen).toHaveLength((runPageSize + 10) * 9)
    expect(new Set(seen).size).toBe(seen.length)
    expect([...seen].sort()).toEqual(seen)
    expect(calls.runs).toEqual([runPageSize, runPageSize])
    expect(calls.byId).toEqual([])
  })

  it('--limit asks for no more than it takes, and a short page ends the stream without another query', async () => {
    const {store, calls} = pagedStore(runPageSize, 10)
    let n = 0
    for await (const _ of selectTaskInstances(store, {} as Executor, {...byRange, limit: pageSize + 10})) n++
    expect(n).toBe(pageSize + 10)
    expect(calls.ofRuns).toEqual([pageSize, 10])
  })

  it('a DAG alone is paged by task instance id, 1000 at a time', async () => {
    const {store, calls} = pagedStore(pageSize * 2 + 5)
    const seen: string[] = []
    for await (const {tiId} of selectTaskInstances(store, {} as Executor, byDag)) seen.push(tiId)
    expect(seen).toHaveLength(pageSize * 2 + 5)
    expect([...seen].sort()).toEqual(seen)
    expect(calls.byId.map((c) => c.limit)).toEqual([pageSize, pageSize, pageSize])
    expect(calls.runs).toEqual([])
  })

  it('a missing-events selection is paged by task instance id, in larger pages, each a scan of task_instance', async () => {
    const {store, calls} = pagedStore(scanPageSize + 5)
    const seen: string[] = []
    for await (const {tiId} of selectTaskInstances(store, {} as Executor, missing)) seen.push(tiId)
    expect(seen).toHaveLength(scanPageSize + 5)
    expect([...seen].sort()).toEqual(seen)
    expect(calls.byId.map((c) => c.limit)).toEqual([scanPageSize, scanPageSize])
    expect(calls.byId[1]!.after).toBe(seen[scanPageSize - 1])
    expect(calls.runs).toEqual([])
  })

  it('a missing-events selection is read whole when it fits one page (or its --limit), not when it fills the page', async () => {
    const first = async (total: number, limit?: number) => {
      const page = await readFirstScanPage(pagedStore(total).store, {} as Executor, {...missing, limit})
      return [page.rows.length, page.whole]
    }
    expect(await first(scanPageSize - 1)).toEqual([scanPageSize - 1, true])
    expect(await first(scanPageSize)).toEqual([scanPageSize, false])
    expect(await first(scanPageSize * 2, 7)).toEqual([7, true])
    expect(await first(scanPageSize * 2, scanPageSize + 1)).toEqual([scanPageSize, false])
  })

  it('a first page that is not the whole selection is worked, then the pages after it: every id once, the first page never read again', async () => {
    const {store, calls} = pagedStore(scanPageSize * 2 + 5)
    const first = await readFirstScanPage(store, {} as Executor, {...missing, limit: scanPageSize * 2})
    const seen: string[] = []
    for await (const {tiId} of pagesFrom(store, {} as Executor, {...missing, limit: scanPageSize * 2}, first))
      seen.push(tiId)
    expect(seen).toHaveLength(scanPageSize * 2)
    expect(new Set(seen).size).toBe(seen.length)
    expect([...seen].sort()).toEqual(seen)
    expect(calls.byId).toEqual([
      {after: undefined, limit: scanPageSize},
      {after: seen[scanPageSize - 1], limit: scanPageSize},
    ])
  })
})
