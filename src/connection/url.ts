import {engineFor} from '../engine/engines.js'
import {usageError} from '../errors.js'

/**
 * Database URLs as operators have them: libpq style (`postgres://`, `postgresql://`) or
 * SQLAlchemy style as in AIRFLOW__DATABASE__SQL_ALCHEMY_CONN (`postgresql+psycopg2://`,
 * `postgresql+asyncpg://`). The `+driver` suffix is stripped here, once, and the engine seam
 * decides whether airlock can work on that kind of database (MySQL: not yet, exit 8).
 */
export function toDatabaseUrl(raw: string, origin: string): string {
  const url = raw.trim()
  const match = /^([a-z][a-z0-9]*)(\+[a-z0-9_]+)?:\/\//i.exec(url)
  if (!match) {
    // Not echoed: without a scheme there is no telling which part is a password.
    throw usageError(`${origin} is not a database URL (expected postgresql://user@host:port/database).`)
  }

  const scheme = match[1]!.toLowerCase()
  const canonical = `${scheme === 'postgres' ? 'postgresql' : scheme}://${url.slice(match[0].length)}`
  engineFor(canonical, origin)
  let parsed: URL
  try {
    parsed = new URL(canonical)
  } catch {
    // Not echoed: an unescaped '/', '#' or '?' in the password is what usually breaks it.
    throw usageError(
      `${origin} is not a valid URL; percent-encode special characters in the user and password (/ as %2F, # as %23, ? as %3F, @ as %40).`,
    )
  }

  // The parts the driver decodes: a '%' not followed by two hex digits fails there, later and as
  // an unexpected error. Named by part, never echoed (it may be the password).
  const parts: Array<[string, string]> = [
    ['user name', parsed.username],
    ['password', parsed.password],
    ['database name', parsed.pathname],
    ['query string', parsed.search],
  ]
  for (const [part, value] of parts) {
    try {
      decodeURIComponent(value)
    } catch {
      throw usageError(
        `${origin}: the ${part} holds a malformed percent-escape ('%' must be followed by two hex digits; write a literal % as %25).`,
      )
    }
  }

  return canonical
}

/** The URL with its password replaced by `***`, for every message, log line and JSON field. */
export function maskUrl(url: string): string {
  // user:password@ in the authority; the password may itself contain ':' but never an unescaped '@'.
  let masked = url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:)[^@/?#]*@/i, '$1***@')
  // libpq also accepts ?password=… in the query string.
  masked = masked.replace(/([?&]password=)[^&#]*/gi, '$1***')
  return masked
}

/** The password a URL carries, decoded, so messages from elsewhere can be scrubbed of it too. */
export function passwordOf(url: string): string | undefined {
  try {
    const parsed = new URL(url)
    const fromQuery = parsed.searchParams.get('password')
    const password = parsed.password ? decodeURIComponent(parsed.password) : fromQuery
    return password || undefined
  } catch {
    return undefined
  }
}

/** Removes every occurrence of the given secrets (and their URL-encoded forms) from a text. */
export function redact(text: string, secrets: Iterable<string>): string {
  let out = text
  for (const secret of secrets) {
    if (secret.length < 2) continue
    for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join('***')
  }
  return out
}

/** host:port/database of a URL, for "connected to …" lines (never the user or password). */
export function describeTarget(url: string): string {
  try {
    const parsed = new URL(url)
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost'
    const port = parsed.port || '5432'
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default)'
    return `${host}:${port}/${database}`
  } catch {
    return '(unparseable URL)'
  }
}

/** The same server URL pointing at another database (scratch and template databases). */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${encodeURIComponent(database)}`
  return parsed.toString()
}
