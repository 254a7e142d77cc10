import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {eventsOf, retryAsAirflowDoes, scenario, tiById, writeFootprint} from '../support/scenario.js'

/**
 * Airflow 3 gives every try of a task instance a new id. A completion that named (or selected)
 * the old id must find the current try by its key and report that try, never a bare not_found.
 * World of every test: DAG `etl`, task `produce` with two active outlets, in the state stated.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0', 8)
})
afterAll(async () => db?.drop())

/**
 * One completion of `tiId` that has registered for that try and waits for its row lock while
 * Airflow retries the task instance (new id, `state`); returns its result and the new try's id.
 */
async function completeWhileRetried(tiId: string, state: string) {
  let newId = ''
  const result = await whileRowLocked(db.knex, tiId, async (holder) => {
    const completion = completeOne(db.knex, tiId)
    await waitUntilAppBlocked(db.knex, `airlock:complete:${tiId}`)
    newId = await retryAsAirflowDoes(holder, tiId, state)
    await holder.commit()
    return completion
  })
  return {result, newId}
}

describe('a task instance that got a new try (a new id)', () => {
  it('between the read and the lock, now running: the new try is completed, with one set of events, none for the old try', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'running'}).build()
    const old = world.ti('etl')
    const {result, newId} = await completeWhileRetried(old.id, 'running')
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.ti?.id).toBe(newId)
    expect(result.attempts).toBe(2)
    expect((await tiById(db.knex, newId)).state).toBe('success')
    const events = await eventsOf(db.knex, old)
    expect(events).toHaveLength(2)
    const logs = await db.knex('log').where({dag_id: 'etl', task_id: 'produce', event: 'success'})
    expect(logs.map((l) => l.try_number)).toEqual([2])
  })

  it('between the read and the lock, now queued: conflict naming the new try and its state, nothing written', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'running'}).build()
    const old = world.ti('etl')
    const before = await writeFootprint(db.knex)
    const {result, newId} = await completeWhileRetried(old.id, 'queued')
    expect(result.result).toEqual({outcome: 'conflict', previousState: 'queued'})
    expect(result.ti?.id).toBe(newId)
    expect(await eventsOf(db.knex, old)).toEqual([])
    expect(await writeFootprint(db.knex)).toEqual(before)
  })

  it('an id of an earlier try, named explicitly: the current try is reported (completed when in --from-state)', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'running'}).build()
    const old = world.ti('etl')
    const newId = await retryAsAirflowDoes(db.knex, old.id, 'running')
    const result = await completeOne(db.knex, old.id)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.ti?.id).toBe(newId)
    expect(await eventsOf(db.knex, old)).toHaveLength(2)
  })

  it('an id nobody ever had is still not_found', async () => {
    await scenario(db.knex).producer('etl', {outlets: 2, state: 'running'}).build()
    const result = await completeOne(db.knex, '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a')
    expect(result.result).toEqual({
      outcome: 'not_found',
      detail: expect.stringContaining('no archived try has this id'),
    })
  })
})
