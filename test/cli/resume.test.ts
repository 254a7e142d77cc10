import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runPasted, shownUrl, startCli, withPasswordBack} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {scenario} from '../support/scenario.js'

/**
 * The line a stopped run prints to take it up is pasted into a shell as printed, and runs: it
 * finishes the items the first run never reached, and writes its items to a new file, since the
 * first run's --output exists and airlock never overwrites one.
 */
let db: TestDatabase
let dir: string
beforeAll(async () => {
  db = await createTestDatabase('3.0')
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-resume-'))
})
afterAll(async () => {
  await fs.rm(dir, {recursive: true, force: true})
  await db?.drop()
})

const lines = async (file: string) =>
  (await fs.readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as {type: string; outcome?: string; task_id?: string; interrupted?: boolean})

const successes = async (dagId: string) =>
  Number(
    ((await db.knex('task_instance').where({dag_id: dagId, state: 'success'}).count({n: '*'})) as [{n: string}])[0].n,
  )

describe('the resume line of a run a signal stopped', () => {
  it.each([
    ['human', [] as string[]],
    ['ndjson', ['--ndjson']],
  ])('pasted as printed, it runs and completes the rest, its items in a new file (%s)', async (mode, flags) => {
    const dagId = `resume_${mode}`
    const tasks = 6
    const world = await scenario(db.knex).producer(dagId, {tasks, outlets: 1}).build()
    const held = world.ti(dagId, 'task_3')
    const output = path.join(dir, `${mode} items.ndjson`)
    const result = await whileRowLocked(db.knex, held.id, async () => {
      const running = startCli([
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        dagId,
        '--yes',
        '--concurrency',
        '1',
        '-o',
        output,
        ...flags,
      ])
      await waitUntilAppBlocked(db.knex, `airlock:complete:${held.id}`)
      running.child.kill('SIGINT')
      return running.finished
    })
    expect(result.code, result.stderr).toBe(130)
    const first = await lines(output)
    expect(first.at(-1)).toMatchObject({type: 'summary', interrupted: true})
    const done = await successes(dagId)
    expect(done).toBeLessThan(tasks)

    const resume =
      mode === 'human'
        ? /^Resume with: (.*)$/m.exec(result.stdout)?.[1]
        : (JSON.parse(result.stdout.trim().split('\n').at(-1)!) as {resume?: string}).resume
    expect(resume, result.stdout).toBeDefined()
    // A URL's password is never printed: the line shows it as ***, which the operator puts back
    // (the note above the line says so); a server without a password has none to hide.
    expect(resume).toContain(
      `complete --database-url ${shownUrl(db.url)} --dag-id ${dagId} --yes --concurrency 1 -o '${dir}/${mode} items-{timestamp}.ndjson'`,
    )
    if (mode === 'human') expect(result.stdout).toContain(`${output} keeps this run's`)

    const pasted = await runPasted(withPasswordBack(resume!, db.url))
    expect(pasted.code, pasted.stderr).toBe(0)
    expect(await successes(dagId)).toBe(tasks)
    // The first run's record is intact; the second wrote its own, one line per item it took.
    expect(await lines(output)).toEqual(first)
    const written = (await fs.readdir(dir)).filter((name) => name.startsWith(`${mode} items-`))
    expect(written).toHaveLength(1)
    const second = await lines(path.join(dir, written[0]!))
    // What the first run completed is no longer running: not selected again, only counted.
    expect(second.filter((line) => line.type === 'item')).toHaveLength(tasks - done)
    expect(second.filter((line) => line.outcome === 'completed')).toHaveLength(tasks - done)
    expect(second.at(-1)).toMatchObject({type: 'summary', interrupted: false, not_selected: done})
  })
})
