import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {NoAnswer, RoundTripAbandoned, type Database, type OpenOptions} from '../../src/engine/engine.js'
import {classifyDatabaseError} from '../../src/engine/engines.js'
import {postgresEngine} from '../../src/engine/postgres/postgresEngine.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {startFreezingProxy, type FreezingProxy} from '../support/freezingProxy.js'

/**
 * The answer watch over every round trip of a pool airlock opens (src/engine/postgres/
 * answerWatch.ts), on real PostgreSQL through a proxy that can freeze: a silent path is given up,
 * a slow statement on a live server never is, and the server's own statement_timeout always
 * answers before the watch's deadline on a live path. No timing is asserted: each round trip
 * either settles the way it should or the test times out.
 */
let test: TestDatabase
let proxy: FreezingProxy | undefined
const opened: Database[] = []
beforeAll(async () => {
  test = await createTestDatabase('empty')
})
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()))
  await proxy?.close()
  proxy = undefined
})
afterAll(async () => test?.drop())

async function open(url: string, options: Partial<OpenOptions> = {}): Promise<{db: Database; log: string[]}> {
  const log: string[] = []
  const db = await postgresEngine.open(url, {
    verb: 'test',
    connectTimeoutMs: 500,
    log: (line) => log.push(line),
    ...options,
  })
  opened.push(db)
  return {db, log}
}

const failureOf = (pending: Promise<unknown>): Promise<unknown> =>
  pending.then(
    () => undefined,
    (error: unknown) => error,
  )

describe('the answer watch', () => {
  it('a statement slower than the connect timeout on a live server runs to its end: the server answers the question', async () => {
    const {db, log} = await open(test.url)
    const rows = await db.executor.query<{done: string}>({text: "select pg_sleep(1.5), 'done' as done"})
    expect(rows).toEqual([{pg_sleep: '', done: 'done'}])
    expect(log.some((line) => line.startsWith('the server answers a new connection'))).toBe(true)
  })

  it("on a live path the server's own statement_timeout answers first (57014), never the watch", async () => {
    const {db} = await open(test.url, {statementTimeoutMs: 1000})
    const error = await failureOf(db.executor.query({text: 'select pg_sleep(5)'}))
    expect(error).not.toBeInstanceOf(NoAnswer)
    expect(classifyDatabaseError(error)).toMatchObject({kind: 'timeout', code: '57014'})
  })

  it('a frozen path: given up once a new connection gets no answer either, as unreachable and not worth a retry', async () => {
    proxy = await startFreezingProxy(new URL(test.url))
    const {db} = await open(proxy.url)
    const frozen = proxy.freezeAt('pg_sleep(0.1)')
    const error = await failureOf(db.executor.query({text: 'select pg_sleep(0.1)'}))
    await frozen
    expect(error).toBeInstanceOf(NoAnswer)
    expect((error as NoAnswer).serverSilent).toBe(true)
    expect(classifyDatabaseError(error)).toEqual({kind: 'unreachable', code: null, serverSilent: true})
  })

  it('a COMMIT on a frozen path: given up too, so the transaction engine can say the commit is unknown', async () => {
    proxy = await startFreezingProxy(new URL(test.url))
    const {db} = await open(proxy.url)
    await db.executor.query({text: 'create table if not exists kept (id int)'})
    const frozen = proxy.freezeAt('commit\u0000')
    const error = await failureOf(
      db.transaction(
        {lockTimeoutMs: 1000, statementTimeoutMs: 30_000, applicationName: 'airlock:test:frozen'},
        async (tx) => {
          await tx.query({text: 'insert into kept values (1)'})
        },
      ),
    )
    await frozen
    expect(error).toBeInstanceOf(NoAnswer)
    // The COMMIT reached the server, which committed: only its answer was lost.
    expect(await test.knex('kept').pluck('id')).toEqual([1])
  })

  it('one connection silent while the server answers new ones: given up past statement_timeout and the connect timeout, as a lost connection another may replace', async () => {
    proxy = await startFreezingProxy(new URL(test.url))
    const {db, log} = await open(proxy.url, {statementTimeoutMs: 1000})
    await db.executor.query({text: 'select 1'})
    proxy.freeze('open')
    const error = await failureOf(db.executor.query({text: 'select 2'}))
    expect(error).toBeInstanceOf(NoAnswer)
    expect((error as NoAnswer).serverSilent).toBe(false)
    expect(classifyDatabaseError(error)).toEqual({kind: 'unreachable', code: null, connectionLost: true})
    expect(log.some((line) => line.startsWith('the server answers a new connection'))).toBe(true)
    // The connection given up is never handed out again: the next statement runs on a new one.
    expect(await db.executor.query<{n: number}>({text: 'select 3 as n'})).toEqual([{n: 3}])
  })

  it('abandon: a round trip still waiting when the run gives up on the server ends at once, and none starts after', async () => {
    proxy = await startFreezingProxy(new URL(test.url))
    const abandon = new AbortController()
    // A connect timeout longer than the test: only abandon can end the wait.
    const {db} = await open(proxy.url, {connectTimeoutMs: 600_000, abandon: abandon.signal})
    const frozen = proxy.freezeAt('pg_sleep(0.2)')
    const waiting = failureOf(db.executor.query({text: 'select pg_sleep(0.2)'}))
    await frozen
    abandon.abort('SIGINT')
    const error = await waiting
    expect(error).toBeInstanceOf(RoundTripAbandoned)
    expect(classifyDatabaseError(error)).toEqual({kind: 'interrupted', code: null})
    expect(await failureOf(db.executor.query({text: 'select 1'}))).toBeInstanceOf(RoundTripAbandoned)
  })
})
