import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createTestDatabase, type TestDatabase} from './database.js'
import {waitUntilBlocked} from './locks.js'

describe("waitUntilBlocked (the race tests' ordering primitive)", () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase('3.0', 4)
    await database.knex.raw(`insert into log (dttm, event) values (now(), 'probe')`)
  })
  afterAll(async () => database?.drop())

  it('returns once a session waits on a row lock held by another, and not before', async () => {
    const holder = await database.knex.client.acquireConnection()
    const waiter = await database.knex.client.acquireConnection()
    try {
      await holder.query('begin')
      await holder.query(`select id from log where event = 'probe' for update`)
      const waiterPid = (await waiter.query('select pg_backend_pid() as pid')).rows[0].pid as number

      // Not blocked yet: the helper must time out rather than pass.
      await expect(waitUntilBlocked(database.knex, waiterPid, 200)).rejects.toThrow(/not blocked/)

      await waiter.query('begin')
      const blocked = waiter.query(`select id from log where event = 'probe' for update`)
      await waitUntilBlocked(database.knex, waiterPid)
      await holder.query('commit')
      await blocked
      await waiter.query('commit')
    } finally {
      await database.knex.client.releaseConnection(holder)
      await database.knex.client.releaseConnection(waiter)
    }
  })
})
