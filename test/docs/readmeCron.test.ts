import {spawnSync} from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, logWorkerSuccess, scenario} from '../support/scenario.js'

/**
 * The README's cron example, as cron runs it: its variable lines as the environment, each job's
 * command (after the five schedule fields) through /bin/sh, twice in a row, unchanged. Only the
 * database URL and the log directory are this test's own.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

async function readmeCronLines(): Promise<{variables: Record<string, string>; jobs: string[]}> {
  const readme = await fs.readFile(path.join(root, 'README.md'), 'utf8')
  const start = readme.indexOf('<!-- cron-example')
  expect(start).toBeGreaterThan(0)
  const block = readme.slice(readme.indexOf('\n', start) + 1).split('\n\n')[0]!
  const lines = block.split('\n').map((line) => line.trim())
  const variables = Object.fromEntries(
    lines.filter((line) => /^[A-Z_]+=/.test(line)).map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
  )
  const jobs = lines.filter((line) => /^[\d*]/.test(line)).map((line) => line.split(/\s+/).slice(5).join(' '))
  return {variables, jobs}
}

let db: TestDatabase
let dir: string
beforeAll(async () => {
  db = await createTestDatabase('3.2', 2)
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-cron-'))
  // Something for the audit to find: a try whose events were lost after the worker logged its success.
  const world = await scenario(db.knex)
    .producer('etl', {tasks: 2, outlets: 1, state: 'success', emitted: true, workerLog: true})
    .build()
  const lost = world.ti('etl', 'task_1')
  await logWorkerSuccess(db.knex, lost.id)
  await db
    .knex('asset_event')
    .whereIn(
      'id',
      (await eventsOf(db.knex, lost)).map((e) => e.id),
    )
    .delete()
})
afterAll(async () => {
  await db?.drop()
  await fs.rm(dir, {recursive: true, force: true})
})

describe("the README's cron example", () => {
  it('runs twice in a row unchanged: each night a new file, the findings exit 6, nothing refused', async () => {
    const {variables, jobs} = await readmeCronLines()
    expect(Object.keys(variables)).toEqual(['AIRLOCK_DATABASE_URL', 'AIRLOCK_LOG'])
    expect(jobs).toHaveLength(2)
    const bin = path.join(dir, 'bin')
    await fs.mkdir(bin)
    await fs.writeFile(path.join(bin, 'airlock'), `#!/bin/sh\nexec "${process.execPath}" "${root}/bin/run.js" "$@"\n`, {
      mode: 0o755,
    })
    const logs = path.join(dir, 'log')
    await fs.mkdir(logs)
    const env = {
      PATH: `${bin}:/usr/bin:/bin`,
      HOME: dir,
      ...variables,
      AIRLOCK_DATABASE_URL: db.url,
      AIRLOCK_LOG: logs,
    }
    const codes: Array<number | null> = []
    for (const night of [1, 2]) {
      for (const job of jobs) {
        const run = spawnSync('/bin/sh', ['-c', job], {env, encoding: 'utf8'})
        codes.push(run.status)
        expect(run.stderr, `night ${night}: ${job}`).not.toContain('already exists')
      }
      // {timestamp} has a one-second grain: the next "night" starts in another second.
      await new Promise((resolve) => setTimeout(resolve, 1100))
    }
    // The audit finds the lost events (6), the export succeeds (0), both nights alike.
    expect(codes).toEqual([6, 0, 6, 0])
    const files = (await fs.readdir(logs)).sort()
    expect(files.filter((f) => /^audit-\d{8}T\d{6}Z\.ndjson$/.test(f))).toHaveLength(2)
    expect(files.filter((f) => /^events-\d{8}T\d{6}Z\.ndjson$/.test(f))).toHaveLength(2)
    const audit = await fs.readFile(
      path.join(
        logs,
        files.find((f) => f.startsWith('audit-'))!,
      ),
      'utf8',
    )
    expect(audit).toContain('"class":"missing_events"')
  })
})
