import {readFileSync} from 'node:fs'
import type {ConnectionOptions} from 'node:tls'

import {usageError} from '../../errors.js'

/**
 * TLS as libpq (and so psql, psycopg and Airflow) means it. node-postgres reads `sslmode` from a
 * connection string differently (`require` verifies the certificate like `verify-full`), so
 * airlock takes the TLS parameters out of the URL and builds node-postgres's `ssl` itself:
 *
 * | sslmode     | encrypt                      | verify the chain | verify the host name |
 * |-------------|------------------------------|------------------|----------------------|
 * | disable     | no                           |                  |                      |
 * | allow       | only if plain is refused     | no               | no                   |
 * | prefer      | if the server offers it      | no               | no                   |
 * | require     | yes                          | only with sslrootcert (then as verify-ca) | no |
 * | verify-ca   | yes                          | yes              | no                   |
 * | verify-full | yes                          | yes              | yes                  |
 *
 * prefer is libpq's default. The parameters come from the URL's query (`sslmode`, `sslrootcert`,
 * `sslcert`, `sslkey`, `sslpassword`; SQLAlchemy URLs in AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
 * carry them the same way), else from libpq's variables (`PGSSLMODE`, `PGSSLROOTCERT`,
 * `PGSSLCERT`, `PGSSLKEY`).
 */
export const sslModes = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const
export type SslMode = (typeof sslModes)[number]

export interface TlsRequest {
  mode: SslMode
  rootCert?: string | undefined
  cert?: string | undefined
  key?: string | undefined
  keyPassword?: string | undefined
}

const urlParameters = [
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'sslpassword',
  'sslcrl',
  'sslnegotiation',
  'uselibpqcompat',
] as const

/** The URL without its TLS parameters (node-postgres must not read them) and what they ask for. */
export function splitTls(url: string, env: NodeJS.ProcessEnv = process.env): {url: string; tls: TlsRequest} {
  const parsed = new URL(url)
  const query = parsed.searchParams
  const take = (name: string, variable: string) => {
    const value = query.get(name) ?? env[variable]
    return value === undefined || value === '' ? undefined : value
  }

  const mode = (take('sslmode', 'PGSSLMODE') ?? 'prefer').toLowerCase()
  if (!(sslModes as readonly string[]).includes(mode)) {
    throw usageError(`sslmode=${mode} is not a libpq sslmode (${sslModes.join(', ')}).`)
  }

  const tls: TlsRequest = {
    mode: mode as SslMode,
    rootCert: take('sslrootcert', 'PGSSLROOTCERT'),
    cert: take('sslcert', 'PGSSLCERT'),
    key: take('sslkey', 'PGSSLKEY'),
    keyPassword: query.get('sslpassword') ?? undefined,
  }
  // libpq: with a root certificate, require verifies the chain (as verify-ca).
  if (tls.mode === 'require' && tls.rootCert && tls.rootCert !== 'system') tls.mode = 'verify-ca'
  for (const name of urlParameters) query.delete(name)
  return {url: parsed.toString(), tls}
}

/** node-postgres's `ssl` for one attempt: encrypted or not, as the mode asks. */
export function sslOption(tls: TlsRequest, encrypted: boolean): false | ConnectionOptions {
  if (!encrypted) return false
  const files: ConnectionOptions = {
    ...(tls.rootCert && tls.rootCert !== 'system' ? {ca: readFile(tls.rootCert, 'sslrootcert')} : {}),
    ...(tls.cert ? {cert: readFile(tls.cert, 'sslcert')} : {}),
    ...(tls.key ? {key: readFile(tls.key, 'sslkey')} : {}),
    ...(tls.keyPassword ? {passphrase: tls.keyPassword} : {}),
  }
  // node-postgres names the host for SNI and the name check (not for an IP address).
  if (tls.mode === 'verify-full') return {...files, rejectUnauthorized: true}
  // The chain, not the name: Node checks both unless told the name is fine.
  if (tls.mode === 'verify-ca') return {...files, rejectUnauthorized: true, checkServerIdentity: () => undefined}
  return {...files, rejectUnauthorized: false}
}

/** The order in which to try: plain, encrypted, or one then the other. */
export function attemptsFor(mode: SslMode): boolean[] {
  switch (mode) {
    case 'disable':
      return [false]
    case 'allow':
      return [false, true]
    case 'prefer':
      return [true, false]
    default:
      return [true]
  }
}

function readFile(file: string, parameter: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : 'cannot be read'
    throw usageError(`The ${parameter} file ${file} ${reason}.`, [
      `Check the ${parameter} in the URL (or its PGSSL… variable).`,
    ])
  }
}
