import {describe, expect, it} from 'vitest'

import type {Executor} from '../../src/engine/engine.js'
import {downstreamReader, type FactsEntry} from '../../src/store/postgres/downstream.js'

/** One consumer's entry of the facts statement, as json_build_object writes it. */
const factsEntry = (fields: Partial<FactsEntry>): FactsEntry => ({
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
  queued: [],
  inactive: [],
  aliases: [],
  ...fields,
})

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
  const entry = (queued: number[]) => factsEntry({queued})

  it('an item sees every queued asset it looked up, even when the full cache evicts one of them meanwhile', async () => {
    const reader = downstreamReader(
      {partitionedTimetables: false, maxRunsFlag: false, queueShape: 'per_asset'},
      {assets: 1},
    )
    const ex = executor()
    const [facts] = await reader.facts(ex, [entry([1, 2])], reader.known())
    expect(facts!.queued.assets.map((asset) => asset.name).sort()).toEqual(['a1', 'a2'])
  })

  it('an item whose ids are all cached reads them at once, before another item can evict one', async () => {
    const reader = downstreamReader(
      {partitionedTimetables: false, maxRunsFlag: false, queueShape: 'per_asset'},
      {assets: 1},
    )
    const ex = executor()
    await reader.facts(ex, [entry([1])], reader.known())
    // The second misses id 2 and reads it, evicting id 1; the third, started beside it, holds id 1.
    const [, [third]] = await Promise.all([
      reader.facts(ex, [entry([2])], reader.known()),
      reader.facts(ex, [entry([1])], reader.known()),
    ])
    expect(third!.queued.assets.map((asset) => asset.name)).toEqual(['a1'])
  })

  it('an id the cache holds is not read again; one it evicted is', async () => {
    const reader = downstreamReader(
      {partitionedTimetables: false, maxRunsFlag: false, queueShape: 'per_asset'},
      {assets: 2},
    )
    const ex = executor()
    await reader.facts(ex, [entry([1, 2])], reader.known())
    await reader.facts(ex, [entry([2, 3])], reader.known())
    await reader.facts(ex, [entry([1, 3])], reader.known())
    expect(ex.asked).toEqual([[1, 2], [3], [1]])
  })
})

/**
 * From 3.4 a consumer's queue holds a row per pending event. For a condition of a few plain
 * assets the statement asks whether each leaf is queued, by the leaf's (name, uri), once the
 * process has the condition cached; anything else keeps reading the rows.
 */
describe("3.4: the preview probes a small condition's leaves", () => {
  const executor = (): Executor & {statements: string[]} => {
    const statements: string[] = []
    return {
      statements,
      query<T>(statement: {name?: string}) {
        statements.push(statement.name ?? '')
        return Promise.resolve([] as T[])
      },
    }
  }
  const asset = (name: string) => ({__type: 'asset', __var: {name, uri: `s3://${name}`}})
  const entry = (hash: string, condition: unknown) =>
    factsEntry({dag_hash: hash, timetable: {__var: {asset_condition: condition}}})
  const reader = (queueShape: 'per_asset' | 'per_event') =>
    downstreamReader({partitionedTimetables: false, maxRunsFlag: false, queueShape})
  const all = (...objects: unknown[]) => ({__type: 'asset_all', __var: {objects}})

  it("the next statement is told each leaf's name and uri, per condition hash, with no statement of its own", async () => {
    const preview = reader('per_event')
    expect(preview.known().probes).toBe('{}')
    const ex = executor()
    await preview.facts(ex, [entry('h1', all(asset('a'), asset('b')))], preview.known())
    expect(JSON.parse(preview.known().probes)).toEqual({
      h1: [
        ['a', 's3://a'],
        ['b', 's3://b'],
      ],
    })
    expect(ex.statements).toEqual([])
  })

  it('a ref, an alias, or more leaves than a probe is worth: read as rows', async () => {
    const preview = reader('per_event')
    const ref = {__type: 'asset_ref', __var: {name: 'a'}}
    const alias = {__type: 'asset_alias', __var: {name: 'daily'}}
    const wide = all(...Array.from({length: 65}, (_, i) => asset(`a${i}`)))
    await preview.facts(
      executor(),
      [entry('ref', all(asset('a'), ref)), entry('alias', all(asset('a'), alias)), entry('wide', wide)],
      preview.known(),
    )
    expect(preview.known().probes).toBe('{}')
  })

  it('before 3.4 (a row per asset and DAG, as few as its leaves): nothing is probed', async () => {
    const preview = reader('per_asset')
    await preview.facts(executor(), [entry('h1', all(asset('a'), asset('b')))], preview.known())
    expect(preview.known().probes).toBe('{}')
  })
})
