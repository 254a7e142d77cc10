import type {Knex} from 'knex'
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'

import type {Database} from '../../src/engine/engine.js'
import {classifyDatabaseError, engineFor} from '../../src/engine/engines.js'
import {postgresEngine} from '../../src/engine/postgres/postgresEngine.js'
import {runTransaction} from '../../src/engine/transaction.js'
import {AirlockError} from '../../src/errors.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked} from '../support/locks.js'

/**
 * The one transaction engine every writer runs on, on real PostgreSQL and without Airflow's
 * schema: what it commits, what it rolls back, the SET LOCALs it starts with, what it retries and
 * what it reports instead of throwing.
 */
let test: TestDatabase
let db: Database
const locals = {lockTimeoutMs: 5000, statementTimeoutMs: 30_000, applicationName: 'airlock:test:engine'}
const fastRetry = {maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5}
const never = () => Promise.resolve(false)

beforeAll(async () => {
  test = await createTestDatabase('empty')
  db = postgresEngine.wrap(test.knex)
  await test.knex.raw('create table item (id int primary key, note text)')
})
afterAll(async () => test?.drop())
beforeEach(async () => {
  await test.knex.raw('truncate item')
  await test.knex.raw(`insert into item values (1, 'first')`)
})

const insert = (id: number) => ({text: 'insert into item (id, note) values ($1, $2)', values: [id, 'written']})
const notes = async (knex: Knex) => (await knex('item').orderBy('id').pluck('id')) as number[]

describe('write transaction limits', () => {
  it('a write transaction left idle past its idle limit is ended by the server and leaves nothing', async () => {
    const idle = db.transaction({...locals, idleInTransactionTimeoutMs: 200}, async (tx) => {
      await tx.query(insert(7))
      // A stopped process: nothing happens on the connection for longer than the limit.
      await new Promise((resolve) => setTimeout(resolve, 1000))
      await tx.query({text: 'select 1'})
    })
    const error: unknown = await idle.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(classifyDatabaseError(error).kind).toBe('unreachable')
    expect(await notes(test.knex)).toEqual([1])
  })

  it('every write transaction carries the default idle limit, the session outside it the read limits', async () => {
    const seen = await db.transaction(locals, async (tx) =>
      tx.query<{v: string}>({text: "select current_setting('idle_in_transaction_session_timeout') as v"}),
    )
    expect(seen[0]!.v).toBe('3s')
  })

  it('genericPlans runs the transaction on generic plans from the first execution, and only that transaction', async () => {
    const setting = {text: "select current_setting('plan_cache_mode') as v"}
    const inside = await db.transaction({...locals, genericPlans: true}, async (tx) => {
      const [mode] = await tx.query<{v: string}>(setting)
      // A named statement executed once: its one plan is the generic one (no custom plans first).
      await tx.query({name: 'generic_probe', text: 'select id from item where id = $1', values: [1]})
      const [plans] = await tx.query<{generic: string; custom: string}>({
        text: `select generic_plans::text as generic, custom_plans::text as custom from pg_prepared_statements where name = 'generic_probe'`,
      })
      await tx.query({text: 'deallocate generic_probe'})
      return {mode: mode!.v, plans}
    })
    expect(inside).toEqual({mode: 'force_generic_plan', plans: {generic: '1', custom: '0'}})
    const [after] = await db.transaction(locals, (tx) => tx.query<{v: string}>(setting))
    expect(after!.v).toBe('auto')
  })
})

describe('sessions airlock opens', () => {
  it('read limits on every statement outside a write transaction, and no JIT compiling', async () => {
    const opened = await postgresEngine.open(test.url, {verb: 'test'})
    try {
      const [row] = await opened.executor.query<{lock: string; stmt: string; jit: string; app: string}>({
        text: `select current_setting('lock_timeout') as lock, current_setting('statement_timeout') as stmt, current_setting('jit') as jit, current_setting('application_name') as app`,
      })
      expect(row).toEqual({lock: '10s', stmt: '5min', jit: 'off', app: 'airlock:test'})
    } finally {
      await opened.close()
    }
  })
})

describe('runTransaction', () => {
  it('a commit decision keeps what the work wrote; a rollback decision leaves nothing and is returned as data', async () => {
    const kept = await runTransaction(db, {
      locals,
      dryRun: false,
      unknownCommitAdvice: '',
      wasCommitted: never,
      run: async (tx) => (await tx.query(insert(2)), {commit: 'kept'}),
    })
    expect(kept).toMatchObject({result: 'kept', attempts: 1})
    const undone = await runTransaction(db, {
      locals,
      dryRun: false,
      unknownCommitAdvice: '',
      wasCommitted: never,
      run: async (tx) => (await tx.query(insert(3)), {rollback: 'undone'}),
    })
    expect(undone).toMatchObject({result: 'undone', attempts: 1})
    expect(await notes(test.knex)).toEqual([1, 2])
  })

  it('a dry run takes the same path and rolls back, whether the work commits itself or returns a commit decision', async () => {
    const returned = await runTransaction(db, {
      locals,
      dryRun: true,
      unknownCommitAdvice: '',
      wasCommitted: never,
      run: async (tx) => (await tx.query(insert(2)), {commit: 'would'}),
    })
    const committedItself = await runTransaction<string>(db, {
      locals,
      dryRun: true,
      unknownCommitAdvice: '',
      wasCommitted: never,
      async run(tx) {
        await tx.query(insert(3))
        await tx.commit('would too')
        return {commit: 'would too'}
      },
    })
    expect([returned.result, committedItself.result]).toEqual(['would', 'would too'])
    expect(await notes(test.knex)).toEqual([1])
  })

  it('starts at READ COMMITTED with the SET LOCAL timeouts and the session tag, which end with the transaction', async () => {
    const seen = await runTransaction(db, {
      locals: {lockTimeoutMs: 1234, statementTimeoutMs: 5678, applicationName: 'airlock:test:' + 'x'.repeat(80)},
      dryRun: false,
      unknownCommitAdvice: '',
      wasCommitted: never,
      async run(tx) {
        const [row] = await tx.query<Record<string, string>>({
          text: `select current_setting('transaction_isolation') as iso, current_setting('lock_timeout') as lock, current_setting('statement_timeout') as stmt, current_setting('application_name') as app`,
        })
        return {commit: row!}
      },
    })
    expect(seen.result).toMatchObject({iso: 'read committed', lock: '1234ms', stmt: '5678ms'})
    expect((seen.result as Record<string, string>).app).toBe(('airlock:test:' + 'x'.repeat(80)).slice(0, 63))
    const [after] = await db.executor.query<{lock: string}>({text: `select current_setting('lock_timeout') as lock`})
    expect(after!.lock).not.toBe('1234ms')
  })

  it('a lock timeout is retried up to the policy, then reported failed with 55P03, nothing written', async () => {
    const holder = await test.knex.transaction()
    try {
      await holder.raw('select 1 from item where id = 1 for update')
      const waiting = runTransaction(db, {
        locals: {...locals, lockTimeoutMs: 50, applicationName: 'airlock:test:waiter'},
        dryRun: false,
        retry: fastRetry,
        unknownCommitAdvice: '',
        wasCommitted: never,
        async run(tx) {
          await tx.query(insert(2))
          await tx.query({text: 'select 1 from item where id = 1 for update'})
          return {commit: 'locked'}
        },
      })
      await waitUntilAppBlocked(test.knex, 'airlock:test:waiter')
      const result = await waiting
      expect(result.attempts).toBe(3)
      expect(result.result).toMatchObject({outcome: 'failed', sqlstate: '55P03'})
    } finally {
      await holder.rollback()
    }

    expect(await notes(test.knex)).toEqual([1])
  })

  it('a decision taken, then the session killed before the ROLLBACK: the decided outcome is reported, not failed', async () => {
    const result = await runTransaction(db, {
      locals,
      dryRun: false,
      unknownCommitAdvice: '',
      wasCommitted: never,
      run: async (tx) => {
        const [own] = await tx.query<{pid: number}>({text: 'select pg_backend_pid() as pid'})
        await test.knex.raw('select pg_terminate_backend(?)', [own!.pid])
        return {rollback: 'already_success'}
      },
    })
    expect(result).toMatchObject({result: 'already_success', attempts: 1})
  })

  it('a connection whose ROLLBACK failed is never handed out again: the next transaction gets a live one', async () => {
    const owned = await postgresEngine.open(test.url, {verb: 'test', poolSize: 1})
    try {
      const pids: number[] = []
      const killOwnBackend = async (tx: {query<Row>(s: {text: string}): Promise<Row[]>}) => {
        const [own] = await tx.query<{pid: number}>({text: 'select pg_backend_pid() as pid'})
        pids.push(own!.pid)
        await test.knex.raw('select pg_terminate_backend(?)', [own!.pid])
        return {rollback: 'already_success'}
      }
      const options = {locals, dryRun: false, unknownCommitAdvice: '', wasCommitted: never}
      expect(await runTransaction(owned, {...options, run: killOwnBackend})).toMatchObject({result: 'already_success'})
      // One connection in the pool: had the dead one come back, this would fail as unreachable.
      expect(await runTransaction(owned, {...options, run: killOwnBackend})).toMatchObject({result: 'already_success'})
      expect(pids).toHaveLength(2)
      expect(pids[1]).not.toBe(pids[0])
    } finally {
      await owned.close()
    }
  })

  it('lock waits in slices: each slice that expires runs the work again at once, until the lock timeout is spent', async () => {
    const holder = await test.knex.transaction()
    try {
      await holder.raw('select * from item where id = 1 for update')
      let runs = 0
      const result = await runTransaction(db, {
        locals: {...locals, lockTimeoutMs: 500},
        lockSliceMs: 100,
        retry: {maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1},
        dryRun: false,
        unknownCommitAdvice: '',
        wasCommitted: never,
        run: async (tx) => {
          runs++
          await tx.query({text: 'select * from item where id = 1 for update'})
          return {commit: 'locked'}
        },
      })
      expect(result.result).toMatchObject({outcome: 'failed', sqlstate: '55P03'})
      // 500 ms in 100 ms slices: four expired slices and a last wait for what was left.
      expect(runs).toBeGreaterThanOrEqual(4)
      expect(runs).toBeLessThanOrEqual(6)
    } finally {
      await holder.rollback()
    }
  })

  it('a stop while the work waits for a lock (queryUntilStopped): the wait is cancelled on the server, rolled back, interrupted, never retried', async () => {
    const holder = await test.knex.transaction()
    try {
      await holder.raw('select 1 from item where id = 1 for update')
      const stop = new AbortController()
      let runs = 0
      const waiting = runTransaction(db, {
        // A lock timeout the holder outlasts: only the cancel can end this wait.
        locals: {...locals, lockTimeoutMs: 600_000, applicationName: 'airlock:test:stopped'},
        lockSliceMs: 300_000,
        retry: {maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1},
        stop: stop.signal,
        waitingFor: 'the row lock',
        dryRun: false,
        unknownCommitAdvice: '',
        wasCommitted: never,
        async run(tx) {
          runs++
          await tx.query(insert(2))
          await tx.queryUntilStopped({text: 'select 1 from item where id = 1 for update'})
          return {commit: 'locked'}
        },
      })
      await waitUntilAppBlocked(test.knex, 'airlock:test:stopped')
      stop.abort('SIGINT')
      const result = await waiting
      expect(result.result).toMatchObject({outcome: 'failed', kind: 'interrupted', sqlstate: '57014'})
      expect((result.result as {message: string}).message).toMatch(
        /^interrupted \(SIGINT\) while waiting for the row lock: rolled back, nothing written/,
      )
      expect(runs).toBe(1)
      expect(result.attempts).toBe(1)
      // Returned while the holder still holds the row: the wait was given up, not outlasted.
      expect(holder.isCompleted()).toBe(false)
    } finally {
      await holder.rollback()
    }
    expect(await notes(test.knex)).toEqual([1])
  })

  it('a stop after a lock timeout: no retry starts, the item is interrupted with nothing written', async () => {
    const holder = await test.knex.transaction()
    try {
      await holder.raw('select 1 from item where id = 1 for update')
      const stop = new AbortController()
      let runs = 0
      const result = await runTransaction(db, {
        locals: {...locals, lockTimeoutMs: 50},
        retry: {maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1},
        stop: stop.signal,
        dryRun: false,
        unknownCommitAdvice: '',
        wasCommitted: never,
        async run(tx) {
          runs++
          await tx.query(insert(2))
          // The signal lands while this attempt's wait times out: the retry it would start is not.
          stop.abort('SIGTERM')
          await tx.query({text: 'select 1 from item where id = 1 for update'})
          return {commit: 'locked'}
        },
      })
      expect(result.result).toMatchObject({outcome: 'failed', kind: 'interrupted'})
      expect((result.result as {message: string}).message).toContain(
        'interrupted (SIGTERM) before retrying (its lock wait timed out): rolled back, nothing written',
      )
      expect(runs).toBe(1)
    } finally {
      await holder.rollback()
    }
    expect(await notes(test.knex)).toEqual([1])
  })

  it('a stop once the lock is granted cancels nothing: the transaction goes on to its COMMIT', async () => {
    const stop = new AbortController()
    const result = await runTransaction(db, {
      locals,
      stop: stop.signal,
      dryRun: false,
      unknownCommitAdvice: '',
      wasCommitted: never,
      async run(tx) {
        await tx.queryUntilStopped({text: 'select 1 from item where id = 1 for update'})
        stop.abort('SIGINT')
        // Past the lock: the recheck and the write run on, whatever the signal.
        await tx.query({text: 'select pg_sleep(0.05)'})
        await tx.query(insert(2))
        return {commit: 'locked'}
      },
    })
    expect(result.result).toBe('locked')
    expect(await notes(test.knex)).toEqual([1, 2])
  })

  it('retries what the writer calls retryable, from the first statement', async () => {
    let runs = 0
    const result = await runTransaction(db, {
      locals,
      dryRun: false,
      retry: fastRetry,
      retryAlso: (error) => error instanceof Error && error.message === 'stale read',
      unknownCommitAdvice: '',
      wasCommitted: never,
      async run(tx) {
        runs++
        await tx.query(insert(2))
        if (runs === 1) throw new Error('stale read')
        return {commit: 'second time'}
      },
    })
    expect(result).toMatchObject({result: 'second time', attempts: 2})
    expect(await notes(test.knex)).toEqual([1, 2])
  })

  it("a failure the writer retries to the last attempt ends as the writer's own outcome, when it names one", async () => {
    let runs = 0
    const isBusy = (error: unknown) => error instanceof Error && error.message === 'held'
    const work = (exhausted?: (error: unknown) => string | undefined) =>
      runTransaction<string>(db, {
        locals,
        dryRun: false,
        retry: fastRetry,
        retryAlso: isBusy,
        exhausted,
        unknownCommitAdvice: '',
        wasCommitted: never,
        async run(tx) {
          runs++
          await tx.query(insert(10 + runs))
          throw new Error('held')
        },
      })
    const own = await work((error) => (isBusy(error) ? 'busy' : undefined))
    expect(own).toMatchObject({result: 'busy', attempts: fastRetry.maxAttempts})
    expect(runs).toBe(fastRetry.maxAttempts)
    const plain = await work((error) => (isBusy(error) ? undefined : 'other'))
    expect(plain.result).toMatchObject({outcome: 'failed', message: 'held'})
    expect(await notes(test.knex)).toEqual([1])
  })

  it('any other server error is not retried: failed with its SQLSTATE, and the pooled connection stays usable', async () => {
    const result = await runTransaction(db, {
      locals,
      dryRun: false,
      retry: fastRetry,
      unknownCommitAdvice: '',
      wasCommitted: never,
      run: async (tx) => (await tx.query(insert(1)), {commit: 'duplicate'}),
    })
    expect(result).toMatchObject({attempts: 1, result: {outcome: 'failed', sqlstate: '23505'}})
    const again = await runTransaction(db, {
      locals,
      dryRun: false,
      unknownCommitAdvice: '',
      wasCommitted: never,
      run: async (tx) => (await tx.query(insert(2)), {commit: 'ok'}),
    })
    expect(again.result).toBe('ok')
  })
})

describe('engineFor: the engine seam', () => {
  it('PostgreSQL URLs get the PostgreSQL engine', () => {
    expect(engineFor('postgresql://u@h/d').name).toBe('postgres')
    expect(engineFor('postgres://u@h/d').name).toBe('postgres')
  })

  it('MySQL is refused with exit 8, saying it is not supported yet', () => {
    const error = (() => {
      try {
        engineFor('mysql://u:secret@h/airflow', 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN')
      } catch (caught) {
        return caught as AirlockError
      }
      throw new Error('not refused')
    })()
    expect(error).toBeInstanceOf(AirlockError)
    expect(error.exit).toBe(8)
    expect(error.message).toMatch(/MySQL.*not support.*yet/)
    expect(error.message).toContain('AIRFLOW__DATABASE__SQL_ALCHEMY_CONN')
    expect(error.message).not.toContain('secret')
  })

  it('any other scheme is a usage error', () => {
    expect(() => engineFor('sqlite:////tmp/x.db')).toThrow(expect.objectContaining({exit: 2}) as Error)
  })

  it('classifies failures by code: a reset connection and a refused login are the network and the server, not a bug', () => {
    // A lost connection, or a server full for now, is worth another attempt; a wrong password is not.
    expect(classifyDatabaseError(Object.assign(new Error('read ECONNRESET'), {code: 'ECONNRESET'}))).toEqual({
      kind: 'unreachable',
      code: null,
      connectionLost: true,
    })
    expect(classifyDatabaseError(Object.assign(new Error('terminating connection'), {code: '57P01'}))).toEqual({
      kind: 'unreachable',
      code: '57P01',
      connectionLost: true,
    })
    expect(classifyDatabaseError(Object.assign(new Error('too many clients already'), {code: '53300'}))).toEqual({
      kind: 'login',
      code: '53300',
      connectionLost: true,
    })
    expect(classifyDatabaseError(Object.assign(new Error('password authentication failed'), {code: '28P01'}))).toEqual({
      kind: 'login',
      code: '28P01',
    })
    expect(classifyDatabaseError(Object.assign(new Error('deadlock detected'), {code: '40P01'}))).toEqual({
      kind: 'retryable',
      code: '40P01',
    })
    expect(classifyDatabaseError(new Error('a bug'))).toEqual({kind: 'other', code: null})
  })
})
