import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli, runPasted, startCli, withPasswordBack} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * A server that accepts no writes: a hot standby behind an address, a database or role with
 * default_transaction_read_only, a read-only pooler. Here it is a database with `ALTER DATABASE …
 * SET default_transaction_read_only = on`, which every new session of it gets (a standby cannot
 * be built on the test server; its branch of the message is unit-tested in
 * test/doctor/writableServer.unit.test.ts).
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

const readOnly = (on: boolean) =>
  db.knex.raw(
    on
      ? 'alter database ?? set default_transaction_read_only = on'
      : 'alter database ?? reset default_transaction_read_only',
    [db.name],
  )

interface ErrorEnvelope {
  status: number
  error: {code: string; message: string; actions: string[]}
}

describe('a server that accepts no writes', () => {
  it('doctor says so and why (exit 9); every writer stops before its first item (exit 9), nothing written; the readers run', async () => {
    await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1}).build()
    // An event and an audit row to replay, export and undo.
    const first = await runCli([
      'complete',
      '--database-url',
      db.url,
      '--dag-id',
      'etl',
      '--task-id',
      'task_1',
      '--yes',
    ])
    expect(first.code).toBe(0)
    const [{id: logId}] = (await db.knex('log').where({event: 'success'}).select('id')) as [{id: number}]
    await readOnly(true)
    try {
      const doctor = await runCli(['doctor', '--database-url', db.url, '--json'])
      expect(doctor.code).toBe(9)
      const report = (
        envelope(doctor) as {
          result: {server: {acceptsWrites: boolean; inRecovery: boolean; readOnlyReason: string}; verdict: string}
        }
      ).result
      expect(report.server).toMatchObject({acceptsWrites: false, inRecovery: false})
      expect(report.server.readOnlyReason).toContain(
        'default_transaction_read_only is on (set for this database: ALTER DATABASE … SET)',
      )
      expect(report.verdict).toMatch(/^read-only: .* the server accepts no writes: default_transaction_read_only is on/)
      expect(report.verdict).toContain('Still works: doctor, export-events')
      const human = await runCli(['doctor', '--database-url', db.url])
      expect(human.code).toBe(9)
      expect(human.stdout).toMatch(/writes +refused: default_transaction_read_only is on/)
      expect(human.stdout).not.toContain('can run every airlock command')

      const footprint = await writeFootprint(db.knex)
      const writers: Array<[string, string[]]> = [
        ['complete', ['complete', '--dag-id', 'etl', '--yes']],
        ['complete', ['complete', '--dag-id', 'etl', '--dry-run']],
        ['complete --continue-run', ['complete', '--dag-id', 'etl', '--continue-run', '--yes']],
        ['replay-events', ['replay-events', '--dag-id', 'etl', '--yes']],
        ['replay-events', ['replay-events', '--event-id', '1', '--yes']],
        ['undo', ['undo', '--log-id', String(logId), '--yes']],
        ['audit-events --fix', ['audit-events', '--fix', '--yes']],
      ]
      for (const [command, args] of writers) {
        const result = await runCli([...args, '--database-url', db.url, '--json'])
        const out = envelope(result) as unknown as ErrorEnvelope
        expect(result.code, `${args.join(' ')}: ${result.stdout}`).toBe(9)
        expect(out.error.code).toBe('READ_ONLY_SERVER')
        expect(out.error.message).toBe(
          `${command} writes, and this server accepts no writes: default_transaction_read_only is on (set for this database: ALTER DATABASE … SET), so every transaction begins read-only. Nothing was written.`,
        )
        expect(out.error.actions[0]).toContain(
          'Running the same command again fails the same way until the server accepts writes',
        )
      }
      expect(await writeFootprint(db.knex)).toEqual(footprint)

      // What only reads still runs.
      const readers: string[][] = [
        ['complete', '--dag-id', 'etl', '--plan'],
        ['export-events'],
        ['audit-events'],
        ['explain', '--all'],
        ['audit-locks', '--samples', '1'],
      ]
      for (const args of readers) {
        const result = await runCli([...args, '--database-url', db.url])
        expect([0, 6], `${args.join(' ')}: ${result.stderr}`).toContain(result.code)
      }
      expect(await writeFootprint(db.knex)).toEqual(footprint)
    } finally {
      await readOnly(false)
    }
    // About fifteen airlock processes one after another: minutes on a loaded machine.
  }, 240_000)

  it('turning read-only mid-run: the item the server refused says so, no new item starts, exit 9 (not 5), and the printed line resumes once it accepts writes', async () => {
    const tasks = 5
    const world = await scenario(db.knex).producer('failover', {tasks, outlets: 1}).build()
    const second = world.ti('failover', 'task_2')
    const args = ['complete', '--database-url', db.url, '--dag-id', 'failover', '--yes', '--concurrency', '1']
    let result: Awaited<ReturnType<typeof runCli>> | undefined
    try {
      await whileRowLocked(db.knex, second.id, async () => {
        const running = startCli([...args, '--ndjson'])
        // task_1 committed; task_2 waits for its row. The failover: the old session ends, and the
        // address now leads to a server that takes no writes (here: new sessions begin read-only).
        const pid = await waitUntilAppBlocked(db.knex, `airlock:complete:${second.id}`)
        await readOnly(true)
        await db.knex.raw('select pg_terminate_backend(?)', [pid])
        result = await running.finished
      })
    } finally {
      await readOnly(false)
    }

    expect(result!.code, result!.stderr).toBe(9)
    const lines = result!.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    const items = lines.filter((line) => line.type === 'item')
    // Items go in id order: those before task_2 committed, task_2 was refused, none started after it.
    const refused = items.at(-1)!
    expect(refused).toMatchObject({task_id: 'task_2', outcome: 'failed'})
    expect(items.slice(0, -1).every((item) => item.outcome === 'completed')).toBe(true)
    expect(refused.error).toMatchObject({sqlstate: '25006', read_only: true})
    expect((refused.error as {message: string}).message).toMatch(
      /^the server accepts no writes \(cannot execute \w+ in a read-only transaction\): rolled back, nothing written; running again fails the same way until it accepts writes$/,
    )
    const last = lines.at(-1) as unknown as {type: string} & ErrorEnvelope
    expect(last).toMatchObject({type: 'error', status: 9, error: {code: 'READ_ONLY_SERVER'}})
    expect(last.error.message).toContain(
      `of ${tasks} selected, ${items.length - 1} done, 1 failed (1 refused as read-only: rolled back, nothing written), ${tasks - items.length} never reached`,
    )
    expect(last.error.message).not.toContain('safe')
    // Nothing of task_2's was written: still running, no event.
    expect(await db.knex('task_instance').where({id: second.id}).first('state')).toEqual({state: 'running'})
    expect(await db.knex('asset_event').where({source_dag_id: 'failover', source_task_id: 'task_2'})).toEqual([])

    // Once the server accepts writes, the printed command finishes the rest.
    const resume = last.error.actions
      .find((action) => action.startsWith('Resume with: '))!
      .slice('Resume with: '.length)
    // The line shows a URL's password as ***; the operator puts it back.
    const pasted = await runPasted(withPasswordBack(resume, db.url))
    expect(pasted.code, pasted.stderr).toBe(0)
    expect(await db.knex('task_instance').where({dag_id: 'failover', state: 'success'}).count({n: '*'})).toEqual([
      {n: String(tasks)},
    ])
  })
})
