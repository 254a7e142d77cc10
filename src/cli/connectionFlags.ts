import {Flags} from '@oclif/core'

import knexfile from '../../knexfile.js'
import {openDatabase, type Database, type OpenOptions} from '../connection/open.js'
import {resolveConnection, type ResolvedConnection} from '../connection/resolve.js'
import {passwordOf} from '../connection/url.js'
import {sandboxHome, sandboxUrl} from '../sandbox/sandbox.js'

/** The connection flags every database command takes (DESIGN §3). */
export const connectionFlags = {
  'database-url': Flags.string({
    description: 'PostgreSQL URL of the Airflow metadata database (postgresql://user:pass@host:5432/airflow; postgresql+psycopg2:// is accepted). Overrides every other setting.',
    helpGroup: 'CONNECTION',
  }),
  env: Flags.string({
    description: 'Use a named environment of knexfile.ts (sandbox, test, pgenv).',
    helpGroup: 'CONNECTION',
  }),
  embedded: Flags.boolean({
    description: 'Use the local embedded sandbox, starting it if needed (see airlock sandbox --help).',
    helpGroup: 'CONNECTION',
    exclusive: ['database-url', 'env'],
  }),
}

export interface ConnectionFlagValues {
  'database-url'?: string | undefined
  env?: string | undefined
  embedded?: boolean | undefined
}

export interface OpenedFromFlags {
  database: Database
  /** Lines worth telling the operator (the sandbox was started, …). */
  notes: string[]
}

/** Resolves and opens the connection the flags and environment ask for. */
export async function openFromFlags(flags: ConnectionFlagValues, options: OpenOptions, remember: (secret: string) => void): Promise<OpenedFromFlags> {
  const notes: string[] = []
  let connection: ResolvedConnection
  if (flags.embedded) {
    const {url, started} = await sandboxUrl(sandboxHome())
    if (started.action !== 'already_running') notes.push(`sandbox ${started.action} on 127.0.0.1:${started.port}`)
    connection = {url, source: 'embedded sandbox'}
  } else {
    connection = await resolveConnection({databaseUrl: flags['database-url'], env: flags.env}, process.env, knexfile)
  }

  const password = passwordOf(connection.url)
  if (password) remember(password)
  return {database: await openDatabase(connection, options), notes}
}
