import {usageError} from '../errors.js'
import {closeMatches} from '../input/closeMatches.js'
import {
  configLocation,
  displayPath,
  holdsWrittenPassword,
  readConfigFile,
  type ConfigFile,
  type ConfigLocation,
  type FileProfile,
} from './configFile.js'
import {toDatabaseUrl} from './url.js'

/** A built-in profile's connection: a URL, or a function finding one when the profile is used (the sandbox's is only known then). */
/** Where the connection came from, reported by doctor and in errors so the operator can fix the right place. */
export type ConnectionSource =
  | 'flag --database-url'
  | 'AIRLOCK_DATABASE_URL'
  | `profile "${string}" (${string})`
  | 'DATABASE_URL'
  | 'AIRFLOW__DATABASE__SQL_ALCHEMY_CONN'
  | 'embedded sandbox'

export interface ResolvedConnection {
  url: string
  source: ConnectionSource
}

export type BuiltInConnection = string | undefined | (() => Promise<string | undefined> | string | undefined)
/** `missing`: what to do when the profile finds no connection. */
export type BuiltInProfiles = Record<string, {connection: BuiltInConnection; missing?: string}>

/**
 * The connection of the profile `name`: the configuration file's profile of that name, else the
 * built-in one (sandbox, test, pgenv), so a file can redefine a built-in name.
 */
export async function resolveProfile(
  name: string,
  environment: NodeJS.ProcessEnv,
  builtIns: BuiltInProfiles,
  warn: (message: string) => void,
): Promise<ResolvedConnection> {
  const location = configLocation(environment)
  const file = await readConfigFile(location, warn)
  if (!file && location.chosenBy === 'AIRLOCK_CONFIG') {
    throw usageError(`AIRLOCK_CONFIG names ${location.path}, which does not exist.`, [
      exampleAction(name),
      'Or unset AIRLOCK_CONFIG.',
    ])
  }

  const fromFile = file?.profiles.get(name)
  if (file && fromFile) {
    const source = `profile "${name}" (${displayPath(file.path)})` as const
    if (holdsWrittenPassword(fromFile))
      warn(`${source} has its password written in the file; name a variable with password_env, or use ~/.pgpass`)
    return {url: profileUrl(fromFile, source, environment), source}
  }

  const builtIn = Object.hasOwn(builtIns, name) ? builtIns[name] : undefined
  if (builtIn) {
    const connection = typeof builtIn.connection === 'function' ? await builtIn.connection() : builtIn.connection
    if (!connection)
      throw usageError(`The built-in profile "${name}" finds no connection.`, builtIn.missing ? [builtIn.missing] : [])
    const source = `profile "${name}" (built in)` as const
    return {url: toDatabaseUrl(connection, source), source}
  }

  throw unknownProfile(name, location, file, Object.keys(builtIns))
}

/** The URL a file profile describes, with the password from password_env when it names one. */
function profileUrl(profile: FileProfile, origin: string, environment: NodeJS.ProcessEnv): string {
  let password = profile.password
  if (profile.password_env !== undefined) {
    password = environment[profile.password_env]
    if (!password) {
      throw usageError(`${origin} reads its password from ${profile.password_env}, which is not set.`, [
        `export ${profile.password_env}=… before running airlock, or remove password_env to use ~/.pgpass or PGPASSWORD.`,
      ])
    }
  }

  if (profile.url !== undefined) {
    const url = toDatabaseUrl(profile.url, origin)
    if (password === undefined) return url
    const parsed = new URL(url)
    // Encoded first: the setter leaves '%' alone, and the password is decoded where it is used.
    parsed.password = encodeURIComponent(password)
    return parsed.toString()
  }

  const host = profile.host!
  if (host.startsWith('/')) {
    throw usageError(`${origin}: host "${host}" is a socket directory; write it as a url instead.`, [
      `url = "postgresql://${profile.user ?? 'airflow'}@localhost/${profile.database ?? 'airflow'}?host=${host}"`,
    ])
  }

  const user = profile.user === undefined ? '' : encodeURIComponent(profile.user)
  const auth = user || password ? `${user}${password ? `:${encodeURIComponent(password)}` : ''}@` : ''
  const address = host.includes(':') ? `[${host}]` : host
  const query = new URLSearchParams()
  for (const key of ['sslmode', 'sslrootcert', 'sslcert', 'sslkey'] as const)
    if (profile[key]) query.set(key, profile[key])
  const database = profile.database === undefined ? '' : encodeURIComponent(profile.database)
  const search = query.size > 0 ? `?${query.toString()}` : ''
  return toDatabaseUrl(`postgresql://${auth}${address}:${profile.port ?? 5432}/${database}${search}`, origin)
}

function unknownProfile(name: string, location: ConfigLocation, file: ConfigFile | undefined, builtInNames: string[]) {
  const shown = displayPath(location.path)
  const fileNames = file ? [...file.profiles.keys()] : []
  const close = closeMatches(name, [...new Set([...fileNames, ...builtInNames])])
  const guess = close.length > 0 ? [`Did you mean ${close.join(', ')}?`] : []
  if (!file) {
    const rule =
      location.chosenBy === 'the default'
        ? 'AIRLOCK_CONFIG or XDG_CONFIG_HOME would choose another'
        : `from ${location.chosenBy}`
    return usageError(
      `No profile "${name}": there is no configuration file at ${shown} (${rule}), and no built-in profile of that name.`,
      [...guess, exampleAction(name), `Built-in profiles: ${builtInNames.join(', ')}.`],
    )
  }

  return usageError(`No profile "${name}" in ${shown}, nor among the built-in ones.`, [
    ...guess,
    `Profiles in ${shown}: ${fileNames.length > 0 ? fileNames.join(', ') : '(none)'}; built in: ${builtInNames.join(', ')}.`,
  ])
}

/** A minimal profile to start the file with, named as asked. */
function exampleAction(name: string): string {
  const key = /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name)
  return [
    `Create the file (or point AIRLOCK_CONFIG at one) with, for example:`,
    `    [profiles.${key}]`,
    `    url = "postgresql://airflow@db.example.com:5432/airflow?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem"`,
    `    password_env = "AIRFLOW_DB_PASSWORD"   # or leave it out and use ~/.pgpass`,
  ].join('\n')
}
