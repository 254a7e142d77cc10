import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {Executor, Statement} from '../../src/engine/engine.js'
import type {DagExplanation, LeafJson} from '../../src/explain/explainDag.js'
import {runExplain} from '../../src/explain/runExplain.js'
import {airflowOf, completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * `explain --all` pages through the asset-scheduled DAGs (keyset on dag_id): every DAG scheduled
 * by any of the four reference kinds, once, whatever the page size, and no DAG that is not.
 */
describe.each(['3.0', '3.3'] as const)('explain --all pages on %s', (version) => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase(version)
  })
  afterAll(async () => db?.drop())

  it('every asset-scheduled DAG once, at every page size; never a DAG scheduled on nothing', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: ['a', 'b'], outlets: 1})
      .consumer('by_id', {on: ['etl.a']})
      .consumer('by_id_too', {on: ['etl.a', 'etl.b']})
      .consumer('by_name', {on: ['etl.b'], by: 'name'})
      .consumer('by_uri', {on: ['etl.a'], by: 'uri'})
      .consumer('by_alias', {alias: 'lake.alias'})
      .producer('plain', {tasks: ['x'], outlets: 0})
      .build()
    const airflow = await airflowOf(db.knex)
    const explained = async (pageSize: number) => {
      const dags: string[] = []
      const summary = await runExplain(
        airflow,
        {selection: {kind: 'all'}, runs: 10, stuckAfterMs: 3_600_000, pageSize},
        (dag) => dags.push(dag.dag_id),
      )
      expect(summary.dags).toBe(dags.length)
      return dags
    }
    const all = ['by_alias', 'by_id', 'by_id_too', 'by_name', 'by_uri']
    for (const pageSize of [1, 2, 3, 500]) expect(await explained(pageSize)).toEqual(all)
  })
})

/**
 * A leaf's evidence: a queued leaf names the event that queued it, a missing one its asset's last
 * event (read for the missing leaves only), by id and as an Asset.ref.
 */
describe('explain --all evidence per leaf', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.0')
  })
  afterAll(async () => db?.drop())

  it("a missing leaf shows its asset's last event; a queued one the event that queued it", async () => {
    const w = await scenario(db.knex)
      .producer('etl', {tasks: ['a', 'b'], outlets: 1})
      .consumer('both', {on: ['etl.a', 'etl.b']})
      .consumer('by_name', {on: ['etl.b'], by: 'name'})
      .build()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    // etl.b had events (an older one and the newest) but queued nothing for these consumers.
    const asset = await db.knex('asset').where({name: 'etl.b.out_1'}).first('id')
    const stamped = (at: string) =>
      db
        .knex('asset_event')
        .insert({asset_id: asset.id, extra: '{}', source_map_index: -1, timestamp: at})
        .returning('id')
    await stamped('2026-01-01T00:00:00Z')
    const [newest] = await stamped('2026-01-02T00:00:00Z')
    const airflow = await airflowOf(db.knex)
    const dags = new Map<string, DagExplanation>()
    await runExplain(airflow, {selection: {kind: 'all'}, runs: 10, stuckAfterMs: 3_600_000}, (dag) =>
      dags.set(dag.dag_id, dag),
    )
    const [queued, missing] = (dags.get('both')!.condition as {all: LeafJson[]}).all
    expect(queued).toMatchObject({leaf: 'etl.a.out_1', state: 'queued'})
    expect(queued!.event!.source).toMatch(/^etl\/.+\/a$/)
    expect(queued!.last_event).toBeUndefined()
    expect(missing).toMatchObject({leaf: 'etl.b.out_1', state: 'missing', last_event: {id: newest.id}})
    expect(dags.get('by_name')!.condition).toMatchObject({
      all: [{leaf: 'Asset.ref(name=etl.b.out_1)', state: 'missing', last_event: {id: newest.id, source: 'external'}}],
    })
  })
})

/**
 * A long --all reads many pages on one session, and PostgreSQL plans a prepared statement
 * generically from its sixth execution: the page's assets must then still be found by name and by
 * uri through joins, not by testing every asset row against the page's arrays of names (a
 * generic plan cannot hash an array parameter: 10,000 leaves took 0.8 s a page, 100,000 took 64 s).
 */
describe('explain --all past its fifth page', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.0')
  })
  afterAll(async () => db?.drop())

  it("the generic plan of the page's asset read tests no asset row against an array", async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: ['a', 'b'], outlets: 1})
      .consumer('both', {on: ['etl.a', 'etl.b']})
      .build()
    const airflow = await airflowOf(db.knex)
    const sent: Statement[] = []
    const ex: Executor = {
      query: <Row>(statement: Statement) => {
        sent.push(statement)
        return airflow.db.executor.query<Row>(statement)
      },
    }
    await airflow.store.readExplainPage(ex, ['both'], 10)
    const assets = sent.find((s) => s.name?.includes('explain_assets'))!
    const literal = (values: unknown) => `'{${(values as string[]).map((v) => `"${v}"`).join(',')}}'`
    const plan = await db.knex.transaction(async (trx) => {
      await trx.raw('set local plan_cache_mode = force_generic_plan')
      await trx.raw(`prepare generic_assets as ${assets.text}`)
      const {rows} = await trx.raw<{rows: Array<{'QUERY PLAN': Array<{Plan: PlanNode}>}>}>(
        `explain (format json) execute generic_assets(${assets.values!.map(literal).join(', ')})`,
      )
      await trx.raw('deallocate generic_assets')
      return rows[0]!['QUERY PLAN'][0]!.Plan
    })
    const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)]
    const filtered = nodes(plan).filter((n) => n['Relation Name'] === 'asset' && /ANY/.test(n.Filter ?? ''))
    expect(filtered.map((n) => `${n['Node Type']}: ${n.Filter}`)).toEqual([])
  })
})

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  Filter?: string
  Plans?: PlanNode[]
}
