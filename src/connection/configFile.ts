import {readFile, stat} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {sslModes, type SslMode} from '../engine/postgres/tls.js'
import {usageError} from '../errors.js'

/**
 * The operator's configuration file: named connection profiles, in TOML.
 *
 *     [profiles.prod]
 *     url = "postgresql://airlock@db.prod:5432/airflow?sslmode=verify-full&sslrootcert=/etc/ssl/prod-ca.pem"
 *     password_env = "PROD_AIRFLOW_PASSWORD"
 *
 * It is read only when a profile is asked for (--profile, AIRLOCK_PROFILE, --env), and the TOML
 * parser is imported then too: every other run starts without either.
 */
export interface ConfigLocation {
  path: string
  /** Which rule chose the path, for messages: 'AIRLOCK_CONFIG', 'XDG_CONFIG_HOME' or 'the default'. */
  chosenBy: 'AIRLOCK_CONFIG' | 'XDG_CONFIG_HOME' | 'the default'
}

/** A profile as written: a URL, or the parts of one. Secrets are optional and best left out. */
export interface FileProfile {
  url?: string
  host?: string
  port?: number
  user?: string
  database?: string
  sslmode?: SslMode
  sslrootcert?: string
  sslcert?: string
  sslkey?: string
  /** The name of the environment variable holding the password. */
  password_env?: string
  /** Accepted, with a warning: a password belongs in password_env or ~/.pgpass. */
  password?: string
}

export interface ConfigFile {
  path: string
  profiles: Map<string, FileProfile>
}

const stringKeys = [
  'url',
  'host',
  'user',
  'database',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'password_env',
  'password',
] as const
const profileKeys: readonly string[] = [...stringKeys, 'port']
/** The keys that spell out what `url` already says: one form or the other. */
const partKeys = [
  'host',
  'port',
  'user',
  'database',
  'password',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
] as const

/** `$AIRLOCK_CONFIG`, else `$XDG_CONFIG_HOME/airlock/config.toml`, else `~/.config/airlock/config.toml`. */
export function configLocation(environment: NodeJS.ProcessEnv): ConfigLocation {
  if (environment.AIRLOCK_CONFIG) return {path: path.resolve(environment.AIRLOCK_CONFIG), chosenBy: 'AIRLOCK_CONFIG'}
  // The XDG Base Directory specification: a relative XDG_CONFIG_HOME is invalid and ignored.
  const xdg = environment.XDG_CONFIG_HOME
  if (xdg && path.isAbsolute(xdg)) return {path: path.join(xdg, 'airlock', 'config.toml'), chosenBy: 'XDG_CONFIG_HOME'}
  return {path: path.join(os.homedir(), '.config', 'airlock', 'config.toml'), chosenBy: 'the default'}
}

/** The path as the operator would type it: the home directory as `~`. */
export function displayPath(file: string): string {
  const home = os.homedir()
  return home && file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file
}

/** The file at `location`, parsed and checked; undefined when there is none. */
export async function readConfigFile(
  location: ConfigLocation,
  warn: (message: string) => void,
): Promise<ConfigFile | undefined> {
  const shown = displayPath(location.path)
  let text: string
  try {
    text = await readFile(location.path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw usageError(`Cannot read the configuration file ${shown}: ${(error as Error).message}.`)
  }

  const {parse, TomlError} = await import('smol-toml')
  let document: Record<string, unknown>
  try {
    document = parse(text)
  } catch (error) {
    if (!(error instanceof TomlError)) throw error
    // Only the first line of the parser's message: the rest quotes the file, password and all.
    const reason = error.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '')
    throw usageError(`${shown} line ${error.line}, column ${error.column}: ${reason}.`, [
      'Fix the TOML syntax there (https://toml.io).',
    ])
  }

  const profiles = checkDocument(document, shown)
  // Whichever profile is used: the file is the exposed secret store. (libpq ignores such a
  // ~/.pgpass outright; a profile file also holds what is not secret, so it is only warned about.)
  const holdsPassword = [...profiles.values()].some(holdsWrittenPassword)
  if (holdsPassword && process.platform !== 'win32' && ((await stat(location.path)).mode & 0o077) !== 0) {
    warn(`${shown} holds a password and group or others can read it (chmod 600 ${shown})`)
  }

  return {path: location.path, profiles}
}

function checkDocument(document: Record<string, unknown>, shown: string): Map<string, FileProfile> {
  for (const key of Object.keys(document)) {
    if (key !== 'profiles')
      throw usageError(`${shown}: unknown key "${key}" (the file holds only [profiles.NAME] tables).`)
  }

  const profiles = new Map<string, FileProfile>()
  if (document.profiles === undefined) return profiles
  if (!isTable(document.profiles)) throw usageError(`${shown}: "profiles" must be tables, written [profiles.NAME].`)
  for (const [name, profile] of Object.entries(document.profiles)) {
    if (!isTable(profile)) throw usageError(`${shown}: profiles.${name} must be a table, written [profiles.${name}].`)
    profiles.set(name, checkProfile(profile, `${shown}, profile "${name}"`))
  }

  return profiles
}

function checkProfile(table: Record<string, unknown>, where: string): FileProfile {
  const strings: Partial<Record<(typeof stringKeys)[number], string>> = {}
  let port: number | undefined
  for (const [key, value] of Object.entries(table)) {
    if (key === 'port') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
        throw usageError(`${where}: port must be a number from 1 to 65535, such as 5432 (without quotes).`)
      }

      port = value
    } else if ((stringKeys as readonly string[]).includes(key)) {
      if (typeof value !== 'string' || value === '')
        throw usageError(`${where}: ${key} must be a non-empty string in quotes.`)
      strings[key as (typeof stringKeys)[number]] = value
    } else {
      throw usageError(`${where}: unknown key "${key}".`, [`A profile takes: ${profileKeys.join(', ')}.`])
    }
  }

  const {sslmode, ...rest} = strings
  if (sslmode !== undefined && !isSslMode(sslmode))
    throw usageError(`${where}: sslmode "${sslmode}" is not one of ${sslModes.join(', ')}.`)
  const profile: FileProfile = {
    ...rest,
    ...(port === undefined ? {} : {port}),
    ...(sslmode === undefined ? {} : {sslmode}),
  }

  if (profile.url !== undefined) {
    const both = partKeys.filter((key) => profile[key] !== undefined)
    if (both.length > 0) {
      throw usageError(`${where}: give either url or its parts, not both (${both.join(', ')} beside url).`, [
        'Put TLS settings in the URL: ?sslmode=verify-full&sslrootcert=/path/ca.pem.',
      ])
    }
  } else if (profile.host === undefined) {
    throw usageError(`${where}: needs url, or host (with port, user, database as needed).`)
  }

  if (profile.password_env !== undefined && holdsWrittenPassword(profile)) {
    throw usageError(
      `${where}: a password is written in the profile and password_env names another; keep only password_env.`,
    )
  }

  return profile
}

function isSslMode(value: string): value is SslMode {
  return (sslModes as readonly string[]).includes(value)
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
}

/** Whether a password is written in the profile: the password key, or one inside its url. */
export function holdsWrittenPassword(profile: FileProfile): boolean {
  if (profile.password !== undefined) return true
  if (profile.url === undefined) return false
  try {
    const parsed = new URL(profile.url)
    return parsed.password !== '' || parsed.searchParams.has('password')
  } catch {
    return false
  }
}
