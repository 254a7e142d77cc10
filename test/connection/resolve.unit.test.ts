import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {AirlockError} from '../../src/errors.js'
import type {BuiltInProfiles} from '../../src/connection/profiles.js'
import {resolveConnection} from '../../src/connection/resolve.js'

const knexfile: BuiltInProfiles = {
  staging: {connection: 'postgresql://k@knexfile/airflow'},
  lazy: {connection: () => Promise.resolve('postgresql+psycopg2://k@lazy/airflow')},
  empty: {connection: undefined, missing: 'Set STAGING_URL.'},
}

// An empty configuration directory: the developer's own ~/.config/airlock must not take part.
const noConfig = {XDG_CONFIG_HOME: mkdtempSync(path.join(os.tmpdir(), 'airlock-noconfig-'))}
afterAll(() => rmSync(noConfig.XDG_CONFIG_HOME, {recursive: true, force: true}))
const everything = {
  ...noConfig,
  AIRLOCK_DATABASE_URL: 'postgresql://a@airlock-env/airflow',
  DATABASE_URL: 'postgresql://d@database-url/airflow',
  AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: 'postgresql+psycopg2://f@airflow-conn/airflow',
}

describe('resolveConnection: first found wins', () => {
  it('prefers the flag over everything', async () => {
    const resolved = await resolveConnection(
      {databaseUrl: 'postgresql://flag@h/db', env: 'staging'},
      everything,
      knexfile,
    )
    expect(resolved).toEqual({url: 'postgresql://flag@h/db', source: 'flag --database-url'})
  })

  it('then AIRLOCK_DATABASE_URL, even when --env is given', async () => {
    const resolved = await resolveConnection({env: 'staging'}, everything, knexfile)
    expect(resolved.source).toBe('AIRLOCK_DATABASE_URL')
    expect(resolved.url).toContain('airlock-env')
  })

  it('then the built-in profile named by --profile or the deprecated --env (a URL or a function)', async () => {
    const {AIRLOCK_DATABASE_URL: _, ...rest} = everything
    expect(await resolveConnection({profile: 'staging'}, rest, knexfile)).toEqual({
      url: 'postgresql://k@knexfile/airflow',
      source: 'profile "staging" (built in)',
    })
    expect((await resolveConnection({env: 'lazy'}, rest, knexfile)).url).toBe('postgresql://k@lazy/airflow')
  })

  it("then DATABASE_URL, then Airflow's own SQLAlchemy URL with +driver stripped", async () => {
    const {AIRLOCK_DATABASE_URL: _, ...rest} = everything
    expect((await resolveConnection({}, rest, knexfile)).source).toBe('DATABASE_URL')
    const onlyAirflow = {
      ...noConfig,
      AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: everything.AIRFLOW__DATABASE__SQL_ALCHEMY_CONN,
    }
    expect(await resolveConnection({}, onlyAirflow, knexfile)).toEqual({
      url: 'postgresql://f@airflow-conn/airflow',
      source: 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN',
    })
  })

  it('says what to do when nothing is configured (exit 2)', async () => {
    const error = await resolveConnection({}, {}, knexfile).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(AirlockError)
    expect((error as AirlockError).exit).toBe(2)
    expect((error as AirlockError).actions.join(' ')).toContain('--embedded')
  })

  it('rejects an unknown or empty built-in profile with exit 2', async () => {
    const unknown = (await resolveConnection({profile: 'nope'}, noConfig, knexfile).catch(
      (e: unknown) => e,
    )) as AirlockError
    expect(unknown.exit).toBe(2)
    expect(unknown.actions.at(-1)).toBe('Built-in profiles: staging, lazy, empty.')
    const empty = (await resolveConnection({profile: 'empty'}, noConfig, knexfile).catch(
      (e: unknown) => e,
    )) as AirlockError
    expect(empty.exit).toBe(2)
    expect(empty.message).toBe('The built-in profile "empty" finds no connection.')
    expect(empty.actions).toEqual(['Set STAGING_URL.'])
  })
})
