import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runExplain} from '../../src/explain/runExplain.js'
import {airflowOf} from '../support/complete.js'
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
