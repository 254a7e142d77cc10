import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import fc from 'fast-check'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCli, type CliResult} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * Nothing an operator types is exit 1 (documented as a bug in airlock). Malformed values, drawn by
 * fast-check, for the flags, environment variables, config file and input files airlock reads:
 * each run ends with a documented exit code other than 1, says nothing about a bug, and writes
 * nothing. A counterexample is printed by fast-check with its seed, so a failure replays.
 */
let db: TestDatabase
let dir: string
beforeAll(async () => {
  db = await createTestDatabase('3.0')
  await scenario(db.knex)
    .producer('etl', {tasks: 2, outlets: 1})
    .consumer('report', {on: ['etl']})
    .build()
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-malformed-'))
})
afterAll(async () => {
  await fs.rm(dir, {recursive: true, force: true})
  await db?.drop()
})

const documented = new Set([0, 2, 3, 4, 5, 6, 7, 8])
const runs = {numRuns: 12, endOnFailure: true}

/** What an operator may paste: bad percent-escapes, control characters, huge, empty, odd unicode. */
const malformed = fc.oneof(
  fc.constantFrom('', ' ', '%', '%zz', '%E0%A4%A', '-1', '0', '1e309', 'NaN', '∞', '\u202e', '--', '=', '"', "'", '\\'),
  fc.string({maxLength: 40}),
  fc.string({unit: 'binary', maxLength: 20}),
  fc.string({minLength: 5000, maxLength: 20000}),
  fc.stringMatching(/^[a-z%0-9:/@?#=&.+-]{0,60}$/),
)
/** argv cannot carry a NUL byte (the kernel ends a string there): those go through files and variables. */
const argvValue = malformed.map((value) => value.replaceAll('\u0000', ''))

function expectHandled(result: CliResult, what: string): void {
  expect(documented.has(result.code ?? -1), `${what}: exit ${result.code}\n${result.stderr}`).toBe(true)
  expect(result.stderr).not.toContain('a bug in airlock')
}

describe('malformed input is never exit 1 and writes nothing', () => {
  it.each([
    ['doctor --database-url', (v: string) => ['doctor', '--database-url', v]],
    // The trial's case: a URL that parses, with a bad escape where the driver decodes.
    [
      'doctor --database-url, its user',
      (v: string) => ['doctor', '--database-url', `postgresql://${v}@127.0.0.1:5432/x`],
    ],
    [
      'doctor --database-url, its database',
      (v: string) => ['doctor', '--database-url', `postgresql://u@127.0.0.1:5432/${v}`],
    ],
    [
      'complete --lock-timeout',
      (v: string) => [
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--yes',
        '--dry-run',
        '--lock-timeout',
        v,
      ],
    ],
    [
      'complete --since',
      (v: string) => ['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--dry-run', '--since', v],
    ],
    [
      'complete --concurrency',
      (v: string) => [
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--yes',
        '--dry-run',
        '--concurrency',
        v,
      ],
    ],
    [
      'complete --end-date',
      (v: string) => ['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--dry-run', '--end-date', v],
    ],
    ['complete --ti-id', (v: string) => ['complete', '--database-url', db.url, '--ti-id', v, '--yes', '--dry-run']],
    ['complete --dag-id', (v: string) => ['complete', '--database-url', db.url, '--dag-id', v, '--yes', '--dry-run']],
    [
      'audit-events --duplicate-window',
      (v: string) => ['audit-events', '--database-url', db.url, '--duplicate-window', v],
    ],
    ['explain --stuck-after', (v: string) => ['explain', '--database-url', db.url, '--all', '--stuck-after', v]],
    ['explain --asset', (v: string) => ['explain', '--database-url', db.url, '--asset', v]],
    ['export-events --since', (v: string) => ['export-events', '--database-url', db.url, '--since', v]],
    ['--profile', (v: string) => ['doctor', '--profile', v]],
    ['--connect-timeout', (v: string) => ['doctor', '--database-url', db.url, '--connect-timeout', v]],
  ])('%s', async (what, argv) => {
    await fc.assert(
      fc.asyncProperty(argvValue, async (value) => {
        const before = await writeFootprint(db.knex)
        expectHandled(await runCli(argv(value)), `${what} ${JSON.stringify(value.slice(0, 80))}`)
        expect(await writeFootprint(db.knex)).toEqual(before)
      }),
      runs,
    )
  })

  it.each([
    ['AIRLOCK_PROFILE', (v: string) => ({AIRLOCK_PROFILE: v})],
    ['AIRLOCK_ASSUME_VERSION', (v: string) => ({AIRLOCK_ASSUME_VERSION: v})],
    ['AIRLOCK_CONNECT_TIMEOUT', (v: string) => ({AIRLOCK_CONNECT_TIMEOUT: v})],
    ['AIRFLOW__DATABASE__SQL_ALCHEMY_CONN', (v: string) => ({AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: v})],
    ['AIRFLOW__CORE__MULTI_TEAM', (v: string) => ({AIRFLOW__CORE__MULTI_TEAM: v})],
  ])('the environment variable %s', async (what, env) => {
    await fc.assert(
      fc.asyncProperty(malformed, async (value) => {
        // The environment cannot carry a NUL byte either.
        const result = await runCli(['doctor'], {env: env(value.replaceAll('\u0000', ''))})
        expectHandled(result, `${what}=${JSON.stringify(value.slice(0, 80))}`)
      }),
      runs,
    )
  })

  it('a config file of any content, or of the wrong types', async () => {
    const file = path.join(dir, 'config.toml')
    const wrongTypes = fc.constantFrom(
      '[profiles.x]\nurl = 5\n',
      '[profiles.x]\nurl = ["a"]\n',
      'profiles = 3\n',
      '[profiles]\nx = "postgresql://u@h/d"\n',
      '[profiles.x]\nurl = "postgresql://po%zz@127.0.0.1/x"\n',
      '[[profiles]]\n',
      'default_profile = true\n',
    )
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          wrongTypes,
          fc.uint8Array({maxLength: 200}).map((b) => Buffer.from(b).toString('latin1')),
        ),
        async (content) => {
          await fs.writeFile(file, content, 'latin1')
          const result = await runCli(['doctor', '--profile', 'x'], {env: {AIRLOCK_CONFIG: file}})
          expectHandled(result, `config ${JSON.stringify(content.slice(0, 80))}`)
        },
      ),
      runs,
    )
  })

  it('a --from-file of any bytes (not UTF-8, NUL, no newline) is refused or read, never a bug, nothing written', async () => {
    const file = path.join(dir, 'input.ndjson')
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({maxLength: 400}), async (bytes) => {
        await fs.writeFile(file, Buffer.from(bytes))
        const before = await writeFootprint(db.knex)
        for (const command of ['complete', 'replay-events']) {
          const result = await runCli([command, '--database-url', db.url, '--from-file', file, '--yes'])
          expectHandled(result, `${command} --from-file ${Buffer.from(bytes).toString('hex').slice(0, 80)}`)
        }
        expect(await writeFootprint(db.knex)).toEqual(before)
      }),
      runs,
    )
  })
})
