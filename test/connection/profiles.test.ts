import {chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it, onTestFinished} from 'vitest'

import {displayPath} from '../../src/connection/configFile.js'
import type {BuiltInProfiles} from '../../src/connection/profiles.js'
import {resolveConnection, type ConnectionRequest} from '../../src/connection/resolve.js'
import {AirlockError} from '../../src/errors.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'

const directory = mkdtempSync(path.join(os.tmpdir(), 'airlock-profiles-'))
afterAll(() => rmSync(directory, {recursive: true, force: true}))
let files = 0

function configWith(text: string): string {
  const file = path.join(directory, `config-${++files}.toml`)
  writeFileSync(file, text)
  chmodSync(file, 0o600)
  return file
}

const builtIns: BuiltInProfiles = {
  sandbox: {connection: 'postgresql://builtin@sandbox/airflow'},
  test: {connection: 'postgresql://builtin@test/airflow'},
}

const config = configWith(`
[profiles.prod]
url = "postgresql://airlock@db.prod:5432/airflow?sslmode=verify-full&sslrootcert=/etc/ssl/prod-ca.pem"
password_env = "PROD_AIRFLOW_PASSWORD"

[profiles.staging]
host = "db.staging"
port = 6432
user = "air lock"
database = "airflow"
sslmode = "require"
sslrootcert = "/etc/ssl/staging-ca.pem"

[profiles.test]
url = "postgresql://file@overrides-test/airflow"

[profiles.written]
host = "db"
user = "airlock"
password = "p@ss:word"
`)
// As messages show it (the home directory as ~).
const shown = displayPath(config)

async function resolve(request: ConnectionRequest, environment: NodeJS.ProcessEnv = {AIRLOCK_CONFIG: config}) {
  const warnings: string[] = []
  const resolved = await resolveConnection(request, environment, builtIns, (message) => warnings.push(message))
  return {...resolved, warnings}
}

async function refusal(
  request: ConnectionRequest,
  environment: NodeJS.ProcessEnv = {AIRLOCK_CONFIG: config},
): Promise<AirlockError> {
  const error = await resolveConnection(request, environment, builtIns).catch((caught: unknown) => caught)
  expect(error).toBeInstanceOf(AirlockError)
  expect((error as AirlockError).exit).toBe(2)
  return error as AirlockError
}

describe('profiles of the configuration file', () => {
  it('a profile URL, with the password from password_env (encoded into the URL, never written in the file)', async () => {
    const resolved = await resolve({profile: 'prod'}, {AIRLOCK_CONFIG: config, PROD_AIRFLOW_PASSWORD: 'p@ss/w%rd'})
    expect(resolved.source).toBe(`profile "prod" (${shown})`)
    expect(resolved.url).toBe(
      'postgresql://airlock:p%40ss%2Fw%25rd@db.prod:5432/airflow?sslmode=verify-full&sslrootcert=/etc/ssl/prod-ca.pem',
    )
    expect(resolved.warnings).toEqual([])
  })

  it('password_env naming a variable that is not set: exit 2 naming it', async () => {
    const error = await refusal({profile: 'prod'})
    expect(error.message).toBe(
      `profile "prod" (${shown}) reads its password from PROD_AIRFLOW_PASSWORD, which is not set.`,
    )
  })

  it('a profile of parts becomes the URL libpq would read', async () => {
    expect((await resolve({profile: 'staging'})).url).toBe(
      'postgresql://air%20lock@db.staging:6432/airflow?sslmode=require&sslrootcert=%2Fetc%2Fssl%2Fstaging-ca.pem',
    )
  })

  it('a password written in the file works and is warned about', async () => {
    const resolved = await resolve({profile: 'written'})
    expect(resolved.url).toBe('postgresql://airlock:p%40ss%3Aword@db:5432/')
    expect(resolved.warnings).toEqual([
      expect.stringContaining('has its password written in the file; name a variable with password_env'),
    ])
  })

  it('a file profile of a built-in name wins over the built-in; other built-in names still work', async () => {
    expect(await resolve({profile: 'test'})).toMatchObject({
      url: 'postgresql://file@overrides-test/airflow',
      source: `profile "test" (${shown})`,
    })
    expect(await resolve({profile: 'sandbox'})).toMatchObject({
      url: 'postgresql://builtin@sandbox/airflow',
      source: 'profile "sandbox" (built in)',
    })
  })

  it('--env still works, as a deprecated alias: file profiles first, then the built-in names', async () => {
    const fromFile = await resolve({env: 'test'})
    expect(fromFile.url).toBe('postgresql://file@overrides-test/airflow')
    expect(fromFile.warnings).toEqual([
      '--env is deprecated; use --profile test (the same names, and the profiles of the configuration file)',
    ])
    expect((await resolve({env: 'sandbox'})).source).toBe('profile "sandbox" (built in)')
  })

  it('AIRLOCK_PROFILE names the profile when the flag does not; the flag wins, and AIRLOCK_DATABASE_URL before both', async () => {
    expect((await resolve({}, {AIRLOCK_CONFIG: config, AIRLOCK_PROFILE: 'test'})).source).toBe(
      `profile "test" (${shown})`,
    )
    expect((await resolve({profile: 'sandbox'}, {AIRLOCK_CONFIG: config, AIRLOCK_PROFILE: 'test'})).source).toBe(
      'profile "sandbox" (built in)',
    )
    const first = await resolve(
      {profile: 'test'},
      {AIRLOCK_CONFIG: config, AIRLOCK_DATABASE_URL: 'postgresql://a@env/airflow'},
    )
    expect(first.source).toBe('AIRLOCK_DATABASE_URL')
  })

  it('an unknown profile: exit 2 naming the file searched, its profiles and the close matches', async () => {
    const error = await refusal({profile: 'prdo'})
    expect(error.message).toBe(`No profile "prdo" in ${shown}, nor among the built-in ones.`)
    expect(error.actions).toEqual([
      'Did you mean prod?',
      `Profiles in ${shown}: prod, staging, test, written; built in: sandbox, test.`,
    ])
  })

  it('no configuration file: exit 2 saying where it looked, with a minimal example; built-in names still work', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'airlock-xdg-'))
    onTestFinished(() => rmSync(empty, {recursive: true, force: true}))
    const error = await refusal({profile: 'prod'}, {XDG_CONFIG_HOME: empty})
    expect(error.message).toContain(
      `no configuration file at ${path.join(empty, 'airlock', 'config.toml')} (from XDG_CONFIG_HOME)`,
    )
    expect(error.actions[0]).toContain('[profiles.prod]\n    url = "postgresql://')
    expect((await resolve({profile: 'sandbox'}, {XDG_CONFIG_HOME: empty})).source).toBe('profile "sandbox" (built in)')
    const named = await refusal({profile: 'sandbox'}, {AIRLOCK_CONFIG: path.join(empty, 'missing.toml')})
    expect(named.message).toContain('AIRLOCK_CONFIG names')
  })

  it('a TOML syntax error: exit 2 with the file and line', async () => {
    const broken = configWith('[profiles.prod]\nurl = "postgresql://db/airflow"\nport = = 5432\n')
    const error = await refusal({profile: 'prod'}, {AIRLOCK_CONFIG: broken})
    expect(error.message).toMatch(new RegExp(`^${broken} line 3, column \\d+: `))
  })

  it('is not read unless a profile is named: a broken file does not stop DATABASE_URL', async () => {
    const broken = configWith('this is not TOML')
    const resolved = await resolve({}, {AIRLOCK_CONFIG: broken, DATABASE_URL: 'postgresql://d@database-url/airflow'})
    expect(resolved.source).toBe('DATABASE_URL')
  })
})

describe('airlock doctor --profile', () => {
  let database: TestDatabase
  let home: string
  beforeAll(async () => {
    database = await createTestDatabase('3.0', 1)
    home = mkdtempSync(path.join(os.tmpdir(), 'airlock-home-'))
    const url = new URL(database.url)
    mkdirSync(path.join(home, 'config', 'airlock'), {recursive: true})
    // Parts, not the URL: the test database is reached only if host, port, user and database are all used.
    writeFileSync(
      path.join(home, 'config', 'airlock', 'config.toml'),
      [
        '[profiles.x]',
        `host = "${url.hostname}"`,
        `port = ${url.port || 5432}`,
        `user = "${decodeURIComponent(url.username)}"`,
        `database = "${database.name}"`,
        'password_env = "X_PASSWORD"',
      ].join('\n'),
    )
  })
  afterAll(async () => {
    await database?.drop()
    if (home) rmSync(home, {recursive: true, force: true})
  })

  it("connects with the profile's settings and names it as the source", async () => {
    const env = {
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, 'config'),
      X_PASSWORD: decodeURIComponent(new URL(database.url).password) || 'unused',
    }
    // DATABASE_URL comes after --profile: were it used, doctor would report another database.
    const result = await runCli(['doctor', '--profile', 'x', '--json'], {
      env: {...env, DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none'},
    })
    const out = envelope(result) as {status: number; result: {connection: {target: string; source: string}}}
    expect(result.code, result.stderr).toBe(0)
    expect(out.result.connection.source).toBe('profile "x" (~/config/airlock/config.toml)')
    expect(out.result.connection.target).toMatch(new RegExp(`/${database.name}$`))

    const unknown = await runCli(['doctor', '--profile', 'y'], {env})
    expect(unknown.code).toBe(2)
    expect(unknown.stderr + unknown.stdout).toContain('No profile "y"')
  })
})
