import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {airflowOf, completeOne, planOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * From 3.4 the queue holds a row per pending event, and the preview asks whether each leaf of a
 * small condition is queued instead of reading the consumer's rows. Items after the first read
 * the condition that way (its leaves' asset ids are learnt once): their previews must say what
 * reading the rows says, the statement's own rows included.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.4', 2)
})
afterAll(async () => db?.drop())

type Preview = {
  dag_id: string
  ready: boolean
  waiting_for: string[]
  waiting_for_count: number
  satisfied_count: number
}

describe('3.4: the preview of a small condition, leaf by leaf', () => {
  it('each item sees the rows earlier items left and its own; a run taken by the scheduler empties them', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 1})
      .consumer('report', {on: ['etl']})
      .build()
    const airflow = await airflowOf(db.knex)
    const out = (task: string) => w.asset(`etl.${task}.out_1`).name
    const report = async (task: string, how: 'write' | 'plan' = 'write') => {
      const item = await (how === 'plan' ? planOne : completeOne)(db.knex, w.ti('etl', task).id, {airflow})
      expect(item.result.outcome).toBe('completed')
      return (item.report!.downstream as Preview[]).find((dag) => dag.dag_id === 'report')!
    }

    // The first item reads the rows (the condition is new to the process).
    expect(await report('task_1')).toMatchObject({
      ready: false,
      waiting_for: [out('task_2'), out('task_3')],
      satisfied_count: 1,
    })
    // The plan's own statement (and a raced item's second read) asks leaf by leaf too.
    const [facts] = await airflow.store.readDownstream(airflow.db.executor, [w.asset(`etl.task_2.out_1`).id], [])
    expect(facts!.queued.assets.map((asset) => asset.name)).toEqual([out('task_1')])
    // Then leaf by leaf: the row task_1 left, and the one this statement queues.
    expect(await report('task_2')).toMatchObject({
      ready: false,
      waiting_for: [out('task_3')],
      waiting_for_count: 1,
      satisfied_count: 2,
    })
    // A plan (its own read-only statement) reads the same way.
    expect(await report('task_3', 'plan')).toMatchObject({ready: true, waiting_for: [], satisfied_count: 3})
    // The scheduler takes a run: the queue rows go, and the last task finds only its own.
    await db.knex('asset_dag_run_queue').where({target_dag_id: 'report'}).delete()
    expect(await report('task_3')).toMatchObject({
      ready: false,
      waiting_for: [out('task_1'), out('task_2')],
      waiting_for_count: 2,
      satisfied_count: 1,
    })
  })
})
