import {spawn} from 'node:child_process'
import path from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {CliResult} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * A SIGINT in a run's first moments, from bin/run.js's first line on: every command ends with exit
 * 130, never by the signal itself (what a supervisor reads as killed), and nothing is written.
 * Before that first line only Node.js's own start-up runs, which no JavaScript can guard (it resets
 * an inherited SIG_IGN). So the moments are placed after it, and on a loaded machine as on an idle
 * one: test/support/signalAt.mjs marks the load of a module the CLI reaches only after its first
 * line (oclif, the command's module, the database driver), and either signals there or tells the
 * test, which signals some milliseconds later.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const signalAt = pathToFileURL(path.join(root, 'test', 'support', 'signalAt.mjs')).href

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

/**
 * Runs the CLI with SIGINT sent when it starts to load a module whose URL holds `at`, or
 * `afterMs` later (measured from then by the test).
 */
function interruptedAt(args: string[], at: string, afterMs?: number): Promise<CliResult> {
  const child = spawn(process.execPath, ['--import', signalAt, path.join(root, 'bin', 'run.js'), ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      LANG: 'C.UTF-8',
      AIRLOCK_SIGNAL_AT: at,
      AIRLOCK_SIGNAL_ACTION: afterMs === undefined ? 'kill' : 'announce',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  ;(child.stdio[3] as NodeJS.ReadableStream).once('data', () => {
    setTimeout(() => child.kill('SIGINT'), afterMs)
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({code, signal, stdout, stderr}))
  })
}

const oclif = 'node_modules/@oclif/core/'

describe('a SIGINT in the first moments of a run', () => {
  it.each([
    ['--help', ['--help']],
    ['help for a command', ['help', 'complete']],
    ['a mistyped command', ['complet']],
    ['the version, from oclif', ['version']],
  ])('%s, which no airlock command takes up: exit 130, not the signal', async (_, args) => {
    const result = await interruptedAt(args, oclif)
    expect(result.signal).toBeNull()
    expect(result.code, result.stderr).toBe(130)
  })

  it.each([
    ['while oclif loads', oclif],
    ["while the command's module loads", '/dist/commands/complete.js'],
    ['while the database driver loads', 'node_modules/knex/'],
  ])('complete, %s: exit 130, the INTERRUPTED envelope, nothing written', async (_, at) => {
    await scenario(db.knex).producer('etl', {tasks: 2, outlets: 1}).build()
    const footprint = await writeFootprint(db.knex)
    const result = await interruptedAt(['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--json'], at)
    expect(result.signal).toBeNull()
    expect(result.code, result.stderr).toBe(130)
    expect(JSON.parse(result.stdout)).toMatchObject({status: 130, error: {code: 'INTERRUPTED'}})
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  // Each delay lands wherever the run has got to by then (loading, parsing, connecting, reading the
  // schema and the selection, the batch): the exit is 130 from every one of them.
  it.each([0, 50, 100, 150, 200])(
    'complete, SIGINT %i ms after oclif starts to load: exit 130, not the signal, nothing written',
    async (afterMs) => {
      const world = await scenario(db.knex).producer('held', {tasks: 1, outlets: 1}).build()
      const footprint = await writeFootprint(db.knex)
      // The only item waits for its row for as long as the test holds it: whenever the signal
      // comes, nothing can commit.
      const holder = await db.knex.transaction()
      try {
        await holder.raw('select 1 from task_instance where id = ? for update', [world.ti('held', 'task_1').id])
        const result = await interruptedAt(
          ['complete', '--database-url', db.url, '--dag-id', 'held', '--yes', '--json', '--lock-timeout', '30s'],
          oclif,
          afterMs,
        )
        expect(result.signal).toBeNull()
        expect(result.code, result.stderr).toBe(130)
        expect(JSON.parse(result.stdout)).toMatchObject({status: 130})
      } finally {
        await holder.rollback()
      }
      expect(await writeFootprint(db.knex)).toEqual(footprint)
    },
  )
})
