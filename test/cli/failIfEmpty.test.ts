import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * --fail-if-empty, on every command that selects: a selection that matches nothing is exit 4 with
 * a warning saying so (in the --json envelope too); without the flag it stays exit 0, and a
 * selection that matches keeps its own exit.
 */
let db: TestDatabase
let dir: string
beforeAll(async () => {
  db = await createTestDatabase('3.0')
  // A producer and no consumer: nothing is asset-scheduled, so explain --all selects nothing.
  await scenario(db.knex).producer('etl', {tasks: 2, outlets: 1}).build()
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-empty-'))
})
afterAll(async () => {
  await db?.drop()
  if (dir) await fs.rm(dir, {recursive: true, force: true})
})

const future = '2999-01-01T00:00:00Z'

describe('--fail-if-empty', () => {
  const empty: Array<[string, () => string[]]> = [
    ['complete', () => ['complete', '--database-url', db.url, '--dag-id', 'etl', '--since', future, '--yes']],
    ['replay-events', () => ['replay-events', '--database-url', db.url, '--dag-id', 'etl', '--since', future, '--yes']],
    ['audit-events', () => ['audit-events', '--database-url', db.url, '--since', future]],
    [
      'export-events',
      () => [
        'export-events',
        '--database-url',
        db.url,
        '--since',
        future,
        '--output',
        path.join(dir, `e-${Date.now()}`),
      ],
    ],
    ['explain', () => ['explain', '--database-url', db.url, '--all']],
  ]

  it.each(empty)(
    '%s: an empty selection is exit 4 with the flag, said in a warning; exit 0 without it, with a warning',
    async (_, argv) => {
      const before = await writeFootprint(db.knex)
      const plain = await runCli([...argv(), '--json'])
      expect(plain.code, plain.stdout + plain.stderr).toBe(0)
      // Exit 0, but said: a cron job's log shows why nothing happened.
      expect((envelope(plain) as {warnings: string[]}).warnings.length, plain.stdout).toBeGreaterThan(0)
      const strict = await runCli([...argv(), '--json', '--fail-if-empty'])
      expect(strict.code, strict.stdout + strict.stderr).toBe(4)
      const out = envelope(strict) as {status: number; warnings: string[]}
      expect(out.status).toBe(4)
      expect(out.warnings.some((w) => w.startsWith('--fail-if-empty: ') && w.endsWith(': exit 4'))).toBe(true)
      expect(await writeFootprint(db.knex)).toEqual(before)
    },
  )

  it('an empty --from-file is an empty selection too', async () => {
    const file = path.join(dir, 'empty.ndjson')
    await fs.writeFile(file, '\n\n')
    const result = await runCli(['complete', '--database-url', db.url, '--from-file', file, '--yes', '--fail-if-empty'])
    expect(result.code).toBe(4)
    expect(result.stderr).toContain(file)
    expect(result.stderr).toContain('--fail-if-empty')
  })

  it('a selection that matches keeps its own exit', async () => {
    const result = await runCli([
      'complete',
      '--database-url',
      db.url,
      '--dag-id',
      'etl',
      '--yes',
      '--dry-run',
      '--fail-if-empty',
      '--json',
    ])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect((envelope(result) as {result: {summary: {selected: number}}}).result.summary.selected).toBe(2)
  })
})
