import {describe, expect, it} from 'vitest'

import type {Executor} from '../../src/engine/engine.js'
import {downstreamReader, type FactsEntry} from '../../src/store/postgres/downstream.js'

/**
 * The preview's id → (name, uri) cache is bounded and shared by the items running at once. An
 * entry evicted between an item's lookup and its evaluation must not turn a queued asset into a
 * missing one: the preview would say "waiting" for a DAG the scheduler is about to run.
 */
describe("the preview's asset cache", () => {
  const names: Record<number, string> = {1: 'a1', 2: 'a2', 3: 'a3'}
  const executor = (): Executor & {asked: number[][]} => {
    const asked: number[][] = []
    return {
      asked,
      query<T>(statement: {values?: unknown[]}) {
        const ids = (statement.values?.[0] ?? []) as number[]
        asked.push([...ids].sort())
        return Promise.resolve(ids.map((id) => ({id, name: names[id]!, uri: `s3://${names[id]}`})) as T[])
      },
    } as unknown as Executor & {asked: number[][]}
  }
  const entry = (queued: number[]): FactsEntry => ({
    dag_id: 'consumer',
    paused: false,
    stale: false,
    import_errors: false,
    max_active_runs: 16,
    active_runs: 0,
    partitioned: false,
    max_runs_flag: false,
    timetable: null,
    data_compressed: null,
    dag_hash: null,
    queued,
    inactive: [],
    aliases: [],
  })

  it('an item sees every queued asset it looked up, even when the full cache evicts one of them meanwhile', async () => {
    const reader = downstreamReader({partitionedTimetables: false, maxRunsFlag: false}, {assets: 1})
    const ex = executor()
    const [facts] = await reader.facts(ex, [entry([1, 2])], reader.known())
    expect(facts!.queued.assets.map((asset) => asset.name).sort()).toEqual(['a1', 'a2'])
  })

  it('an id the cache holds is not read again; one it evicted is', async () => {
    const reader = downstreamReader({partitionedTimetables: false, maxRunsFlag: false}, {assets: 2})
    const ex = executor()
    await reader.facts(ex, [entry([1, 2])], reader.known())
    await reader.facts(ex, [entry([2, 3])], reader.known())
    await reader.facts(ex, [entry([1, 3])], reader.known())
    expect(ex.asked).toEqual([[1, 2], [3], [1]])
  })
})
