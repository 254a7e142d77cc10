import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli, startCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked} from '../support/locks.js'
import {countRows, scenario} from '../support/scenario.js'

/**
 * What the server does to a command outside its items' transactions (the selection, its count, the
 * schema check): a named exit code with the cause, never "a bug" (exit 1), and never a wait without
 * end. A second session holds an ACCESS EXCLUSIVE lock on task_instance, as a migration or a
 * VACUUM FULL would.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0', 4)
  await scenario(db.knex).producer('etl', {tasks: 2, outlets: 1, state: 'running'}).build()
})
afterAll(async () => db?.drop())

/** Runs `fn` while another session holds ACCESS EXCLUSIVE on task_instance; releases it after. */
async function whileTableLocked<T>(fn: () => Promise<T>): Promise<T> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const lockTaken = new Promise<void>((resolve) => (locked = resolve))
  const holder = db.knex.transaction(async (trx: Knex.Transaction) => {
    await trx.raw('lock table task_instance in access exclusive mode')
    locked()
    await released
  })
  await lockTaken
  try {
    return await fn()
  } finally {
    release()
    await holder
  }
}

describe('failures outside an item transaction', () => {
  it('a selection queued behind a table lock gives up after --lock-timeout: exit 5, LOCK_TIMEOUT, nothing written', async () => {
    const before = await countRows(db.knex, 'asset_event')
    const result = await whileTableLocked(() =>
      runCli(['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--lock-timeout', '300ms', '--json']),
    )
    const out = envelope(result) as {status: number; error: {code: string; message: string}}
    expect(result.code).toBe(5)
    expect(out.error.code).toBe('LOCK_TIMEOUT')
    expect(out.error.message).toContain('55P03')
    expect(await countRows(db.knex, 'asset_event')).toBe(before)
  })

  it('the backend terminated at every read of the selection: read again a bounded number of times, then exit 7 with the SQLSTATE, not exit 1', async () => {
    // Sessions ended, by pid: a killed session can still show as blocked for a moment, and is
    // counted once.
    const terminated = new Set<number>()
    const result = await whileTableLocked(async () => {
      const running = startCli([
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--yes',
        '--lock-timeout',
        '60s',
        '--json',
      ])
      let ended = false
      void running.finished.then(() => (ended = true))
      // A read is retried on a lost session (a new connection each time): end every one of them.
      while (!ended) {
        const pid = await waitUntilAppBlocked(db.knex, 'airlock:complete', 500).catch(() => undefined)
        if (pid === undefined) continue
        await db.knex.raw('select pg_terminate_backend(?)', [pid])
        terminated.add(pid)
      }
      return running.finished
    })
    const out = envelope(result) as {status: number; error: {code: string; message: string}}
    expect(result.code).toBe(7)
    expect(out.error.code).toBe('DATABASE_UNREACHABLE')
    expect(out.error.message).toContain('57P01')
    // The first read and at most three more, as a writer's transaction is tried
    // (defaultRetryPolicy). The test sees fewer when an attempt fails on a connection that died
    // before it was ever blocked (the pool handed out a session the last kill had ended).
    expect(terminated.size).toBeGreaterThanOrEqual(2)
    expect(terminated.size).toBeLessThanOrEqual(4)
  })
})
