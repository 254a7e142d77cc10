import {clusterUrl} from '../sandbox/cluster.js'
import {readState, sandboxDatabase, sandboxHome} from '../sandbox/sandbox.js'
import type {BuiltInProfiles} from './profiles.js'

/**
 * The built-in profiles of `airlock --profile NAME` (and of the deprecated `--env NAME`), used
 * when the configuration file defines no profile of that name. Each connection is a URL, or a
 * function that finds one when the profile is used. The repository's knexfile.ts exports these
 * same environments for knex's own tools.
 *
 * - sandbox: the embedded sandbox of this user (airlock sandbox start), if it was created.
 * - test:    AIRLOCK_TEST_DATABASE_URL, the server the test suite uses.
 * - pgenv:   the standard libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
 */
const fromPgEnvironment = (): string | undefined => {
  const {PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE} = process.env
  if (!PGHOST && !PGDATABASE && !PGUSER) return undefined
  const auth = PGUSER ? `${encodeURIComponent(PGUSER)}${PGPASSWORD ? `:${encodeURIComponent(PGPASSWORD)}` : ''}@` : ''
  return `postgresql://${auth}${PGHOST ?? '127.0.0.1'}:${PGPORT ?? '5432'}/${encodeURIComponent(PGDATABASE ?? PGUSER ?? 'postgres')}`
}

const fromSandbox = async (): Promise<string | undefined> => {
  const state = await readState(sandboxHome())
  return state ? clusterUrl(state, sandboxDatabase) : undefined
}

export const environments: BuiltInProfiles & Record<string, {client: 'pg'}> = {
  sandbox: {client: 'pg', connection: fromSandbox, missing: 'Create the sandbox first: airlock sandbox start.'},
  test: {
    client: 'pg',
    connection: () => process.env.AIRLOCK_TEST_DATABASE_URL,
    missing: 'Set AIRLOCK_TEST_DATABASE_URL.',
  },
  pgenv: {
    client: 'pg',
    connection: fromPgEnvironment,
    missing: 'Set PGHOST, PGUSER or PGDATABASE (and PGPORT, PGPASSWORD as needed).',
  },
}

export const environmentNames = Object.keys(environments)
