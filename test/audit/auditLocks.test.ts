import {spawn} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import path from 'node:path'

import type {Knex} from 'knex'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import type {LockAudit} from '../../src/audit/auditLocks.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilBlocked} from '../support/locks.js'
import {scenario, type World} from '../support/scenario.js'

/**
 * audit-locks against real sessions, ordered by lock-wait polling. World: DAG etl with task_1…task_3
 * running (one outlet each) and a consumer `report`; the tests lock its rows.
 */
type Connection = {query(sql: string, values?: unknown[]): Promise<{rows: Array<Record<string, unknown>>}>}
let db: TestDatabase
let world: World
const open: Connection[] = []

beforeAll(async () => {
  db = await createTestDatabase('3.0', 12)
  world = await scenario(db.knex)
    .producer('etl', {tasks: 3, outlets: 1})
    .consumer('report', {on: ['etl']})
    .build()
})
afterAll(async () => db?.drop())
afterEach(async () => {
  for (const conn of open.splice(0)) {
    await conn.query('rollback').catch(() => undefined)
    await db.knex.client.releaseConnection(conn)
  }
})

async function session(knex: Knex = db.knex): Promise<{conn: Connection; pid: number}> {
  const conn = (await knex.client.acquireConnection()) as Connection
  open.push(conn)
  const pid = (await conn.query('select pg_backend_pid() as pid')).rows[0]!.pid as number
  return {conn, pid}
}

const audit = async (...args: string[]) => {
  const result = await runCli([
    'audit-locks',
    '--database-url',
    db.url,
    '--samples',
    '2',
    '--interval',
    '20ms',
    '--json',
    ...args,
  ])
  return {code: result.code, out: envelope(result) as {status: number; result: LockAudit}}
}

/** Holder with the row lock (idle in transaction), waiter 1 queued on it, waiter 2 behind waiter 1. */
async function holderAndTwoWaiters(tiId: string) {
  const holder = await session()
  await holder.conn.query('begin')
  await holder.conn.query('select 1 from task_instance where id = $1 for update', [tiId])
  const w1 = await session()
  await w1.conn.query('begin')
  void w1.conn.query('select 1 from task_instance where id = $1 for update', [tiId]).catch(() => undefined)
  await waitUntilBlocked(db.knex, w1.pid)
  const w2 = await session()
  await w2.conn.query('begin')
  void w2.conn.query('select 1 from task_instance where id = $1 for update', [tiId]).catch(() => undefined)
  await waitUntilBlocked(db.knex, w2.pid)
  return {holder, w1, w2}
}

describe('airlock audit-locks', () => {
  it('no locks: an empty report, exit 0', async () => {
    const {code, out} = await audit()
    expect(code).toBe(0)
    expect(out.result.trees).toEqual([])
    expect(out.result.idle_in_transaction).toEqual([])
  })

  it('holder + two waiters on one TI row: one tree rooted at the holder, depth 2, the waiters name the TI, waits measured', async () => {
    const target = world.ti('etl', 'task_1')
    const {holder, w1, w2} = await holderAndTwoWaiters(target.id)
    const started = Date.now()
    await expect
      .poll(
        async () =>
          (
            await db.knex.raw(
              `select (extract(epoch from now() - min(l.waitstart)) * 1000)::float8 as ms from pg_locks l where l.pid = ? and not l.granted`,
              [w2.pid],
            )
          ).rows[0].ms,
        {timeout: 5000},
      )
      .toBeGreaterThan(150)
    const {code, out} = await audit()
    expect(code).toBe(0)
    const trees = out.result.trees
    expect(trees).toHaveLength(1)
    const root = trees[0]!
    expect(root).toMatchObject({pid: holder.pid, depth: 0, blocked_below: 2, state: 'idle in transaction'})
    expect(root.children[0]).toMatchObject({pid: w1.pid, depth: 1, category: 'task_instance'})
    expect(root.children[0]!.children[0]).toMatchObject({pid: w2.pid, depth: 2, category: 'task_instance'})
    for (const waiter of [root.children[0]!, root.children[0]!.children[0]!]) {
      expect(waiter.task_instance).toMatchObject({
        id: target.id,
        dag_id: 'etl',
        task_id: 'task_1',
        run_id: target.run_id,
        source: 'tuple_lock',
        guess: true,
      })
    }

    expect(root.children[0]!.children[0]!.wait_ms).toBeGreaterThanOrEqual(150)
    expect(root.children[0]!.children[0]!.wait_ms).toBeLessThanOrEqual(Date.now() - started + 5000)
    expect(root.task_instance).toMatchObject({id: target.id, source: 'inferred_from_waiter'})
    expect(out.result.idle_in_transaction.map((h) => h.pid)).toEqual([holder.pid])
    expect(out.result.aggregates.by_task_instance[0]).toMatchObject({
      key: target.id,
      // Its key too, which the table shows in place of the id.
      task_instance: `${target.dag_id}/${target.run_id}/${target.task_id}`,
    })
    expect(out.result.findings.map((f) => f.code)).toContain('idle_root')
  })

  it('an idle-in-transaction holder of a TI lock past --crit-idle is critical and --fail-on critical exits 6', async () => {
    const target = world.ti('etl', 'task_2')
    const holder = await session()
    await holder.conn.query('begin')
    await holder.conn.query('select 1 from task_instance where id = $1 for update', [target.id])
    await expect
      .poll(
        async () =>
          (
            await db.knex.raw(
              `select (extract(epoch from now() - state_change) * 1000)::float8 as ms from pg_stat_activity where pid = ?`,
              [holder.pid],
            )
          ).rows[0].ms,
        {timeout: 5000},
      )
      .toBeGreaterThan(120)
    const {code, out} = await audit('--crit-idle', '100ms', '--fail-on', 'critical')
    expect(code).toBe(6)
    expect(out.status).toBe(6)
    expect(out.result.findings).toContainEqual(
      expect.objectContaining({severity: 'critical', code: 'idle_ti_holder', pid: holder.pid}),
    )
    const relaxed = await audit('--crit-idle', '60s', '--fail-on', 'critical')
    expect(relaxed.code).toBe(0)
  })

  it('two independent trees are reported separately', async () => {
    const a = world.ti('etl', 'task_1')
    const b = world.ti('etl', 'task_3')
    const first = await holderAndTwoWaiters(a.id)
    const second = await holderAndTwoWaiters(b.id)
    const {out} = await audit()
    const roots = out.result.trees.map((t) => t.pid).sort((x, y) => x - y)
    expect(roots).toEqual([first.holder.pid, second.holder.pid].sort((x, y) => x - y))
    for (const tree of out.result.trees) expect(tree.blocked_below).toBe(2)
  })

  it("a wait behind another completion's queue insert is classified as queue contention", async () => {
    const asset = world.asset('etl.task_1.out_1')
    const insert = `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at) values ($1, 'report', now()) on conflict (asset_id, target_dag_id) do update set created_at = excluded.created_at`
    const first = await session()
    await first.conn.query('begin')
    await first.conn.query(insert, [asset.id])
    const second = await session()
    await second.conn.query('begin')
    void second.conn.query(insert, [asset.id]).catch(() => undefined)
    await waitUntilBlocked(db.knex, second.pid)
    const {out} = await audit()
    expect(out.result.queue_contention.map((q) => q.pid)).toEqual([second.pid])
    expect(out.result.trees[0]!.children[0]).toMatchObject({pid: second.pid, category: 'queue'})
  })

  it("names the TI exactly from airlock's application_name tag", async () => {
    const target = world.ti('etl', 'task_1')
    const holder = await session()
    await holder.conn.query('begin')
    await holder.conn.query('select 1 from task_instance where id = $1 for update', [target.id])
    const tagged = await session()
    await tagged.conn.query('begin')
    await tagged.conn.query(`select set_config('application_name', $1, true)`, [`airlock:complete:${target.id}`])
    void tagged.conn.query('select 1 from task_instance where id = $1 for update', [target.id]).catch(() => undefined)
    await waitUntilBlocked(db.knex, tagged.pid)
    const {out} = await audit()
    const root = out.result.trees[0]!
    // Named dag/run/task, not just by id; the holder inherits the name from its waiter.
    const named = {id: target.id, dag_id: 'etl', run_id: world.run('etl').run_id, task_id: 'task_1', map_index: -1}
    expect(root.children[0]!.task_instance).toMatchObject({...named, source: 'application_name', guess: false})
    expect(root.task_instance).toMatchObject({...named, source: 'inferred_from_waiter'})
    // Where the holder connects from and since when; the statement that would end it, never run.
    expect(root.client_addr).toBe('127.0.0.1')
    expect(Date.parse(root.backend_start!)).toBeLessThanOrEqual(Date.now())
    expect(root.terminate).toBe(`select pg_terminate_backend(${holder.pid})`)
    expect(root.children[0]!.terminate).toBeNull()

    const table = await runCli(['audit-locks', '--database-url', db.url, '--samples', '1'])
    expect(table.stdout).toContain(`TI etl/${world.run('etl').run_id}/task_1`)
    expect(table.stdout).toContain(
      `to end this session (airlock never does): select pg_terminate_backend(${holder.pid});`,
    )
    const kill = await runCli([
      'audit-locks',
      '--database-url',
      db.url,
      '--samples',
      '2',
      '--interval',
      '50ms',
      '--kill',
    ])
    expect(kill.code).toBe(0)
    expect(
      kill.stdout
        .trim()
        .split('\n')
        .filter((line) => !line.startsWith('--')),
    ).toEqual([`select pg_terminate_backend(${holder.pid});`])
    const lines = (await runCli(['audit-locks', '--database-url', db.url, '--samples', '1', '--ndjson'])).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {type: string; pid?: number; root_pid?: number; children?: number[]})
    expect(lines.map((line) => line.type)).toEqual(['session', 'session', 'summary'])
    expect(lines[0]).toMatchObject({pid: holder.pid, root_pid: holder.pid, children: [tagged.pid]})
    // Printed, not run: the waiter still waits behind its holder.
    await waitUntilBlocked(db.knex, tagged.pid)
  })

  // script(1) (util-linux) makes the pseudo-terminal --watch needs.
  it.skipIf(!existsSync('/usr/bin/script'))(
    '--watch stops on Ctrl-C with exit 130 (run on a pseudo-terminal)',
    async () => {
      const command = `node ${JSON.stringify(path.resolve('bin/run.js'))} audit-locks --database-url ${JSON.stringify(db.url)} --watch --interval 100ms`
      // script(1) gives the command a terminal; a Ctrl-C typed into it reaches airlock as SIGINT from the terminal.
      const child = spawn('script', ['-qec', command, '/dev/null'], {stdio: ['pipe', 'pipe', 'pipe']})
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
      await expect.poll(() => output, {timeout: 15_000}).toContain('Ctrl-C to stop')
      child.stdin.write('\u0003')
      const code = await new Promise<number | null>((resolve) => child.on('exit', (exit) => resolve(exit)))
      expect(code).toBe(130)
    },
  )

  it('without pg_monitor: the report says what it cannot see', async () => {
    const role = `airlock_lowpriv_${randomBytes(3).toString('hex')}`
    await db.knex.raw(`create role ?? login password 'lowpriv-pass'`, [role])
    try {
      await db.knex.raw(`grant connect on database ?? to ??`, [db.name, role])
      const holder = await session()
      await holder.conn.query('begin')
      await holder.conn.query('select 1 from task_instance limit 1 for update')
      const url = new URL(db.url)
      url.username = role
      url.password = 'lowpriv-pass'
      const result = await runCli(['audit-locks', '--database-url', url.toString(), '--samples', '1', '--json'])
      const out = envelope(result) as {status: number; result: LockAudit}
      expect(result.code).toBe(0)
      expect(out.result.visibility.can_monitor).toBe(false)
      expect(out.result.visibility.hidden_sessions).toBeGreaterThan(0)
      expect(out.result.visibility.note).toContain('pg_monitor')
      expect(result.stdout).not.toContain('lowpriv-pass')
    } finally {
      await db.knex.raw(`select pg_terminate_backend(pid) from pg_stat_activity where usename = ?`, [role])
      await db.knex.raw(`revoke connect on database ?? from ??`, [db.name, role])
      await db.knex.raw('drop role if exists ??', [role])
    }
  })

  it('--format csv writes one row per node with a header', async () => {
    const target = world.ti('etl', 'task_2')
    await holderAndTwoWaiters(target.id)
    const result = await runCli(['audit-locks', '--database-url', db.url, '--samples', '1', '--format', 'csv'])
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^root_pid,pid,depth,state/)
    expect(lines).toHaveLength(4)
  })
})

describe('audit-locks JSON shape (documented in the README)', () => {
  it('has every documented key with its type', async () => {
    const target = world.ti('etl', 'task_2')
    await holderAndTwoWaiters(target.id)
    const {out} = await audit()
    const r = out.result as unknown as Record<string, unknown>
    expect(Object.keys(r).sort()).toEqual([
      'aggregates',
      'deadlocks',
      'findings',
      'idle_in_transaction',
      'max_severity',
      'queue_contention',
      'sampling',
      'settings',
      'task_instance_holders',
      'trees',
      'visibility',
    ])
    expect(r.sampling).toEqual({
      samples: 2,
      interval_ms: 20,
      started_at: expect.any(String),
      finished_at: expect.any(String),
      shown_sample: expect.any(Number),
    })
    expect(r.visibility).toEqual({
      can_monitor: true,
      hidden_sessions: expect.any(Number),
      note: null,
      pgrowlocks: expect.stringMatching(/^(read|not_read|not_installed|not_permitted|too_slow)$/),
    })
    const holder = (r.task_instance_holders as Array<Record<string, unknown>>)[0]!
    expect(Object.keys(holder).sort()).toEqual([
      'application_name',
      'blocking',
      'held_rows',
      'pid',
      'query',
      'since_state_change_ms',
      'state',
      'transaction_age_ms',
      'user',
    ])
    expect(Object.keys(holder.held_rows as object).sort()).toEqual(['note', 'source', 'task_instances'])
    const idle = (r.idle_in_transaction as Array<Record<string, unknown>>)[0]!
    expect(Object.keys(idle).sort()).toEqual([
      'application_name',
      'blocking',
      'held_rows',
      'idle_ms',
      'last_query',
      'pid',
      'transaction_age_ms',
      'user',
    ])
    expect(r.deadlocks).toEqual({total: expect.any(Number), delta: expect.any(Number)})
    const node = (r.trees as Array<Record<string, unknown>>)[0]!
    expect(Object.keys(node).sort()).toEqual([
      'also_blocked_by',
      'application_name',
      'backend_start',
      'blocked_below',
      'category',
      'children',
      'client_addr',
      'depth',
      'pid',
      'query',
      'since_state_change_ms',
      'state',
      'task_instance',
      'terminate',
      'transaction_age_ms',
      'user',
      'wait_event',
      'wait_event_type',
      'wait_ms',
      'waited_before_ms',
    ])
    for (const finding of r.findings as Array<Record<string, unknown>>) {
      expect(['info', 'warning', 'critical']).toContain(finding.severity)
      expect(Object.keys(finding).sort()).toEqual(['code', 'message', 'pid', 'severity'])
    }

    expect(Object.keys(r.aggregates as object).sort()).toEqual([
      'by_query',
      'by_task_instance',
      'max_blocked',
      'roots_seen',
    ])
  })
})
