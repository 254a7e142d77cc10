import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {startCli, type CliResult} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked} from '../support/locks.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * A signal while items wait for their task instance's row lock: no item starts a new attempt (a
 * lock-timeout retry, or the next lock-wait slice) after it, and a transaction still waiting for
 * the row lock is cancelled and rolled back at once, reported as interrupted with nothing written.
 * The holder keeps the rows for the whole test, far longer than the run takes, so the run can only
 * end by giving up its waits.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

/** DAG etl, two runs, task_1 running in each, one active outlet. */
const twoRunningTasks = async () => {
  const world = await scenario(db.knex).producer('etl', {tasks: 1, outlets: 1, runs: 2}).build()
  return world.tis('etl')
}

/**
 * Starts `complete` on both task instances while another transaction holds both rows, waits until
 * both of its transactions wait for their row lock, sends `signal`, and returns what the CLI printed
 * (the rows are still held when it returns).
 */
async function signalWhileWaiting(
  signal: NodeJS.Signals,
  flags: string[],
): Promise<CliResult & {ids: string[]; footprint: Record<string, number>}> {
  const ids = (await twoRunningTasks()).map((ti) => ti.id)
  const footprint = await writeFootprint(db.knex)
  const holder = await db.knex.transaction()
  try {
    await holder.raw('select 1 from task_instance where id = any(?) for update', [ids])
    const {child, finished} = startCli([
      'complete',
      '--database-url',
      db.url,
      '--dag-id',
      'etl',
      '--concurrency',
      '2',
      '--yes',
      // Four attempts of this before the fix: the run went on ~12 s after the signal.
      '--lock-timeout',
      '3s',
      ...flags,
    ])
    for (const id of ids) await waitUntilAppBlocked(db.knex, `airlock:complete:${id}`)
    child.kill(signal)
    const result = await finished
    // Ended while the rows were still held: it gave its waits up rather than outlasting them.
    expect(holder.isCompleted()).toBe(false)
    return {...result, ids, footprint}
  } finally {
    await holder.rollback()
  }
}

/** The stderr lines after the signal's message. */
const afterSignal = (stderr: string, signal: string): string[] => {
  const lines = stderr.split('\n')
  const at = lines.findIndex((line) => line.startsWith(`${signal}:`))
  expect(at, stderr).toBeGreaterThanOrEqual(0)
  return lines.slice(at + 1)
}

describe('a signal while items wait for their row lock', () => {
  it('SIGINT: the waits are cancelled and rolled back, no retry starts, each item says it was interrupted; exit 130', async () => {
    const {code, stdout, stderr, ids, footprint} = await signalWhileWaiting('SIGINT', ['--ndjson', '--verbose'])
    expect(code, stderr).toBe(130)

    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const items = lines.filter((line) => line.type === 'item') as Array<{
      ti_id: string
      outcome: string
      events: number
      error?: {sqlstate: string | null; message: string; interrupted?: boolean}
    }>
    expect(items.map((item) => item.ti_id).sort()).toEqual([...ids].sort())
    for (const item of items) {
      expect(item.outcome).toBe('failed')
      expect(item.events).toBe(0)
      expect(item.error?.interrupted).toBe(true)
      expect(item.error?.message).toContain('interrupted (SIGINT) while waiting for the row lock')
      expect(item.error?.message).toContain('nothing written')
    }
    expect(lines.at(-1)).toMatchObject({
      type: 'summary',
      selected: 2,
      completed: 0,
      failed: 2,
      not_reached: 0,
      interrupted: true,
    })

    // No attempt after the signal: no lock wait ran out (55P03) and no new wait began; the lock
    // statements that end after it are the two waits in flight, cancelled (57014).
    const after = afterSignal(stderr, 'SIGINT')
    expect(after.filter((line) => line.includes('55P03'))).toEqual([])
    const lockLines = after.filter((line) => line.includes('airlock_lock_ti'))
    expect(lockLines.length).toBeLessThanOrEqual(2)
    for (const line of lockLines) expect(line).toContain('failed (57014)')

    // Nothing written: no event, no audit row, no queue row, no state changed.
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    const states = await db.knex('task_instance').whereIn('id', ids).pluck('state')
    expect(states).toEqual(['running', 'running'])
  })

  it('SIGTERM, human output: the message says what happens and that a second signal stops at once; "done" counts no failed item', async () => {
    const {code, stdout, stderr, footprint} = await signalWhileWaiting('SIGTERM', [])
    expect(code, stderr).toBe(130)
    expect(stderr).toMatch(
      /^SIGTERM: .*no new item or retry.*waiting for a row lock.*cancelled.*second signal stops at once/m,
    )
    expect(stdout).toContain('2 task instances selected, 0 done, 2 failed, 0 not reached: 2 failed')
    expect(stdout).toContain('interrupted (SIGTERM) while waiting for the row lock')
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    const {rows} = await db.knex.raw<{rows: Array<{n: number}>}>(
      `select count(*)::int as n from task_instance where dag_id = 'etl' and state = 'running'`,
    )
    expect(rows[0]!.n).toBe(2)
  })
})
