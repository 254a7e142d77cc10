import type {Knex} from 'knex'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import type {LockAudit} from '../../src/audit/auditLocks.js'
import {walk, type LockNode} from '../../src/audit/lockForest.js'
import {envelope, runCli} from '../support/cli.js'
import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, waitUntilBlocked} from '../support/locks.js'
import {scenario, type World} from '../support/scenario.js'

/**
 * audit-locks on airlock's own sessions, which tag themselves (application_name) with the task
 * instance they work on and wait for its row lock in slices. World: DAG etl with task_1…task_3
 * running; each test holds one row from a plain session and runs a completion behind it.
 */
type Connection = {query(sql: string, values?: unknown[]): Promise<{rows: Array<Record<string, unknown>>}>}
let db: TestDatabase
let world: World
const open: Connection[] = []

beforeAll(async () => {
  db = await createTestDatabase('3.0', 8)
  world = await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
})
afterAll(async () => db?.drop())
afterEach(async () => {
  for (const conn of open.splice(0)) {
    await conn.query('rollback').catch(() => undefined)
    await db.knex.client.releaseConnection(conn)
  }
})

async function holding(tiId: string, knex: Knex = db.knex): Promise<{conn: Connection; pid: number}> {
  const conn = (await knex.client.acquireConnection()) as Connection
  open.push(conn)
  const pid = (await conn.query('select pg_backend_pid() as pid')).rows[0]!.pid as number
  await conn.query('begin')
  await conn.query('select 1 from task_instance where id = $1 for update', [tiId])
  return {conn, pid}
}

const audit = async () => {
  const result = await runCli([
    'audit-locks',
    '--database-url',
    db.url,
    '--samples',
    '2',
    '--interval',
    '50ms',
    '--json',
  ])
  return (envelope(result) as {result: LockAudit}).result
}

const nodeOf = (report: LockAudit, pid: number): LockNode | undefined =>
  report.trees.flatMap((tree) => [...walk(tree)]).find((node) => node.pid === pid)

describe('audit-locks on airlock sessions', () => {
  it('a completion named by its key carries the task instance id in a tag of at most 63 bytes: named exactly', async () => {
    const target = world.ti('etl', 'task_1')
    const holder = await holding(target.id)
    const completion = completeOne(
      db.knex,
      {key: {dagId: target.dag_id, runId: target.run_id, taskId: target.task_id, mapIndex: target.map_index}},
      {lockTimeoutMs: 20_000},
    )
    const pid = await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
    const {rows} = await db.knex.raw<{rows: Array<{name: string; bytes: number}>}>(
      'select application_name as name, octet_length(application_name) as bytes from pg_stat_activity where pid = ?',
      [pid],
    )
    expect(rows[0]!.bytes).toBeLessThanOrEqual(63)
    const report = await audit()
    expect(nodeOf(report, pid)?.task_instance).toMatchObject({
      id: target.id,
      dag_id: 'etl',
      run_id: target.run_id,
      task_id: 'task_1',
      source: 'application_name',
      guess: false,
    })
    await holder.conn.query('rollback')
    expect((await completion).result.outcome).toBe('completed')
  })

  it('a completion that has waited over 2 s in 200 ms slices reports the whole wait, and so does the maximum', async () => {
    const target = world.ti('etl', 'task_2')
    const holder = await holding(target.id)
    const startedAt = Date.now()
    const completion = completeOne(db.knex, target.id, {lockTimeoutMs: 30_000})
    await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
    // Time is what is under test here: the completion's wait must outlast ten slices.
    await new Promise((resolve) => setTimeout(resolve, 2300 - (Date.now() - startedAt)))
    const report = await audit()
    const elapsed = Date.now() - startedAt
    // Whichever pooled connection the completion's latest slice runs on.
    const node = report.trees
      .flatMap((tree) => [...walk(tree)])
      .find((n) => n.application_name.startsWith(`airlock:complete:${target.id}`))
    expect(node?.wait_ms).toBeGreaterThanOrEqual(2000)
    expect(node?.wait_ms).toBeLessThanOrEqual(elapsed)
    const max = report.aggregates.by_task_instance.find((a) => a.key === target.id)
    expect(max?.max_wait_ms).toBeGreaterThanOrEqual(2000)
    await holder.conn.query('rollback')
    expect((await completion).result.outcome).toBe('completed')
  })

  it('a plain session blocked for over 2 s reports its wait from pg_locks', async () => {
    const target = world.ti('etl', 'task_3')
    await holding(target.id)
    const waiter = (await db.knex.client.acquireConnection()) as Connection
    open.push(waiter)
    const pid = (await waiter.query('select pg_backend_pid() as pid')).rows[0]!.pid as number
    await waiter.query('begin')
    void waiter.query('select 1 from task_instance where id = $1 for update', [target.id]).catch(() => undefined)
    await waitUntilBlocked(db.knex, pid)
    await expect
      .poll(
        async () =>
          (
            await db.knex.raw(
              `select (extract(epoch from now() - min(waitstart)) * 1000)::float8 as ms from pg_locks where pid = ? and not granted`,
              [pid],
            )
          ).rows[0].ms,
        {timeout: 5000, interval: 100},
      )
      .toBeGreaterThan(2100)
    const report = await audit()
    expect(nodeOf(report, pid)?.wait_ms).toBeGreaterThanOrEqual(2000)
    expect(report.aggregates.by_task_instance[0]?.max_wait_ms).toBeGreaterThanOrEqual(2000)
  })
})
