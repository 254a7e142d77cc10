import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {startCli} from '../support/cli.js'
import {admin, createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {scenario} from '../support/scenario.js'

/**
 * A batch the database walks away from half way (its sessions terminated, new ones refused):
 * the items that finished are committed, so the failure's report lists them, in --json and in
 * --ndjson, whose stream ends with a line saying how it ended.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
  // 201 runs: a --since range is read 200 runs at a time, so the 201st run is read after the
  // 200th item is taken; the test makes the database go away while that item waits on its row.
  await scenario(db.knex).producer('etl', {tasks: 1, outlets: 0, runs: 201, state: 'running'}).build()
})
afterAll(async () => db?.drop())

/** Runs complete over the DAG; when it waits on the last task instance's row, the database goes away. */
async function cutShort(output: '--json' | '--ndjson') {
  await db.knex('task_instance').update({state: 'running'})
  const ids = await db
    .knex('task_instance as ti')
    .join('dag_run as r', (on) => on.on('r.dag_id', 'ti.dag_id').andOn('r.run_id', 'ti.run_id'))
    .orderBy([{column: 'r.run_after'}, {column: 'r.id'}])
    .pluck('ti.id')
  expect(ids).toHaveLength(201)
  const name = db.url.slice(db.url.lastIndexOf('/') + 1)
  return whileRowLocked(db.knex, ids[199], async () => {
    const running = startCli([
      'complete',
      '--database-url',
      db.url,
      '--dag-id',
      'etl',
      '--since',
      '2000-01-01',
      '--yes',
      '--concurrency',
      '1',
      '--lock-timeout',
      '60s',
      output,
    ])
    const pid = await waitUntilAppBlocked(db.knex, 'airlock:complete')
    const server = admin()
    await server.raw(`alter database ?? allow_connections false`, [name])
    try {
      await server.raw(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and (application_name like 'airlock:%' or pid = ?)`,
        [name, pid],
      )
      return {result: await running.finished, ids}
    } finally {
      await server.raw(`alter database ?? allow_connections true`, [name])
      await server.destroy()
    }
  })
}

describe('a batch cut short by the database', () => {
  it('--json: the error envelope lists every item that finished', async () => {
    const {result, ids} = await cutShort('--json')
    expect(result.code, result.stdout.slice(0, 400) + result.stderr).toBe(7)
    const out = JSON.parse(result.stdout) as {
      status: number
      error: {code: string}
      result: {items: Array<{ti_id: string; outcome: string}>; interrupted: boolean}
    }
    expect(out.status).toBe(7)
    expect(out.error.code).toBe('DATABASE_UNREACHABLE')
    // The 199 before it completed and the one waiting failed; the 201st was never read.
    const outcomes = new Map(out.result.items.map((i) => [i.ti_id, i.outcome]))
    expect(out.result.items).toHaveLength(200)
    expect(ids.slice(0, 199).every((id) => outcomes.get(id) === 'completed')).toBe(true)
    expect(outcomes.get(ids[199])).toBe('failed')
    expect(out.result.interrupted).toBe(true)
    // What the report says completed is committed.
    expect(
      await db.knex('task_instance').whereIn('id', ids.slice(0, 199)).where({state: 'success'}).count('* as n'),
    ).toEqual([{n: '199'}])
  })

  it('--ndjson: the finished items, then one {"type":"error"} line a consumer can parse', async () => {
    const {result} = await cutShort('--ndjson')
    expect(result.code).toBe(7)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {type: string; status?: number; error?: {code: string}})
    expect(lines.filter((l) => l.type === 'item')).toHaveLength(200)
    expect(lines.at(-1)).toMatchObject({type: 'error', status: 7, error: {code: 'DATABASE_UNREACHABLE'}})
    // No summary line: a consumer that stops at the summary must not read a failed run as done.
    expect(lines.filter((l) => l.type === 'summary')).toEqual([])
  })
})
