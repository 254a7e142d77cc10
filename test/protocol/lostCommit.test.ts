import knexFactory, {type Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, scenario, tiById} from '../support/scenario.js'
import {startCommitCutter, type CommitCutter} from '../support/tcpProxy.js'

/**
 * A connection lost during COMMIT is indeterminate. The protocol must re-read and
 * report the truth, never redo blindly.
 */
describe('connection lost during COMMIT', () => {
  let db: TestDatabase
  let cutter: CommitCutter
  let viaProxy: Knex

  beforeAll(async () => {
    db = await createTestDatabase('3.0')
    const url = new URL(db.url)
    cutter = await startCommitCutter({host: url.hostname, port: Number(url.port || 5432)})
    url.hostname = '127.0.0.1'
    url.port = String(cutter.port)
    viaProxy = knexFactory({
      client: 'pg',
      connection: url.toString(),
      pool: {min: 0, max: 2},
      log: {warn() {}, error() {}, debug() {}, deprecate() {}},
    })
  })
  afterAll(async () => {
    await viaProxy?.destroy()
    await cutter?.close()
    await db?.drop()
  })
  it('when the COMMIT reached the server: reports completed after re-reading, and wrote one set', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    cutter.arm('after')
    const result = await completeOne(viaProxy, target.id)
    expect(cutter.cuts).toBe(1)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.attempts).toBe(1)
    expect((await tiById(db.knex, target.id)).state).toBe('success')
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })

  it('when the COMMIT never arrived: reports failed, "safe to run again", nothing written, and a rerun completes once', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    cutter.arm('before')
    const result = await completeOne(viaProxy, target.id)
    expect(result.result).toMatchObject({outcome: 'failed', message: expect.stringContaining('safe to run again')})
    expect((await tiById(db.knex, target.id)).state).toBe('running')
    expect(await eventsOf(db.knex, target)).toEqual([])

    const rerun = await completeOne(viaProxy, target.id)
    expect(rerun.result).toEqual({outcome: 'completed'})
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })
})
