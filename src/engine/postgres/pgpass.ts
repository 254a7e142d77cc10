import {readFileSync, statSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export interface PasswordLookup {
  host: string
  port: string
  database: string
  user: string
}

/**
 * The password file as libpq reads it (PGPASSFILE, else ~/.pgpass): lines of
 * `hostname:port:database:username:password`, `*` matching anything, `\` escaping `:` and `\`,
 * the first matching line winning. Like libpq, a file that group or others can read is ignored
 * (and said so): a password store anyone can read is not one. node-postgres's own lookup prints a
 * deprecation warning on every use and goes away in pg 9, so airlock reads the file itself.
 */
export function passwordFromFile(
  want: PasswordLookup,
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = () => undefined,
): string | undefined {
  const file = env.PGPASSFILE || path.join(os.homedir(), '.pgpass')
  let text: string
  try {
    if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
      warn(`${file} is readable by group or others; like libpq, airlock ignores it (chmod 600 ${file})`)
      return undefined
    }

    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }

  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '' || line.startsWith('#')) continue
    const fields = splitFields(line)
    if (fields.length < 5) continue
    const [host, port, database, user] = fields
    const matches = (pattern: string, value: string) => pattern === '*' || pattern === value
    if (
      matches(host!, want.host) &&
      matches(port!, want.port) &&
      matches(database!, want.database) &&
      matches(user!, want.user)
    ) {
      return fields.slice(4).join(':')
    }
  }

  return undefined
}

function splitFields(line: string): string[] {
  const fields: string[] = []
  let current = ''
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!
    if (char === '\\' && i + 1 < line.length) current += line[++i]!
    else if (char === ':' && fields.length < 4) {
      fields.push(current)
      current = ''
    } else current += char
  }

  fields.push(current)
  return fields
}
