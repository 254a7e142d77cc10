import {describe, expect, it} from 'vitest'

import {evaluateCondition, type QueuedAssets} from '../../src/airflow/assetCondition.js'
import {DownstreamFold, downstreamOf} from '../../src/protocol/downstream.js'
import type {DownstreamFacts} from '../../src/store/families/downstream.js'

/**
 * The downstream preview's evaluation, as `encode_asset_condition` writes a condition and
 * `AssetEvaluator` reads it, without a database (the conformance suite checks it against the
 * transcribed scheduler on real rows).
 */
const asset = (name: string, uri = `s3://lake/${name}`) => ({
  __type: 'asset',
  __var: {name, uri, group: 'asset', extra: {}},
})
const all = (...objects: unknown[]) => ({__type: 'asset_all', __var: {objects}})
const any = (...objects: unknown[]) => ({__type: 'asset_any', __var: {objects}})
interface Queued {
  name: string
  uri: string
  active: boolean
  aliases: string[]
}
const queued = (name: string, extra: Partial<Queued> = {}): Queued => ({
  name,
  uri: `s3://lake/${name}`,
  active: true,
  aliases: [],
  ...extra,
})
/** Queue rows as the store returns them: the assets, and the aliases linked to any of them. */
const rows = (list: Queued[]): QueuedAssets => ({
  assets: list.map(({name, uri, active}) => ({name, uri, active})),
  aliases: [...new Set(list.flatMap((q) => q.aliases))],
})

describe('evaluateCondition', () => {
  it('AND: met only when every asset is queued; waits for the missing ones', () => {
    expect(evaluateCondition(all(asset('a'), asset('b')), rows([queued('a')]))).toEqual({
      met: false,
      leaves: ['a', 'b'],
      satisfied: ['a'],
      waitingFor: ['b'],
    })
    expect(evaluateCondition(all(asset('a'), asset('b')), rows([queued('a'), queued('b')])).met).toBe(true)
  })

  it('OR nested in AND: one side of the OR is enough', () => {
    const condition = all(asset('a'), any(asset('b'), asset('c')))
    expect(evaluateCondition(condition, rows([queued('a'), queued('c')]))).toMatchObject({met: true, waitingFor: []})
    // What would make it true: one side of the OR (the first of the smallest), never both.
    expect(evaluateCondition(condition, rows([queued('a')]))).toMatchObject({met: false, waitingFor: ['b']})
  })

  it('waits for the smallest missing set of each OR, and for every missing part of an AND', () => {
    const condition = all(any(all(asset('a'), asset('b')), asset('c')), asset('d'))
    expect(evaluateCondition(condition, rows([]))).toMatchObject({met: false, waitingFor: ['c', 'd']})
    // a queued: the AND branch now misses one asset, as few as the other side; the first wins.
    expect(evaluateCondition(condition, rows([queued('a')]))).toMatchObject({met: false, waitingFor: ['b', 'd']})
    expect(evaluateCondition(condition, rows([queued('c'), queued('d')]))).toMatchObject({met: true, waitingFor: []})
  })

  it('an asset matches by name and uri together, never by name alone', () => {
    expect(evaluateCondition(asset('a'), rows([queued('a', {uri: 's3://elsewhere/a'})])).met).toBe(false)
  })

  it('Asset.ref resolves by name or uri to an active asset only', () => {
    const byName = {__type: 'asset_ref', __var: {name: 'a'}}
    const byUri = {__type: 'asset_ref', __var: {uri: 's3://lake/a'}}
    expect(evaluateCondition(byName, rows([queued('a')]))).toMatchObject({met: true, satisfied: ['Asset.ref(name=a)']})
    expect(evaluateCondition(byUri, rows([queued('a')])).met).toBe(true)
    expect(evaluateCondition(byName, rows([queued('a', {active: false})])).met).toBe(false)
  })

  it('an alias is met by any queued asset linked to it', () => {
    const alias = {__type: 'asset_alias', __var: {name: 'daily', group: ''}}
    expect(evaluateCondition(alias, rows([queued('a', {aliases: ['daily']})]))).toMatchObject({
      met: true,
      satisfied: ['alias daily'],
    })
    expect(evaluateCondition(alias, rows([queued('a')])).met).toBe(false)
  })

  it('no condition, or one of an unknown type, is never met', () => {
    expect(evaluateCondition(undefined, rows([queued('a')])).met).toBe(false)
    expect(evaluateCondition({__type: 'something_new'}, rows([queued('a')])).met).toBe(false)
  })
})

const facts = (dagId: string, extra: Partial<DownstreamFacts> = {}): DownstreamFacts => ({
  dagId,
  paused: false,
  stale: false,
  importErrors: false,
  maxActiveRuns: 16,
  activeRuns: 0,
  partitioned: false,
  maxRunsFlag: false,
  condition: all(asset('a'), asset('b')),
  queued: rows([queued('a'), queued('b')]),
  ...extra,
})

describe('downstreamOf', () => {
  it('ready when the condition holds and nothing excludes the DAG', () => {
    expect(downstreamOf([facts('report')])).toEqual([
      {dag_id: 'report', ready: true, waiting_for: [], satisfied: ['a', 'b'], assets: 2},
    ])
  })

  it('paused, stale and import errors block whatever the condition; max_active_runs only a met one', () => {
    const [paused, stale, broken, busy, waiting] = downstreamOf([
      facts('paused', {paused: true}),
      facts('stale', {stale: true, queued: rows([queued('a')])}),
      facts('broken', {importErrors: true}),
      facts('busy', {activeRuns: 16}),
      facts('waiting', {activeRuns: 16, queued: rows([queued('a')])}),
    ])
    expect(paused).toMatchObject({ready: false, blocked_by: 'paused'})
    expect(stale).toMatchObject({ready: false, blocked_by: 'stale', waiting_for: ['b']})
    expect(broken).toMatchObject({ready: false, blocked_by: 'import_errors'})
    expect(busy).toMatchObject({ready: false, blocked_by: 'max_active_runs', waiting_for: []})
    expect(waiting).toMatchObject({ready: false, waiting_for: ['b']})
    expect(waiting).not.toHaveProperty('blocked_by')
  })

  it("3.2+: the scheduler's cached cap flag blocks the DAG whatever its runs and condition, and says why", () => {
    const [flagged] = downstreamOf([facts('report', {maxRunsFlag: true, activeRuns: 0})])
    expect(flagged).toMatchObject({ready: false, blocked_by: 'max_active_runs'})
    expect(flagged!.reason).toContain('exceeds_max_non_backfill')
    const fold = new DownstreamFold()
    fold.add([flagged!])
    expect(fold.summary()[0]).toMatchObject({ready: false, blocked_by: 'max_active_runs', reason: flagged!.reason})
  })

  it('a partitioned timetable is not evaluated', () => {
    expect(downstreamOf([facts('parts', {partitioned: true})])[0]).toMatchObject({
      ready: false,
      blocked_by: 'partitioned',
    })
  })
})

describe('DownstreamFold', () => {
  it('one line per consumer; items that together satisfy every asset make it ready (a dry run sees each alone)', () => {
    const fold = new DownstreamFold()
    const [first] = downstreamOf([facts('report', {queued: rows([queued('a')])})])
    const [second] = downstreamOf([facts('report', {queued: rows([queued('b')])})])
    const [other] = downstreamOf([facts('weekly', {queued: rows([queued('a')])})])
    fold.add([first!, other!])
    fold.add([second!])
    expect(fold.summary()).toEqual([
      {dag_id: 'report', ready: true, waiting_for: [], satisfied: ['a', 'b'], assets: 2, items: 2},
      {dag_id: 'weekly', ready: false, waiting_for: ['b'], satisfied: ['a'], assets: 2, items: 1},
    ])
  })
})

describe('DownstreamFold over OR conditions', () => {
  it('evaluates the condition over the queue the items make together, not their leaves one by one', () => {
    // (A | B) & C: one item queues A, another C. The scheduler runs the consumer; nothing waits for B.
    const condition = all(any(asset('a'), asset('b')), asset('c'))
    const fold = new DownstreamFold()
    fold.add(downstreamOf([facts('report', {condition, queued: rows([queued('a')])})]))
    fold.add(downstreamOf([facts('report', {condition, queued: rows([queued('c')])})]))
    expect(fold.summary()).toEqual([
      {dag_id: 'report', ready: true, waiting_for: [], satisfied: ['a', 'c'], assets: 3, items: 2},
    ])
  })

  it('still waiting: only what would make the combined queue true', () => {
    const condition = all(any(asset('a'), asset('b')), asset('c'), asset('d'))
    const fold = new DownstreamFold()
    fold.add(downstreamOf([facts('report', {condition, queued: rows([queued('b')])})]))
    fold.add(downstreamOf([facts('report', {condition, queued: rows([queued('c')])})]))
    expect(fold.summary()).toEqual([
      {dag_id: 'report', ready: false, waiting_for: ['d'], satisfied: ['b', 'c'], assets: 4, items: 2},
    ])
  })

  it('max_active_runs blocks a consumer the items satisfy only together', () => {
    const condition = all(asset('a'), asset('b'))
    const fold = new DownstreamFold()
    fold.add(downstreamOf([facts('report', {condition, activeRuns: 16, queued: rows([queued('a')])})]))
    fold.add(downstreamOf([facts('report', {condition, activeRuns: 16, queued: rows([queued('b')])})]))
    expect(fold.summary()).toEqual([
      {
        dag_id: 'report',
        ready: false,
        waiting_for: [],
        blocked_by: 'max_active_runs',
        satisfied: ['a', 'b'],
        assets: 2,
        items: 2,
      },
    ])
  })
})
