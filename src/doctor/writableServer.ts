import type {Database} from '../engine/engine.js'
import {AirlockError, doctorAction} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {catalogFor} from '../store/openStore.js'
import type {WriteAccess} from '../store/families/catalog.js'
import {readOnlyCommands} from './writePrivileges.js'

/** Where default_transaction_read_only was set, by pg_settings.source, in the words of the statement that sets it there. */
const settingSources: Record<string, string> = {
  database: 'set for this database: ALTER DATABASE … SET',
  user: 'set for this role: ALTER ROLE … SET',
  'database user': 'set for this role in this database: ALTER ROLE … IN DATABASE … SET',
  'configuration file': 'set in the server configuration: postgresql.conf or ALTER SYSTEM',
  'command line': "set on the server's command line",
  client: "set by this connection: the URL's options or PGOPTIONS",
}

/**
 * Why a transaction begun now cannot write, in the operator's words; undefined when it can. A
 * standby first: it refuses writes whatever default_transaction_read_only says, and a failover
 * that moved an address to one is the case a cron job meets.
 */
export function whyReadOnly(access: WriteAccess): string | undefined {
  if (!access.readOnly) return undefined
  if (access.inRecovery)
    return "it is a hot standby (pg_is_in_recovery() is true), which replays the primary's writes and takes none of its own: the URL names a standby, or an address that a failover moved to one"
  if (access.defaultReadOnly)
    return `default_transaction_read_only is on (${settingSources[access.defaultReadOnlySource] ?? `source: ${access.defaultReadOnlySource}`}), so every transaction begins read-only`
  // Neither reason PostgreSQL reports: something between airlock and the server makes it so.
  return 'transaction_read_only is on for every new transaction, though the server is no standby and default_transaction_read_only is off here: a read-only pooler or proxy in front of it?'
}

/** What to do about a server that accepts no writes, for a writer that stopped on one. */
export const readOnlyServerActions = (): string[] => [
  'Running the same command again fails the same way until the server accepts writes: point airlock at the primary, or have the read-only setting turned off.',
  `Commands that only read still work: ${readOnlyCommands.join(', ')}.`,
  doctorAction('says why the server is read-only.'),
]

/**
 * A writer's check before its first item, beside its privileges: a server that accepts no writes
 * would fail every item on SQLSTATE 25006, exit 5, which says running again is safe, and a cron
 * job would retry for ever. Exit 9, as doctor's "can read, cannot write".
 */
export async function requireWritableServer(db: Database, command: string): Promise<void> {
  const why = whyReadOnly(await catalogFor(db).readWriteAccess(db.executor))
  if (why === undefined) return
  throw new AirlockError(
    'READ_ONLY_SERVER',
    ExitCode.readOnly,
    `${command} writes, and this server accepts no writes: ${why}. Nothing was written.`,
    readOnlyServerActions(),
  )
}
