import {randomBytes} from 'node:crypto'

import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import type {LockAudit} from '../../src/audit/auditLocks.js'
import type {TaskInstanceHolder} from '../../src/audit/lockHolders.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilBlocked} from '../support/locks.js'
import {scenario, type World} from '../support/scenario.js'

/**
 * Holders of task_instance row locks that nobody waits for, against real sessions. World: DAG
 * etl with task_1…task_3 running. The file's first tests run before pgrowlocks is installed in
 * its database; the last ones install it where the server offers it (a PostgreSQL without the
 * contrib extensions does not: there they check the report says the row is unknown).
 */
type Connection = {query(sql: string, values?: unknown[]): Promise<{rows: Array<Record<string, unknown>>}>}
let db: TestDatabase
let world: World
const open: Array<{conn: Connection; pid: number}> = []

beforeAll(async () => {
  db = await createTestDatabase('3.0', 8)
  world = await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
})
afterAll(async () => db?.drop())
afterEach(async () => {
  for (const {conn, pid} of open.splice(0)) {
    // A holder still running its statement would finish it before the rollback: cancel it first.
    await db.knex.raw('select pg_cancel_backend(?)', [pid])
    await conn.query('rollback').catch(() => undefined)
    await db.knex.client.releaseConnection(conn)
  }
})

async function session(): Promise<{conn: Connection; pid: number}> {
  const conn = (await db.knex.client.acquireConnection()) as Connection
  const pid = (await conn.query('select pg_backend_pid() as pid')).rows[0]!.pid as number
  open.push({conn, pid})
  return {conn, pid}
}

/** A session that locks `tiId`'s row, then runs a long statement (active, nobody waiting on it). */
async function activeHolder(tiId: string, applicationName?: string) {
  const holder = await session()
  await holder.conn.query('begin')
  if (applicationName) await holder.conn.query(`select set_config('application_name', $1, true)`, [applicationName])
  await holder.conn.query('select 1 from task_instance where id = $1 for update', [tiId])
  void holder.conn.query('select pg_sleep(60)').catch(() => undefined)
  await expect
    .poll(
      async () =>
        (await db.knex.raw(`select wait_event from pg_stat_activity where pid = ? and state = 'active'`, [holder.pid]))
          .rows[0]?.wait_event,
      {timeout: 5000},
    )
    .toBe('PgSleep')
  return holder
}

const audit = async (...args: string[]) => {
  const result = await runCli(['audit-locks', '--database-url', db.url, '--samples', '1', '--json', ...args])
  return (envelope(result) as {result: LockAudit}).result
}

const holderOf = (report: LockAudit, pid: number): TaskInstanceHolder | undefined =>
  report.task_instance_holders.find((holder) => holder.pid === pid)

const named = (ti: {id: string; dag_id: string; run_id: string; task_id: string; map_index: number}) => ({
  id: ti.id,
  dag_id: ti.dag_id,
  run_id: ti.run_id,
  task_id: ti.task_id,
  map_index: ti.map_index,
})

describe('audit-locks: holders nobody waits for, without pgrowlocks', () => {
  it('an active holder is listed, its row said to be unknown rather than guessed', async () => {
    const holder = await activeHolder(world.ti('etl', 'task_1').id)
    const report = await audit()
    expect(report.trees).toEqual([])
    expect(report.visibility.pgrowlocks).toBe('not_installed')
    expect(holderOf(report, holder.pid)).toMatchObject({
      state: 'active',
      blocking: 0,
      query: 'select pg_sleep(60)',
      held_rows: {source: 'unknown', task_instances: [], note: 'row unknown (install pgrowlocks to name it)'},
    })
    const table = await runCli(['audit-locks', '--database-url', db.url, '--samples', '1'])
    expect(table.stdout).toContain('Holding task_instance row locks')
    expect(table.stdout).toContain('row unknown (install pgrowlocks to name it)')
  })

  it("airlock's own active holder is named by its tag", async () => {
    const target = world.ti('etl', 'task_2')
    const holder = await activeHolder(target.id, `airlock:complete:${target.id}`)
    const report = await audit()
    expect(holderOf(report, holder.pid)?.held_rows).toMatchObject({
      source: 'application_name',
      task_instances: [named(target)],
    })
  })

  it('a transaction that locked no row (FOR UPDATE matching nothing) holds none and is not listed', async () => {
    const idle = await session()
    await idle.conn.query('begin')
    await idle.conn.query(`select 1 from task_instance where dag_id = 'no-such-dag' for update`)
    const report = await audit()
    expect(holderOf(report, idle.pid)).toBeUndefined()
    expect(report.idle_in_transaction).toEqual([])
  })
})

describe('audit-locks: holders nobody waits for, with pgrowlocks where the server has it', () => {
  let available = false
  beforeAll(async () => {
    const {rows} = await db.knex.raw<{rows: unknown[]}>(
      `select 1 from pg_available_extensions where name = 'pgrowlocks'`,
    )
    // Offered, and this role may install it (a superuser, or a trusted extension).
    available =
      rows.length > 0 &&
      (await db.knex.raw('create extension if not exists pgrowlocks').then(
        () => true,
        () => false,
      ))
  })

  it('an active holder and an idle one name the task instances they hold, with the lock modes', async () => {
    const active = await activeHolder(world.ti('etl', 'task_1').id)
    const idle = await session()
    await idle.conn.query('begin')
    await idle.conn.query(`update task_instance set hostname = 'h' where id = $1`, [world.ti('etl', 'task_2').id])
    await idle.conn.query('select 1 from task_instance where id = $1 for share', [world.ti('etl', 'task_3').id])
    const report = await audit()
    if (!available) {
      // No pgrowlocks on this server: the report must not guess.
      expect(report.visibility.pgrowlocks).toBe('not_installed')
      for (const pid of [active.pid, idle.pid])
        expect(holderOf(report, pid)?.held_rows).toMatchObject({source: 'unknown', task_instances: []})
      expect(report.idle_in_transaction[0]!.held_rows.note).toBe('row unknown (install pgrowlocks to name it)')
      return
    }

    expect(report.visibility.pgrowlocks).toBe('read')
    expect(holderOf(report, active.pid)?.held_rows).toEqual({
      source: 'pgrowlocks',
      task_instances: [{...named(world.ti('etl', 'task_1')), modes: ['For Update']}],
      note: null,
    })
    const idleHolder = report.idle_in_transaction.find((holder) => holder.pid === idle.pid)
    expect(idleHolder?.held_rows).toEqual({
      source: 'pgrowlocks',
      task_instances: [
        {...named(world.ti('etl', 'task_2')), modes: [expect.stringMatching(/Update$/)]},
        {...named(world.ti('etl', 'task_3')), modes: ['For Share']},
      ],
      note: null,
    })
    // Longest transaction first: the active holder began first.
    expect(report.task_instance_holders.map((holder) => holder.pid)).toEqual([active.pid, idle.pid])
    const table = await runCli(['audit-locks', '--database-url', db.url, '--samples', '1'])
    expect(table.stdout).toContain(`etl/${world.run('etl').run_id}/task_1`)
  })

  it('a role that may not read task_instance is told pgrowlocks is not permitted, not given a guess', async () => {
    if (!available) return
    const role = `airlock_norows_${randomBytes(3).toString('hex')}`
    await db.knex.raw(`create role ?? login password 'norows-pass'`, [role])
    try {
      await db.knex.raw('grant connect on database ?? to ??', [db.name, role])
      await db.knex.raw('grant pg_monitor to ??', [role])
      const holder = await activeHolder(world.ti('etl', 'task_1').id)
      const url = new URL(db.url)
      url.username = role
      url.password = 'norows-pass'
      const result = await runCli(['audit-locks', '--database-url', url.toString(), '--samples', '1', '--json'])
      const report = (envelope(result) as {result: LockAudit}).result
      expect(result.code).toBe(0)
      expect(report.visibility.pgrowlocks).toBe('not_permitted')
      expect(holderOf(report, holder.pid)?.held_rows).toEqual({
        source: 'unknown',
        task_instances: [],
        note: 'row unknown (reading it with pgrowlocks needs SELECT on task_instance)',
      })
    } finally {
      await db.knex.raw('select pg_terminate_backend(pid) from pg_stat_activity where usename = ?', [role])
      await db.knex.raw('revoke connect on database ?? from ??', [db.name, role])
      await db.knex.raw('drop role if exists ??', [role])
    }
  })

  it('pgrowlocks queued behind a table lock gives up within its limit: the report comes back, rows unknown', async () => {
    if (!available) return
    const holder = await activeHolder(world.ti('etl', 'task_3').id)
    // A migration's ACCESS EXCLUSIVE request, queued behind the holder, makes every new reader of the table wait.
    const migration = await session()
    await migration.conn.query('begin')
    void migration.conn.query('lock table task_instance in access exclusive mode').catch(() => undefined)
    await waitUntilBlocked(db.knex, migration.pid)
    const started = Date.now()
    const report = await audit()
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(report.visibility.pgrowlocks).toBe('too_slow')
    expect(holderOf(report, holder.pid)?.held_rows).toMatchObject({
      source: 'unknown',
      note: 'row unknown (pgrowlocks gave up: a table lock in its way over 1 s, or reading task_instance over 5 s)',
    })
  })
})
