import {classifyDatabaseError} from '../engine/engines.js'
import {doctorAction} from '../errors.js'
import {ExitCode} from '../exitCodes.js'

interface DatabaseFailure {
  exit: ExitCode
  code: string
  what: string
  actions: readonly string[]
}

/**
 * What the server or the network did to a whole command (a failure inside one item's transaction
 * is that item's outcome instead): never "a bug". Exit codes as in docs/exit-codes-and-json.md.
 */
const databaseFailures: Record<
  'unreachable' | 'login' | 'timeout' | 'lock_timeout' | 'retryable' | 'permission' | 'read_only' | 'interrupted',
  DatabaseFailure
> = {
  unreachable: {
    exit: ExitCode.unreachable,
    code: 'DATABASE_UNREACHABLE',
    what: 'The database connection was lost during the run (the server ended the session, restarted, or the network broke)',
    actions: [
      'Items finished before the failure are in the database; running the same command again is safe.',
      doctorAction('checks the connection.'),
    ],
  },
  login: {
    exit: ExitCode.unreachable,
    code: 'DATABASE_UNREACHABLE',
    what: 'The database refused the connection during the run',
    actions: [doctorAction('checks the connection and the login.')],
  },
  timeout: {
    exit: ExitCode.partialFailure,
    code: 'STATEMENT_TIMEOUT',
    what: 'A statement ran longer than --statement-timeout and the server cancelled it',
    actions: [
      'Narrow the selection (--dag-id, --since/--until) or raise --statement-timeout.',
      'Nothing was written by the cancelled statement.',
    ],
  },
  lock_timeout: {
    exit: ExitCode.partialFailure,
    code: 'LOCK_TIMEOUT',
    what: 'A table or row stayed locked by another session longer than the lock timeout',
    actions: ['airlock audit-locks shows who holds it; run again when it is released.'],
  },
  retryable: {
    exit: ExitCode.partialFailure,
    code: 'DATABASE_CONFLICT',
    what: 'The server aborted a statement to resolve a conflict with another session (deadlock or serialization failure)',
    actions: ['Running the same command again is safe.'],
  },
  read_only: {
    exit: ExitCode.readOnly,
    code: 'READ_ONLY_SERVER',
    what: 'The server refused a write: it accepts no writes (a hot standby, or default_transaction_read_only on)',
    actions: [
      'Nothing was written by the refused statement. Running the same command again fails the same way until the server accepts writes: point airlock at the primary, or have the read-only setting turned off.',
      doctorAction('says why the server is read-only.'),
    ],
  },
  interrupted: {
    exit: ExitCode.interrupted,
    code: 'INTERRUPTED',
    what: "Interrupted: a statement was still waiting for the server's answer when the grace after the signal ran out, and was given up",
    actions: ['Items finished before the signal are in the database; running the same command again is safe.'],
  },
  permission: {
    exit: ExitCode.usage,
    code: 'PERMISSION_DENIED',
    what: 'The database user lacks a privilege airlock needs',
    actions: [doctorAction('lists the privileges each command needs and which are missing.')],
  },
}

/**
 * A failure the server or the network caused, in the operator's terms (exit code, stable code,
 * message with the SQLSTATE, what to do); undefined for anything else, which is a bug.
 */
export function databaseFailureOf(error: unknown): (Omit<DatabaseFailure, 'what'> & {message: string}) | undefined {
  const {kind, code} = classifyDatabaseError(error)
  if (!(kind in databaseFailures)) return undefined
  const known = databaseFailures[kind as keyof typeof databaseFailures]
  const message = error instanceof Error ? error.message : String(error)
  return {
    exit: known.exit,
    code: known.code,
    message: `${known.what}${code ? ` (SQLSTATE ${code})` : ''}: ${message}`,
    actions: known.actions,
  }
}
