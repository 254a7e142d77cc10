import {describe, expect, it} from 'vitest'

import {evaluateCondition, parseCondition, previewQueue, type QueuedAssets} from '../../src/airflow/assetCondition.js'
import {DownstreamFold, downstreamOf, listedLeaves} from '../../src/protocol/downstream.js'
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
      {
        dag_id: 'report',
        ready: true,
        waiting_for: [],
        waiting_for_count: 0,
        satisfied: ['a', 'b'],
        satisfied_count: 2,
        assets: 2,
      },
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
      {
        dag_id: 'report',
        ready: true,
        waiting_for: [],
        waiting_for_count: 0,
        satisfied: ['a', 'b'],
        satisfied_count: 2,
        assets: 2,
        items: 2,
      },
      {
        dag_id: 'weekly',
        ready: false,
        waiting_for: ['b'],
        waiting_for_count: 1,
        satisfied: ['a'],
        satisfied_count: 1,
        assets: 2,
        items: 1,
      },
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
      {
        dag_id: 'report',
        ready: true,
        waiting_for: [],
        waiting_for_count: 0,
        satisfied: ['a', 'c'],
        satisfied_count: 2,
        assets: 3,
        items: 2,
      },
    ])
  })

  it('still waiting: only what would make the combined queue true', () => {
    const condition = all(any(asset('a'), asset('b')), asset('c'), asset('d'))
    const fold = new DownstreamFold()
    fold.add(downstreamOf([facts('report', {condition, queued: rows([queued('b')])})]))
    fold.add(downstreamOf([facts('report', {condition, queued: rows([queued('c')])})]))
    expect(fold.summary()).toEqual([
      {
        dag_id: 'report',
        ready: false,
        waiting_for: ['d'],
        waiting_for_count: 1,
        satisfied: ['b', 'c'],
        satisfied_count: 2,
        assets: 4,
        items: 2,
      },
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
        waiting_for_count: 0,
        blocked_by: 'max_active_runs',
        satisfied: ['a', 'b'],
        satisfied_count: 2,
        assets: 2,
        items: 2,
      },
    ])
  })
})

/**
 * The evaluation against a queue (evaluateQueue, through an index of the tree) decides exactly as
 * the scheduler's evaluator transcribed plainly here, leaf by leaf: random trees of assets, refs,
 * aliases, unknown nodes, nested ANDs and ORs and repeated leaves, against random queues with
 * inactive assets, assets queued twice and names shared by several uris.
 */
describe('evaluateQueue against a plain transcription', () => {
  type Node =
    | {__type: 'asset'; name: string; uri: string}
    | {__type: 'asset_ref'; name?: string; uri?: string}
    | {__type: 'asset_alias'; name: string}
    | {__type: 'asset_all' | 'asset_any'; objects: Node[]}
    | {__type: 'mystery'}
  const plain = (node: Node, queue: QueuedAssets) => {
    const leaf = (n: Node): boolean => {
      switch (n.__type) {
        case 'asset':
          return queue.assets.some((q) => q.name === n.name && q.uri === n.uri)
        case 'asset_ref':
          return queue.assets.some((q) => q.active && (n.name !== undefined ? q.name === n.name : q.uri === n.uri))
        case 'asset_alias':
          return queue.aliases.includes(n.name)
        default:
          return false
      }
    }
    const label = (n: Node) =>
      n.__type === 'asset'
        ? n.name
        : n.__type === 'asset_ref'
          ? n.name !== undefined
            ? `Asset.ref(name=${n.name})`
            : `Asset.ref(uri=${n.uri})`
          : `alias ${(n as {name: string}).name}`
    const met = (n: Node): boolean =>
      n.__type === 'asset_all'
        ? n.objects.every(met)
        : n.__type === 'asset_any'
          ? n.objects.some(met)
          : n.__type === 'mystery'
            ? false
            : leaf(n)
    const missing = (n: Node): string[] | undefined => {
      if (met(n)) return []
      if (n.__type === 'asset_all') {
        const parts = n.objects.map(missing)
        return parts.includes(undefined) ? undefined : [...new Set(parts.flatMap((p) => p!))]
      }
      if (n.__type === 'asset_any') {
        let best: string[] | undefined
        for (const part of n.objects.map(missing))
          if (part !== undefined && (best === undefined || part.length < best.length)) best = part
        return best
      }
      return n.__type === 'mystery' ? undefined : [label(n)]
    }
    const leaves = (n: Node): Node[] =>
      n.__type === 'asset_all' || n.__type === 'asset_any'
        ? n.objects.flatMap(leaves)
        : n.__type === 'mystery'
          ? []
          : [n]
    const isMet = met(node)
    return {
      met: isMet,
      leaves: leaves(node).map(label),
      satisfied: leaves(node).filter(leaf).map(label),
      waitingFor: isMet ? [] : (missing(node) ?? []),
    }
  }

  it('agrees on met, leaves, satisfied and waiting_for for 2,000 random conditions and queues', () => {
    let seed = 44
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!
    const names = ['a', 'b', 'c', 'd', 'e']
    const uri = (name: string) => (random() < 0.2 ? `s3://other/${name}` : `s3://lake/${name}`)
    const tree = (depth: number): Node => {
      const r = random()
      if (depth < 3 && r < 0.35)
        return {
          __type: random() < 0.5 ? 'asset_all' : 'asset_any',
          objects: Array.from({length: Math.floor(random() * 4)}, () => tree(depth + 1)),
        }
      if (r < 0.65) {
        const name = pick(names)
        return {__type: 'asset', name, uri: uri(name)}
      }
      if (r < 0.8)
        return random() < 0.5 ? {__type: 'asset_ref', name: pick(names)} : {__type: 'asset_ref', uri: uri(pick(names))}
      if (r < 0.95) return {__type: 'asset_alias', name: pick(['x', 'y'])}
      return {__type: 'mystery'}
    }
    // One id per (name, uri), as asset.id is: the tree learns which leaves an id satisfies.
    const ids = new Map<string, number>()
    const idOf = (name: string, uri: string) =>
      ids.get(`${name} ${uri}`) ?? ids.set(`${name} ${uri}`, ids.size + 1).size
    const randomQueue = (): QueuedAssets => ({
      assets: Array.from({length: Math.floor(random() * 6)}, () => {
        const name = pick(names)
        const at = uri(name)
        return {name, uri: at, active: random() < 0.8, id: idOf(name, at)}
      }),
      aliases: random() < 0.4 ? [pick(['x', 'y'])] : [],
    })
    for (let i = 0; i < 2000; i++) {
      const condition = tree(0)
      const parsed = parseCondition(condition)
      // Two queues per tree: the second meets ids the first taught it.
      for (const queue of [randomQueue(), randomQueue()]) {
        const expected = plain(condition, queue)
        expect(evaluateCondition(condition, queue), JSON.stringify({condition, queue})).toEqual(expected)
        // The preview's counts and lists cut short, at a cap that cuts these small trees often.
        const preview = previewQueue(parsed, queue, 2)
        expect({...preview, marks: undefined}, JSON.stringify({condition, queue})).toEqual({
          met: expected.met,
          leaves: expected.leaves.length,
          satisfied: expected.satisfied.slice(0, 2),
          satisfiedCount: expected.satisfied.length,
          waitingFor: expected.waitingFor.slice(0, 2),
          waitingForCount: expected.waitingFor.length,
          marks: undefined,
        })
      }
    }
  })
})

describe('a consumer of thousands of assets', () => {
  const leaves = Array.from({length: 5000}, (_, i) => `asset_${i}`)
  const condition = all(...leaves.map((name) => asset(name)))

  it('names the first listed leaves of each list and counts the rest', () => {
    const [preview] = downstreamOf([
      facts('wide', {condition, queued: rows(leaves.slice(100, 4000).map((name) => queued(name)))}),
    ])
    expect(preview).toEqual({
      dag_id: 'wide',
      ready: false,
      waiting_for: leaves.slice(0, listedLeaves),
      waiting_for_count: 1100,
      satisfied: leaves.slice(100, 100 + listedLeaves),
      satisfied_count: 3900,
      assets: 5000,
    })
  })

  it('a batch that covers every leaf between its items is ready, its lists still short', () => {
    const fold = new DownstreamFold()
    fold.add(
      downstreamOf([facts('wide', {condition, queued: rows(leaves.slice(0, 2500).map((name) => queued(name)))})]),
    )
    fold.add(downstreamOf([facts('wide', {condition, queued: rows(leaves.slice(2500).map((name) => queued(name)))})]))
    expect(fold.summary()).toEqual([
      {
        dag_id: 'wide',
        ready: true,
        waiting_for: [],
        waiting_for_count: 0,
        satisfied: leaves.slice(0, listedLeaves),
        satisfied_count: 5000,
        assets: 5000,
        items: 2,
      },
    ])
  })

  it('a re-parse that names one asset by another uri: the earlier item satisfied the old asset, not the new one', () => {
    const fold = new DownstreamFold()
    fold.add(downstreamOf([facts('report', {condition: all(asset('a'), asset('b')), queued: rows([queued('a')])})]))
    const moved = all(asset('a', 's3://elsewhere/a'), asset('b'))
    fold.add(downstreamOf([facts('report', {condition: moved, queued: rows([queued('b')])})]))
    expect(fold.summary()[0]).toMatchObject({ready: false, waiting_for: ['a'], satisfied: ['b'], satisfied_count: 1})
  })

  it('a folded item keeps no per-leaf state of its own (an item kept for --json stays its JSON)', () => {
    const [preview] = downstreamOf([facts('wide', {condition, queued: rows([queued('asset_1')])})])
    new DownstreamFold().add([preview!])
    expect(Object.getOwnPropertyNames(preview)).toEqual(Object.keys(preview!))
  })

  it('a DAG re-parsed mid-batch: what earlier items satisfied carries over to its new condition by what each asset is', () => {
    const fold = new DownstreamFold()
    fold.add(downstreamOf([facts('report', {condition: all(asset('a'), asset('b')), queued: rows([queued('a')])})]))
    // The new condition drops b and adds c; the second item queues c.
    fold.add(downstreamOf([facts('report', {condition: all(asset('c'), asset('a')), queued: rows([queued('c')])})]))
    expect(fold.summary()[0]).toMatchObject({ready: true, satisfied: ['c', 'a'], satisfied_count: 2, items: 2})
  })
})
