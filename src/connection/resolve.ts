import {usageError} from '../errors.js'
import {resolveProfile, type BuiltInProfiles, type ResolvedConnection} from './profiles.js'
import {toDatabaseUrl} from './url.js'

export interface ConnectionRequest {
  databaseUrl?: string | undefined
  profile?: string | undefined
  /** The deprecated --env: the same lookup as --profile. */
  env?: string | undefined
  embedded?: boolean | undefined
}

/**
 * First found wins: --database-url, AIRLOCK_DATABASE_URL, the profile named by --profile (or
 * AIRLOCK_PROFILE, or the deprecated --env), DATABASE_URL, then Airflow's own
 * AIRFLOW__DATABASE__SQL_ALCHEMY_CONN. --embedded is handled by the caller (it has to start the
 * sandbox first). The configuration file is read only when a profile is named.
 */
export async function resolveConnection(
  request: ConnectionRequest,
  environment: NodeJS.ProcessEnv,
  builtIns: BuiltInProfiles,
  warn: (message: string) => void = () => undefined,
): Promise<ResolvedConnection> {
  if (request.env !== undefined)
    warn(
      `--env is deprecated; use --profile ${request.env} (the same names, and the profiles of the configuration file)`,
    )
  if (request.databaseUrl)
    return {url: toDatabaseUrl(request.databaseUrl, '--database-url'), source: 'flag --database-url'}

  const fromAirlock = environment.AIRLOCK_DATABASE_URL
  if (fromAirlock) return {url: toDatabaseUrl(fromAirlock, 'AIRLOCK_DATABASE_URL'), source: 'AIRLOCK_DATABASE_URL'}

  const profile = request.profile ?? request.env ?? (environment.AIRLOCK_PROFILE || undefined)
  if (profile !== undefined) return resolveProfile(profile, environment, builtIns, warn)

  const fromDatabaseUrl = environment.DATABASE_URL
  if (fromDatabaseUrl) return {url: toDatabaseUrl(fromDatabaseUrl, 'DATABASE_URL'), source: 'DATABASE_URL'}

  const fromAirflow = environment.AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
  if (fromAirflow) {
    return {
      url: toDatabaseUrl(fromAirflow, 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN'),
      source: 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN',
    }
  }

  throw usageError('No database to connect to.', [
    'Pass --database-url postgresql://user@host:5432/airflow,',
    'or name a profile of ~/.config/airlock/config.toml with --profile NAME,',
    "or set AIRLOCK_DATABASE_URL (or Airflow's own AIRFLOW__DATABASE__SQL_ALCHEMY_CONN),",
    'or use --embedded for the local sandbox (airlock sandbox start).',
  ])
}
