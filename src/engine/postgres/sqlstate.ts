import {NoAnswer, RoundTripAbandoned, type ClassifiedError} from '../engine.js'

/**
 * Every SQLSTATE airlock reacts to, named once with the reason it matters. Errors are matched by
 * these codes, never by message text (messages are localised by lc_messages).
 */
export const SqlState = {
  /** Serialization failure: another transaction's write made ours unsafe; retry the whole transaction. */
  serializationFailure: '40001',
  /** Deadlock detected: PostgreSQL killed us to break a cycle; retry the whole transaction. */
  deadlockDetected: '40P01',
  /** lock_timeout expired while waiting for a row lock; retry, then report the item as failed. */
  lockNotAvailable: '55P03',
  /**
   * statement_timeout expired, or the query was cancelled; not retried: the statement is too slow.
   * Also what airlock's own cancel of a lock wait gets when a run stops on a signal
   * (Transaction.queryUntil), which reads it as interrupted, not as a timeout.
   */
  queryCanceled: '57014',
  /** idle_in_transaction_session_timeout ended the session between statements. */
  idleInTransactionTimeout: '25P03',
  /** Our backend was terminated (pg_terminate_backend, admin shutdown). */
  adminShutdown: '57P01',
  /** The server crashed and is restarting: every backend was ended. */
  crashShutdown: '57P02',
  /** Wrong password (or no password where one is required). */
  invalidPassword: '28P01',
  /** No pg_hba.conf entry / role not allowed to log in. */
  invalidAuthorization: '28000',
  /** The database named in the URL does not exist. */
  invalidCatalogName: '3D000',
  /** The server is starting up or shutting down. */
  cannotConnectNow: '57P03',
  /** The connection limit is reached. */
  tooManyConnections: '53300',
  /**
   * Object not in prerequisite state. FATAL at login when the database does not accept connections
   * (ALTER DATABASE … ALLOW_CONNECTIONS false: postinit.c, CheckMyDatabase); at ERROR level it is
   * a statement's own failure, not a login.
   */
  objectNotInPrerequisiteState: '55000',
  /** A table does not exist (for example alembic_version in a non-Airflow database). */
  undefinedTable: '42P01',
  /** Missing privilege on a table or sequence. */
  insufficientPrivilege: '42501',
  /**
   * A write in a read-only transaction: the server is a hot standby (a failover moved the address
   * to one), or default_transaction_read_only is on for this database, role or server. Not
   * retried: every attempt gets the same answer until the server accepts writes.
   */
  readOnlySqlTransaction: '25006',
} as const

export type SqlState = (typeof SqlState)[keyof typeof SqlState]

/** Failures after which the whole transaction runs again from its first statement. */
const retryableSqlStates: ReadonlySet<string> = new Set([SqlState.serializationFailure, SqlState.deadlockDetected])

/** Failures that mean "you cannot log in here": the command exits 7. */
const loginSqlStates: ReadonlySet<string> = new Set([
  SqlState.invalidPassword,
  SqlState.invalidAuthorization,
  SqlState.invalidCatalogName,
  SqlState.cannotConnectNow,
  SqlState.tooManyConnections,
])

/**
 * The session ended under us, whatever the statement was: the server terminated it, crashed or
 * restarted, idle_in_transaction_session_timeout fired, or the connection broke (class 08).
 * Class 53 (disk full, out of memory, too many connections) is the server's resources, not ours.
 */
const sessionLostSqlStates: ReadonlySet<string> = new Set([
  SqlState.adminShutdown,
  SqlState.crashShutdown,
  SqlState.idleInTransactionTimeout,
])
const sessionLostClasses = ['08', '53']

/** Logins the server refuses for now, not for good: it is full, starting up or shutting down. */
const refusedForNowSqlStates: ReadonlySet<string> = new Set([SqlState.cannotConnectNow, SqlState.tooManyConnections])

/**
 * node-postgres's own errors for a connection that broke or never came up carry no code. They are
 * the driver's English strings (client.js, connection.js, pg-pool), not the server's localised
 * messages, so matching them is safe; anything else without a code is a bug.
 */
const driverConnectionMessages: readonly string[] = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Query read timeout',
  'The server does not support SSL connections',
  'There was an error establishing an SSL connection',
]

/** Node's TLS verification failures: the server's certificate is not one the client trusts. */
const tlsVerificationCodes: ReadonlySet<string> = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/** A TLS verification failure (exit 7, with a hint about sslrootcert). */
export function isTlsVerificationError(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : ''
  return tlsVerificationCodes.has(code)
}

/** The server answered the SSLRequest with "no": it has no TLS. */
export function refusesTls(error: unknown): boolean {
  return error instanceof Error && error.message === 'The server does not support SSL connections'
}

/** node-postgres's words for "the server asked for a password and there is none" (crypto/sasl.js). */
const missingPasswordMessages: readonly string[] = [
  'SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string',
  'SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a non-empty string',
]

/** The server wants a password and none was given (URL, PGPASSWORD, password file). */
export function isMissingPassword(error: unknown): boolean {
  return error instanceof Error && missingPasswordMessages.includes(error.message)
}

/** Driver (errno) codes that mean the server could not be reached at all. */
const networkErrnos: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
])

/** What a PostgreSQL failure means for airlock, by SQLSTATE or errno, never by message text. */
export function classifyPostgresError(error: unknown): ClassifiedError {
  // The engine's own give-ups (answerWatch.ts): a silent path is the network's failure; a wait
  // given up for a stopping run is the signal's.
  if (error instanceof NoAnswer)
    return error.serverSilent
      ? {kind: 'unreachable', code: null, serverSilent: true}
      : {kind: 'unreachable', code: null, connectionLost: true}
  if (error instanceof RoundTripAbandoned) return {kind: 'interrupted', code: null}
  const code = sqlStateOf(error) ?? null
  if (code !== null) {
    if (retryableSqlStates.has(code)) return {kind: 'retryable', code}
    if (code === SqlState.lockNotAvailable) return {kind: 'lock_timeout', code}
    if (refusedForNowSqlStates.has(code)) return {kind: 'login', code, connectionLost: true}
    if (loginSqlStates.has(code)) return {kind: 'login', code}
    if (code === SqlState.objectNotInPrerequisiteState && severityOf(error) === 'FATAL') return {kind: 'login', code}
    if (code === SqlState.insufficientPrivilege) return {kind: 'permission', code}
    if (code === SqlState.readOnlySqlTransaction) return {kind: 'read_only', code}
    if (code === SqlState.queryCanceled) return {kind: 'timeout', code}
    if (sessionLostSqlStates.has(code) || sessionLostClasses.includes(code.slice(0, 2)))
      return {kind: 'unreachable', code, connectionLost: true}
    return {kind: 'other', code}
  }

  const errno = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : ''
  if (isMissingPassword(error)) return {kind: 'login', code: null}
  if (isConnectTimeout(error)) return {kind: 'unreachable', code: null, connectTimeout: true}
  const driverMessage = error instanceof Error && driverConnectionMessages.includes(error.message)
  if (isTlsVerificationError(error)) return {kind: 'unreachable', code: null}
  if (networkErrnos.has(errno) || driverMessage) return {kind: 'unreachable', code: null, connectionLost: true}
  return {kind: 'other', code: null}
}

/**
 * knex's pool gives up acquiring a connection after acquireConnectionTimeout with its own error
 * class, `KnexTimeoutError` (exported on knex's default export). knex loads lazily, so the
 * engine records the class when it loads it; an error of that class can only exist after that.
 */
let knexTimeoutError: (abstract new (...args: never[]) => Error) | undefined

export function noteKnexTimeoutError(errorClass: abstract new (...args: never[]) => Error): void {
  knexTimeoutError = errorClass
}

/**
 * node-postgres's own connect timeout (connectionTimeoutMillis) carries neither a code nor a class
 * of its own: these exact messages are all it sends (client.js, and pg-pool's).
 */
const driverConnectTimeoutMessages: readonly string[] = [
  'Connection terminated due to connection timeout',
  'timeout expired',
  'timeout exceeded when trying to connect',
]

/** No answer before the connect timeout, from knex's pool or from node-postgres. */
function isConnectTimeout(error: unknown): boolean {
  if (knexTimeoutError && error instanceof knexTimeoutError) return true
  return error instanceof Error && driverConnectTimeoutMessages.includes(error.message)
}

/** node-postgres's `severity` of a server error (ERROR, FATAL, PANIC), if it carries one. */
function severityOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'severity' in error ? String(error.severity) : undefined
}

/** The SQLSTATE of a driver error, if it carries one. */
export function sqlStateOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const {code} = error
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code
  }
  return undefined
}
