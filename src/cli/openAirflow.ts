import type {Database, OpenOptions, StatementLog} from '../engine/engine.js'
import {requireWritableServer} from '../doctor/writableServer.js'
import {requirePrivileges} from '../doctor/writePrivileges.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {AirflowStore} from '../store/airflowStore.js'
import {placementWarning, requireAirflow} from '../store/schemaCheck.js'
import {openFromFlags, type ConnectionFlagValues} from './connectionFlags.js'

/** What opening a database asks of the command that runs it: where its notes go, what it must scrub and close. */
export interface OpenHost {
  /** A warning: in the envelope under --json, on stderr otherwise. */
  note(message: string): void
  /** A warning the human rendering already shows: only recorded for the envelope. */
  recordWarning(message: string): void
  /** A progress line on stderr (never under --json). */
  progress(message: string): void
  /** A secret (a password) to scrub from everything the command prints. */
  remember(secret: string): void
  /** Run when the command ends, whatever its outcome. */
  onCleanup(cleanup: () => Promise<void>): void
  /** --verbose: the statement log the engine writes to stderr; undefined when off. */
  readonly statementLog: StatementLog | undefined
  /** Fires when the run gives up on the server (a signal's grace spent): see OpenOptions.abandon. */
  readonly abandon: AbortSignal
}

/** Opens the database the connection flags name (closed when the command ends); for commands that need no Airflow schema. */
export async function openDatabase(
  host: OpenHost,
  flags: ConnectionFlagValues,
  options: OpenOptions,
): Promise<{db: Database; target: string; source: string}> {
  // Said at once, so a connection that then fails still shows it (an ignored password file).
  const opened = await openFromFlags(
    flags,
    {...options, warn: (message) => host.note(message), log: host.statementLog, abandon: host.abandon},
    (secret) => host.remember(secret),
  )
  host.onCleanup(() => opened.db.close())
  for (const note of opened.notes) host.progress(note)
  return {db: opened.db, target: opened.target, source: opened.connection.source}
}

/**
 * Opens the Airflow database the flags name and builds its store, or exits 8 naming what is
 * wrong. `writes`: the command that must be able to write before the first item, instead of every
 * item failing: the server must accept writes (exit 9, READ_ONLY_SERVER: a standby or
 * default_transaction_read_only, not SQLSTATE 25006 per item), and its privileges must all be
 * granted (exit 2, PERMISSION_DENIED, naming them, not 42501 per item).
 */
export async function openAirflow(
  host: OpenHost,
  flags: ConnectionFlagValues,
  options: OpenOptions & {writes?: string},
): Promise<AirflowDatabase<AirflowStore>> {
  const {db} = await openDatabase(host, flags, options)
  const airflow = await requireAirflow(db, {assumeVersion: flags['assume-version']})
  if (options.writes) {
    await requireWritableServer(db, options.writes)
    await requirePrivileges(db, options.writes)
  }
  // Said on every run, so a forgotten AIRLOCK_ASSUME_VERSION or an unfinished upgrade is seen.
  const placement = placementWarning(airflow.schema)
  if (placement) host.recordWarning(placement)

  return airflow
}
