import type {Knex} from 'knex'

import {clusterUrl} from './src/sandbox/cluster.js'
import {readState, sandboxDatabase, sandboxHome} from './src/sandbox/sandbox.js'

/**
 * Named environments for `airlock --env NAME` (DESIGN §3, third in the connection order).
 * Each connection is a URL, or a function that finds one when the environment is used.
 *
 * - sandbox: the embedded sandbox of this user (airlock sandbox start), if it was created.
 * - test:    AIRLOCK_TEST_DATABASE_URL, the server the test suite uses.
 * - pgenv:   the standard libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
 */
type Environment = Pick<Knex.Config, 'client'> & {connection: string | undefined | (() => Promise<string | undefined>)}

const fromPgEnvironment = async (): Promise<string | undefined> => {
  const {PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE} = process.env
  if (!PGHOST && !PGDATABASE && !PGUSER) return undefined
  const auth = PGUSER ? `${encodeURIComponent(PGUSER)}${PGPASSWORD ? `:${encodeURIComponent(PGPASSWORD)}` : ''}@` : ''
  return `postgresql://${auth}${PGHOST ?? '127.0.0.1'}:${PGPORT ?? '5432'}/${encodeURIComponent(PGDATABASE ?? PGUSER ?? 'postgres')}`
}

const fromSandbox = async (): Promise<string | undefined> => {
  const state = await readState(sandboxHome())
  return state ? clusterUrl(state, sandboxDatabase) : undefined
}

const environments: Record<string, Environment> = {
  sandbox: {client: 'pg', connection: fromSandbox},
  test: {client: 'pg', connection: process.env.AIRLOCK_TEST_DATABASE_URL},
  pgenv: {client: 'pg', connection: fromPgEnvironment},
}

export default environments
