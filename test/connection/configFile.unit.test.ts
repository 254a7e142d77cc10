import {chmodSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {configLocation, readConfigFile} from '../../src/connection/configFile.js'
import {AirlockError} from '../../src/errors.js'

const directory = mkdtempSync(path.join(os.tmpdir(), 'airlock-config-'))
afterAll(() => rmSync(directory, {recursive: true, force: true}))
let files = 0

/** A configuration file with `text`, mode 600 unless told. */
function configWith(text: string, mode = 0o600): string {
  const file = path.join(directory, `config-${++files}.toml`)
  writeFileSync(file, text)
  chmodSync(file, mode)
  return file
}

async function read(file: string) {
  const warnings: string[] = []
  const config = await readConfigFile({path: file, chosenBy: 'AIRLOCK_CONFIG'}, (message) => warnings.push(message))
  return {config, warnings}
}

async function refusal(text: string): Promise<AirlockError> {
  const file = configWith(text)
  const error = await read(file).catch((caught: unknown) => caught)
  expect(error).toBeInstanceOf(AirlockError)
  expect((error as AirlockError).exit).toBe(2)
  expect((error as AirlockError).message).toContain(file)
  return error as AirlockError
}

describe('configLocation', () => {
  it('is AIRLOCK_CONFIG, else $XDG_CONFIG_HOME/airlock/config.toml, else ~/.config/airlock/config.toml', () => {
    expect(configLocation({AIRLOCK_CONFIG: '/etc/airlock.toml', XDG_CONFIG_HOME: '/x'})).toEqual({
      path: '/etc/airlock.toml',
      chosenBy: 'AIRLOCK_CONFIG',
    })
    expect(configLocation({XDG_CONFIG_HOME: '/x'})).toEqual({
      path: '/x/airlock/config.toml',
      chosenBy: 'XDG_CONFIG_HOME',
    })
    // A relative XDG_CONFIG_HOME is invalid by the specification and ignored.
    expect(configLocation({XDG_CONFIG_HOME: 'relative'}).path).toBe(
      path.join(os.homedir(), '.config', 'airlock', 'config.toml'),
    )
    expect(configLocation({}).chosenBy).toBe('the default')
  })
})

describe('readConfigFile', () => {
  it('reads profiles written as a URL or as parts', async () => {
    const file = configWith(`
[profiles.prod]
url = "postgresql://airlock@db.prod:5432/airflow?sslmode=verify-full"
password_env = "PROD_PASSWORD"

[profiles.staging]
host = "db.staging"
port = 6432
user = "airlock"
database = "airflow"
sslmode = "require"
`)
    const {config, warnings} = await read(file)
    expect(Object.fromEntries(config!.profiles)).toEqual({
      prod: {url: 'postgresql://airlock@db.prod:5432/airflow?sslmode=verify-full', password_env: 'PROD_PASSWORD'},
      staging: {host: 'db.staging', port: 6432, user: 'airlock', database: 'airflow', sslmode: 'require'},
    })
    expect(warnings).toEqual([])
  })

  it('is undefined when there is no file', async () => {
    expect((await read(path.join(directory, 'absent.toml'))).config).toBeUndefined()
  })

  it('refuses an unknown key naming the file, the profile and the key', async () => {
    const error = await refusal('[profiles.prod]\nhost = "db"\nsslmod = "require"\n')
    expect(error.message).toContain('profile "prod": unknown key "sslmod"')
    expect(error.actions.join(' ')).toContain('sslmode')
    expect((await refusal('default_profile = "prod"\n')).message).toContain('unknown key "default_profile"')
    expect((await refusal('[profiles.prod.tls]\nmode = "require"\n')).message).toContain(
      'profile "prod": unknown key "tls"',
    )
  })

  it('refuses a TOML syntax error with the line, without quoting the file', async () => {
    const error = await refusal('[profiles.prod]\nhost = "db"\npassword = "hunter22\nuser = "x"\n')
    expect(error.message).toMatch(/line 3, column \d+/)
    expect(error.message).not.toContain('hunter22')
  })

  it('refuses values of the wrong kind, url beside its parts, and a profile with neither', async () => {
    expect((await refusal('[profiles.a]\nhost = "db"\nport = "5432"\n')).message).toContain('port must be a number')
    expect((await refusal('[profiles.a]\nhost = "db"\nsslmode = "required"\n')).message).toContain(
      'sslmode "required" is not one of',
    )
    expect((await refusal('[profiles.a]\nurl = "postgresql://db/airflow"\nhost = "db"\n')).message).toContain(
      'either url or its parts',
    )
    expect((await refusal('[profiles.a]\nuser = "airlock"\n')).message).toContain('needs url, or host')
    expect(
      (await refusal('[profiles.a]\nurl = "postgresql://u:pw@db/airflow"\npassword_env = "PW"\n')).message,
    ).toContain('keep only password_env')
  })

  it('warns when a file holding a password is readable by others, not when it is 600 or holds none', async () => {
    const withPassword = '[profiles.a]\nhost = "db"\npassword = "hunter22"\n'
    expect((await read(configWith(withPassword, 0o644))).warnings).toEqual([
      expect.stringContaining('group or others can read it (chmod 600'),
    ])
    expect((await read(configWith(withPassword, 0o600))).warnings).toEqual([])
    expect((await read(configWith('[profiles.a]\nhost = "db"\n', 0o644))).warnings).toEqual([])
    const inUrl = '[profiles.a]\nurl = "postgresql://u:hunter22@db/airflow"\n'
    expect((await read(configWith(inUrl, 0o640))).warnings).toHaveLength(1)
  })
})
