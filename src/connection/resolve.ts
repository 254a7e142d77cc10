import {usageError} from '../errors.js'
import {toDatabaseUrl} from './url.js'

/** Where the connection came from, reported by doctor and in errors so the operator can fix the right place. */
export type ConnectionSource =
  | 'flag --database-url'
  | 'AIRLOCK_DATABASE_URL'
  | `knexfile environment "${string}"`
  | 'DATABASE_URL'
  | 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN'
  | 'embedded sandbox'

export interface ResolvedConnection {
  url: string
  source: ConnectionSource
}

export interface ConnectionRequest {
  databaseUrl?: string | undefined
  env?: string | undefined
  embedded?: boolean | undefined
}

/** A knexfile environment: a URL, or a function giving one (the sandbox's is only known at run time). */
export type KnexfileConnection = string | undefined | (() => Promise<string | undefined> | string | undefined)
export type KnexfileEnvironments = Record<string, {connection: KnexfileConnection}>

/**
 * First found wins: --database-url, AIRLOCK_DATABASE_URL, the knexfile environment
 * named by --env, DATABASE_URL, then Airflow's own AIRFLOW__DATABASE__SQL_ALCHEMY_CONN.
 * --embedded is handled by the caller (it has to start the sandbox first).
 */
export async function resolveConnection(
  request: ConnectionRequest,
  environment: NodeJS.ProcessEnv,
  knexfile: KnexfileEnvironments,
): Promise<ResolvedConnection> {
  if (request.databaseUrl) return {url: toDatabaseUrl(request.databaseUrl, '--database-url'), source: 'flag --database-url'}

  const fromAirlock = environment.AIRLOCK_DATABASE_URL
  if (fromAirlock) return {url: toDatabaseUrl(fromAirlock, 'AIRLOCK_DATABASE_URL'), source: 'AIRLOCK_DATABASE_URL'}

  if (request.env) {
    const entry = knexfile[request.env]
    if (!entry) {
      throw usageError(`--env ${request.env} is not an environment of knexfile.ts.`, [`Use one of: ${Object.keys(knexfile).join(', ')}.`])
    }

    const connection = typeof entry.connection === 'function' ? await entry.connection() : entry.connection
    if (!connection) {
      throw usageError(`The knexfile environment "${request.env}" has no connection configured.`, [
        'See the README section "Connecting" for the variables each environment reads.',
      ])
    }

    const source: ConnectionSource = `knexfile environment "${request.env}"`
    return {url: toDatabaseUrl(connection, source), source}
  }

  const fromDatabaseUrl = environment.DATABASE_URL
  if (fromDatabaseUrl) return {url: toDatabaseUrl(fromDatabaseUrl, 'DATABASE_URL'), source: 'DATABASE_URL'}

  const fromAirflow = environment.AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
  if (fromAirflow) {
    return {url: toDatabaseUrl(fromAirflow, 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN'), source: 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN'}
  }

  throw usageError('No database to connect to.', [
    'Pass --database-url postgresql://user@host:5432/airflow,',
    "or set AIRLOCK_DATABASE_URL (or Airflow's own AIRFLOW__DATABASE__SQL_ALCHEMY_CONN),",
    'or use --embedded for the local sandbox (airlock sandbox start).',
  ])
}
