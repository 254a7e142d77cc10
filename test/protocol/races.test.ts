import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, waitUntilBlocked, whileRowLocked} from '../support/locks.js'
import {eventsOf, scenario, tiById, writeFootprint} from '../support/scenario.js'

/**
 * The protocol under real races on PostgreSQL. Sessions are ordered by what pg_stat_activity
 * reports (a backend waiting on a lock), never by sleeping. World of every test: DAG `etl`, task
 * `produce` running with two active outlets (see test/support/scenario.ts).
 */
type Connection = {query(sql: string, values?: unknown[]): Promise<{rows: Array<Record<string, unknown>>}>}

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0', 40)
})
afterAll(async () => db?.drop())

async function session(knex: Knex): Promise<{conn: Connection; pid: number; release(): Promise<void>}> {
  const conn = (await knex.client.acquireConnection()) as Connection
  const pid = (await conn.query('select pg_backend_pid() as pid')).rows[0]!.pid as number
  return {conn, pid, release: () => knex.client.releaseConnection(conn) as Promise<void>}
}

describe('races', () => {
  it('32 concurrent completions of one TI: exactly one commit and one set of events, the rest already_success', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    const results = await Promise.all(Array.from({length: 32}, () => completeOne(db.knex, target.id)))
    const outcomes = results.map((r) => r.result.outcome)
    expect(outcomes.filter((o) => o === 'completed')).toHaveLength(1)
    expect(outcomes.filter((o) => o === 'already_success')).toHaveLength(31)
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
    expect(await db.knex('log').where({dag_id: 'etl', task_id: 'produce', event: 'success'})).toHaveLength(1)
  })

  it.each([
    ['up_for_retry', {outcome: 'conflict', previousState: 'up_for_retry'}],
    ['failed', {outcome: 'conflict', previousState: 'failed'}],
    ['success', {outcome: 'already_success'}],
  ])(
    'another session holds the row lock and commits %s: the completion waits, then decides on that state with zero events',
    async (state, expected) => {
      const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
      const target = world.ti('etl')
      const footprint = await writeFootprint(db.knex)
      const result = await whileRowLocked(db.knex, target.id, async (holder) => {
        const completion = completeOne(db.knex, target.id)
        // Blocked on FOR UPDATE: registration is done by now, its events uncommitted.
        await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
        await holder.raw('update task_instance set state = ? where id = ?', [state, target.id])
        await holder.commit()
        return completion
      })
      expect(result.result).toEqual(expected)
      expect(result.timings.lockWaitMs).toBeGreaterThan(0)
      expect(result.events).toBe(0)
      expect(await eventsOf(db.knex, target)).toEqual([])
      const after = await writeFootprint(db.knex)
      expect({...after, success_tis: 0}).toEqual({...footprint, success_tis: 0})
    },
  )

  it('a task instance retried between the read and the lock (new try, expected state) is re-read, never completed on the stale read', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'failed'}).build()
    const target = world.ti('etl')
    const result = await whileRowLocked(db.knex, target.id, async (holder) => {
      const completion = completeOne(db.knex, target.id, {fromStates: ['running', 'failed']})
      await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      await holder.raw(`update task_instance set state = 'running', try_number = 2 where id = ?`, [target.id])
      await holder.commit()
      return completion
    })
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.attempts).toBe(2)
    const logs = await db.knex('log').where({dag_id: 'etl', task_id: 'produce', event: 'success'})
    expect(logs.map((l) => [l.try_number, JSON.parse(l.extra).airlock.previous_state])).toEqual([[2, 'running']])
  })

  it('backend terminated after registration: nothing of that attempt persists; the retry on a new session yields exactly one set', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    const result = await whileRowLocked(db.knex, target.id, async (holder) => {
      const completion = completeOne(db.knex, target.id)
      const first = await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      await db.knex.raw('select pg_terminate_backend(?)', [first])
      // The engine runs the whole transaction again on a new session (the server rolled the
      // first back): it registers again and queues behind the same holder.
      // (the terminated backend may still be listed for a moment)
      let second = first
      while (second === first) second = await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      expect(await writeFootprint(db.knex)).toEqual(footprint)
      await holder.rollback()
      return completion
    })
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.attempts).toBe(2)
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
    const rerun = await completeOne(db.knex, target.id)
    expect(rerun.result).toEqual({outcome: 'already_success'})
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })

  it('lock_timeout: retried, then failed with 55P03 and a clean rollback', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    await whileRowLocked(db.knex, target.id, async (holder) => {
      const result = await completeOne(db.knex, target.id, {
        lockTimeoutMs: 50,
        retry: {maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5},
      })
      expect(result.result).toMatchObject({outcome: 'failed', sqlstate: '55P03'})
      expect(result.attempts).toBe(3)
      expect(await writeFootprint(db.knex)).toEqual(footprint)
      await holder.rollback()
    })

    expect((await tiById(db.knex, target.id)).state).toBe('running')
  })
})

describe('queue key order: no deadlock between completions with overlapping assets', () => {
  const upsert = (conn: Connection, assetId: number) =>
    conn.query(
      `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at) values ($1, 'report', now())
       on conflict (asset_id, target_dag_id) do update set created_at = excluded.created_at`,
      [assetId],
    )

  /** `report` consumes both of etl's outlets: a completion of etl.produce upserts both queue keys. */
  async function overlappingAssets() {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2})
      .consumer('report', {on: ['etl']})
      .build()
    const [low, high] = world
      .assets('etl')
      .map((a) => a.id)
      .sort((x, y) => x - y) as [number, number]
    return {world, low, high}
  }

  it('negative control: two writers upserting the same keys in opposite orders DO deadlock (the test can see one)', async () => {
    const {low, high} = await overlappingAssets()
    const x = await session(db.knex)
    const y = await session(db.knex)
    try {
      await x.conn.query('begin')
      await y.conn.query('begin')
      await y.conn.query(`set local deadlock_timeout = '100ms'`).catch(() => undefined)
      await y.conn.query(`select 1`)
      await upsert(y.conn, high)
      await upsert(x.conn, low)
      const yWaits = upsert(y.conn, low).then(
        () => 'ok',
        (error: unknown) => (error as {code?: string}).code,
      )
      await waitUntilBlocked(db.knex, y.pid)
      const xWaits = upsert(x.conn, high).then(
        () => 'ok',
        (error: unknown) => (error as {code?: string}).code,
      )
      const codes = await Promise.race([yWaits, xWaits])
      expect(codes).toBe('40P01')
      await x.conn.query('rollback').catch(() => undefined)
      await y.conn.query('rollback').catch(() => undefined)
      await Promise.all([yWaits, xWaits])
    } finally {
      await x.release()
      await y.release()
    }
  })

  it('a completion never deadlocks with a writer taking the same keys in the opposite order', async () => {
    const {world, low, high} = await overlappingAssets()
    const target = world.ti('etl')
    const x = await session(db.knex)
    try {
      await x.conn.query('begin')
      await upsert(x.conn, low)
      // The completion's sorted upsert waits on `low` while holding nothing else…
      const completion = completeOne(db.knex, target.id)
      await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      // …so the opposite-order writer takes `high` without waiting: no cycle.
      await x.conn.query(`set local statement_timeout = '5s'`)
      await upsert(x.conn, high)
      await x.conn.query('commit')
      const result = await completion
      expect(result.result).toEqual({outcome: 'completed'})
      expect(result.attempts).toBe(1)
    } finally {
      await x.release()
    }
  })
})

describe('the event-to-commit window', () => {
  /** Completes `etl` while another session holds its row for 1.5 s; returns the result and how long after the hold began each event was stamped. */
  async function completeBehindHolder(lockSliceMs: number | null | undefined) {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    let completion: ReturnType<typeof completeOne> | undefined
    let heldFrom: Date | undefined
    await whileRowLocked(db.knex, target.id, async (holder) => {
      heldFrom = (await holder.raw<{rows: Array<{t: Date}>}>('select clock_timestamp() as t')).rows[0]!.t
      completion = completeOne(db.knex, target.id, {lockTimeoutMs: 10_000, lockSliceMs})
      await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      await holder.raw('select pg_sleep(1.5)')
    })
    const result = await completion!
    const stampedAfterHoldMs = (await eventsOf(db.knex, target)).map(
      (e) => (e.timestamp as Date).getTime() - heldFrom!.getTime(),
    )
    return {result, stampedAfterHoldMs}
  }

  it('a registration waiting for the row lock is redone in slices: its events are stamped after the holder let go', async () => {
    const {result, stampedAfterHoldMs} = await completeBehindHolder(undefined)
    expect(result.result.outcome).toBe('completed')
    expect(stampedAfterHoldMs).toHaveLength(2)
    // The last registration started at most one slice (200 ms) before the lock was free at 1.5 s.
    for (const ms of stampedAfterHoldMs) expect(ms).toBeGreaterThan(1000)
    expect(result.timings.stampToCommitMs).toEqual(expect.any(Number))
  })

  it('without slices the events keep the timestamp of the one registration, from before the wait', async () => {
    const {result, stampedAfterHoldMs} = await completeBehindHolder(null)
    expect(result.result.outcome).toBe('completed')
    for (const ms of stampedAfterHoldMs) expect(ms).toBeLessThan(1000)
  })
})
