import {randomBytes} from 'node:crypto'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {hasColour} from '../support/ansi.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * `--verbose` as an operator runs it: one stderr line per statement, connect, BEGIN, COMMIT and
 * ROLLBACK, stdout untouched, and neither the password of the URL nor a value bound to a
 * statement in any line. The CLI logs in as a role of its own with a password, so the password is
 * really in the URL (a trust-auth server ignores it; a password server checks it).
 */
let db: TestDatabase
let url: string
const role = `airlock_verbose_${randomBytes(4).toString('hex')}`
// Distinctive, so a leak cannot hide among ordinary words; ':' and '@' test the URL-encoded form too.
const password = `Pw-${randomBytes(6).toString('hex')}:@x`
// A bound value (--dag-id): it reaches the server as $1, never the log.
const dagId = `payroll_${randomBytes(3).toString('hex')}`

beforeAll(async () => {
  db = await createTestDatabase('3.0')
  await db.knex.raw(`create role ?? login password '${password.replaceAll("'", "''")}'`, [role])
  await db.knex.raw('grant select, insert, update, delete on all tables in schema public to ??', [role])
  await db.knex.raw('grant usage, select on all sequences in schema public to ??', [role])
  const parsed = new URL(db.url)
  parsed.username = role
  parsed.password = encodeURIComponent(password)
  url = parsed.toString()
})

afterAll(async () => {
  if (db) {
    await db.knex.raw('drop owned by ??', [role]).catch(() => undefined)
    await db.knex.raw('drop role if exists ??', [role]).catch(() => undefined)
    await db.drop()
  }
})

const threeRunningTasks = () => scenario(db.knex).producer(dagId, {tasks: 3, outlets: 2}).build()

/** A statement line: a prepared name or quoted first words, a duration, a row count. */
const statementLine = /^sql (airlock_[a-z0-9_]+_[0-9a-f]{12}|"[^"]+") \d+\.\d ms \(\d+ rows?\)$/
const lines = (stderr: string) => stderr.split('\n').filter((line) => line !== '')

function expectNoPassword(output: string) {
  expect(output).not.toContain(password)
  expect(output).not.toContain(encodeURIComponent(password))
}

describe('--verbose', () => {
  it('doctor --json: connect and every statement on stderr with its duration; stdout is the one envelope; no password', async () => {
    const result = await runCli(['doctor', '--database-url', url, '--verbose', '--json'])
    expect(result.code).toBe(0)
    expect(envelope(result)).toMatchObject({status: 0, result: {connection: {user: role}}})
    const logged = lines(result.stderr)
    const host = new URL(db.url).hostname
    // sslmode prefer: a TLS attempt first, which a server without TLS refuses (a `failed` line), then plain.
    const connects = logged.filter((line) => line.startsWith('connect '))
    expect(logged.slice(0, connects.length)).toEqual(connects)
    expect(connects.at(-1)).toMatch(
      new RegExp(`^connect ${role}@${host}:\\d+/${db.name} \\(sslmode prefer, (no )?TLS\\) \\d+\\.\\d ms$`),
    )
    const statements = logged.filter((line) => line.startsWith('sql '))
    // The server, the alembic head, the tables, the privileges, the settings: more than a handful.
    expect(statements.length).toBeGreaterThan(5)
    for (const line of statements) expect(line).toMatch(statementLine)
    expect(result.stdout).not.toMatch(/^sql /m)
    expectNoPassword(result.stderr + result.stdout)
  })

  it('complete --dry-run: prepared statements by name, each transaction begun with its timeouts and rolled back, never committed', async () => {
    await threeRunningTasks()
    const before = await writeFootprint(db.knex)
    const result = await runCli([
      'complete',
      '--database-url',
      url,
      '--dag-id',
      dagId,
      '--dry-run',
      '--verbose',
      '--json',
    ])
    expect(result.code).toBe(0)
    expect(envelope(result)).toMatchObject({status: 0, result: {summary: {selected: 3, dry_run: true}}})
    const logged = lines(result.stderr)
    expect(logged.filter((line) => /^sql airlock_lock_ti_[0-9a-f]{12} \d+\.\d ms \(1 row\)$/.test(line))).toHaveLength(
      3,
    )
    const begins = logged.filter((line) => line.startsWith('begin '))
    expect(begins).toHaveLength(3)
    for (const line of begins) {
      expect(line).toMatch(
        /^begin read committed \(lock_timeout \d+ms, statement_timeout \d+ms, idle_in_transaction_session_timeout \d+ms, plan_cache_mode force_generic_plan, application_name airlock:complete:\S+\) \d+\.\d ms$/,
      )
    }
    expect(logged.filter((line) => /^rollback \d+\.\d ms$/.test(line))).toHaveLength(3)
    expect(logged.filter((line) => line.startsWith('commit'))).toEqual([])
    // Each prepared statement's whole text once, before its first use: the lock is readable by name.
    const lockName = logged.find((line) => line.startsWith('sql airlock_lock_ti_'))!.split(' ')[1]!
    const texts = logged.filter((line) => line.startsWith(`text ${lockName} `))
    expect(texts).toEqual([
      `text ${lockName} select state, try_number, xmin::text as xmin from task_instance where id = $1 for update`,
    ])
    expect(logged.indexOf(texts[0]!)).toBeLessThan(
      logged.indexOf(logged.find((line) => line.startsWith(`sql ${lockName} `))!),
    )
    // Every line is one of the kinds above: nothing else reaches stderr under --json.
    for (const line of logged) expect(line).toMatch(/^(connect|sql|text|begin|commit|rollback) /)
    expectNoPassword(result.stderr + result.stdout)
    // The DAG id is bound as $1 of the selection: under --json, stderr holds only the log, so it never appears.
    expect(result.stderr).not.toContain(dagId)
    expect(await writeFootprint(db.knex)).toEqual(before)
  })

  it('human output: the report on stdout has no log line; AIRLOCK_VERBOSE=1 turns it on like the flag', async () => {
    await threeRunningTasks()
    const result = await runCli(['complete', '--database-url', url, '--dag-id', dagId, '--dry-run'], {
      env: {AIRLOCK_VERBOSE: '1'},
    })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('would')
    expect(result.stdout).not.toMatch(/^(sql|begin|rollback|connect) /m)
    expect(lines(result.stderr).filter((line) => statementLine.test(line)).length).toBeGreaterThan(5)
    expectNoPassword(result.stderr + result.stdout)
  })

  it('off by default: no log line', async () => {
    const result = await runCli(['doctor', '--database-url', url, '--json'])
    expect(result.code).toBe(0)
    expect(result.stderr).not.toMatch(/^(sql|connect|begin) /m)
  })
})

describe('--help and colour', () => {
  // oclif draws its section headers bold; FORCE_COLOR makes it do so off a terminal.

  it('is coloured with FORCE_COLOR alone (the control)', async () => {
    const result = await runCli(['doctor', '--help'], {env: {FORCE_COLOR: '1'}})
    expect(hasColour(result.stdout)).toBe(true)
  })

  it('NO_COLOR and --no-color win over FORCE_COLOR; --help lists --verbose and --no-color', async () => {
    const byEnv = await runCli(['doctor', '--help'], {env: {FORCE_COLOR: '1', NO_COLOR: '1'}})
    const byFlag = await runCli(['doctor', '--help', '--no-color'], {env: {FORCE_COLOR: '1'}})
    for (const result of [byEnv, byFlag]) {
      expect(result.code).toBe(0)
      expect(result.stdout).toContain('USAGE')
      expect(hasColour(result.stdout)).toBe(false)
    }
    expect(byFlag.stdout).toContain('--verbose')
    expect(byFlag.stdout).toContain('--no-color')
  })

  it('--no-color is accepted by a command, not refused as an unknown flag', async () => {
    const result = await runCli(['doctor', '--database-url', url, '--no-color', '--json'])
    expect(result.code).toBe(0)
  })
})
