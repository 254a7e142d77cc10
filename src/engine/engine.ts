import type {Knex} from 'knex'

/**
 * The seam between airlock and a database server. An engine owns what differs from one server
 * to another below the Airflow schema: the connection pool for its URL scheme, how a transaction
 * starts (isolation, timeouts, the session tag), how statements run, and what its error codes
 * mean. Everything above it (the store, the protocol, the features) speaks only these types.
 */

/**
 * Where an engine reports what it did on the server (the CLI's verbose mode): one line per statement, per
 * connect, BEGIN, COMMIT and ROLLBACK, with how long it took. A line never holds a bound value, a
 * password or a server's error message (which can quote a value): only labels, timeouts, row
 * counts and error codes. Absent, the engine builds no line and reads no clock.
 */
export type StatementLog = (line: string) => void

/** One SQL statement: `$1 … $n` placeholders only, values bound, never spliced into the text. */
export interface Statement {
  /**
   * Set: the statement runs as a named prepared statement on the connection it was given, parsed
   * and planned once per pooled connection. Built once per text by `prepared()`.
   */
  readonly name?: string
  readonly text: string
  readonly values?: readonly unknown[]
}

/** Runs statements: on the pool (each statement autocommits) or inside one transaction. */
export interface Executor {
  query<Row>(statement: Statement): Promise<Row[]>
}

/**
 * How long a write transaction may sit idle between its statements before the server ends it
 * (SET LOCAL idle_in_transaction_session_timeout). A transaction of airlock's is never idle on
 * purpose: between statements it only computes the next one, in milliseconds. If the process
 * stops (SIGSTOP, a debugger, a frozen VM) while it holds a task_instance row lock, Airflow waits
 * this long, not the session default.
 */
export const writeTransactionIdleLimitMs = 3000

/**
 * Limits on statements outside write transactions (selections, counts, schema checks, audit
 * reads): without them, a read queued behind an ACCESS EXCLUSIVE lock (a migration, a VACUUM
 * FULL) waits forever.
 */
export const readLimits = {lockTimeoutMs: 10_000, statementTimeoutMs: 300_000} as const

/** What every write transaction sets before its first statement. */
export interface TransactionLocals {
  lockTimeoutMs: number
  statementTimeoutMs: number
  /** Default writeTransactionIdleLimitMs. */
  idleInTransactionTimeoutMs?: number
  /** The session tag, `airlock:<verb>:<subject>`, so lock audits can name the transaction. */
  applicationName: string
  /**
   * Run the transaction's prepared statements on their generic plans from the first execution
   * (plan_cache_mode = force_generic_plan). PostgreSQL otherwise plans a prepared statement five
   * times with its values on every new connection before it settles on the generic plan; for
   * work whose statements settle there anyway (the protocol's: checked per statement with
   * pg_prepared_statements), those plans are pure cost, paid again by every pooled connection.
   */
  genericPlans?: boolean
}

/** A transaction in progress: its statements, and COMMIT issued by the work when it chooses. */
export interface Transaction extends Executor {
  /** COMMIT now; the transaction engine then neither commits nor rolls back again. */
  commit(): Promise<void>
  /** Tag the rest of the transaction anew (its session tag), once it knows what it works on. */
  setApplicationName(applicationName: string): Promise<void>
  /**
   * A statement that waits for a lock, given up when `stop` fires: refused when it already has,
   * and while it waits for the lock, cancelled on the server (only while it still waits for a
   * lock: once granted, it and the statements after it run on). Either way it throws
   * LockWaitInterrupted and the transaction rolls back.
   */
  queryUntil<Row>(statement: Statement, stop: AbortSignal): Promise<Row[]>
}

/**
 * A lock wait given up because the run is stopping (Transaction.queryUntil: a signal): not a
 * timeout and never retried; the transaction rolls back, nothing it did is kept.
 */
export class LockWaitInterrupted extends Error {
  constructor(
    /** The server's code when it cancelled the wait (57014), null when the wait never began. */
    readonly code: string | null,
  ) {
    super('the lock wait was given up: the run is stopping')
  }
}

/**
 * A round trip that got no answer and was given up, its connection ended: the path to the server
 * went silent (no answer, no FIN, no RST: a firewall that drops, a failover that leaves the old
 * address silent, a stopped proxy). `serverSilent`: a new connection got no answer within the
 * connect timeout either, so asking the server again now (a retry, a re-read) would wait as long;
 * otherwise this connection alone stayed silent past its statement_timeout and the margin, which a
 * live path never does (the server's own timeout answers first), and another connection may work.
 */
export class NoAnswer extends Error {
  constructor(
    readonly waitedMs: number,
    readonly serverSilent: boolean,
    connectTimeoutMs: number,
  ) {
    super(
      serverSilent
        ? `no answer from the server for ${seconds(waitedMs)}, and a new connection got none within the connect timeout (${seconds(connectTimeoutMs)}) either: the network path to it is silent`
        : `no answer on this connection for ${seconds(waitedMs)}, past its statement_timeout and the connect timeout: the connection was given up`,
    )
  }
}

/**
 * A round trip given up because the run is stopping on a signal and the grace it gives the items
 * in flight is spent (OpenOptions.abandon): its connection is ended, so the server rolls back a
 * transaction whose COMMIT was not sent.
 */
export class RoundTripAbandoned extends Error {
  constructor(readonly signal: string) {
    super(`given up while waiting for the server's answer: the run is stopping (${signal})`)
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`

/**
 * How an engine reads a failure: `retryable` (serialization failure, deadlock: run the whole
 * transaction again), `lock_timeout` (retried too, then reported), `login` (wrong credentials,
 * database missing, server starting or full), `unreachable` (the network, or the session ended
 * under us), `timeout` (statement_timeout), `permission`, `read_only` (the server accepts no
 * writes: a hot standby, or default_transaction_read_only on), `other`; and `interrupted` (the run
 * stopped on a signal while the item waited for a lock, for its next attempt, or for an answer
 * past the signal's grace (RoundTripAbandoned): rolled back unless its COMMIT was sent).
 */
export type ErrorClass =
  | 'retryable'
  | 'lock_timeout'
  | 'login'
  | 'unreachable'
  | 'timeout'
  | 'permission'
  | 'read_only'
  | 'other'
  | 'interrupted'

export interface ClassifiedError {
  kind: ErrorClass
  /** The server's error code (a SQLSTATE on PostgreSQL), when it sent one. */
  code: string | null
  /** `unreachable` because nothing answered before the connect timeout. */
  connectTimeout?: boolean
  /**
   * A connection-class failure another attempt may survive: the session was lost (reset,
   * terminated, admin shutdown) or the server refused a new one for now (too many connections,
   * starting or shutting down). Not a connect timeout: asking again would wait it out again.
   */
  connectionLost?: boolean
  /**
   * Nothing answered: neither the connection the statement ran on nor a new one within the connect
   * timeout (NoAnswer). Asking again now, to retry or to re-read a lost COMMIT, would wait as long.
   */
  serverSilent?: boolean
}

export interface OpenOptions {
  /** The command, for the session tag (`airlock:<verb>`). */
  verb: string
  /** Pool size: per-item transactions run concurrently over this many connections. */
  poolSize?: number
  /**
   * How the caller's user sets the pool size, for advice when the server has no connection slot
   * left (the command line: --concurrency); plain words when absent.
   */
  poolSizeName?: string
  /**
   * Milliseconds; the server ends a session that sits idle inside a transaction this long, so a
   * crashed airlock never keeps a row lock. null leaves the server's setting alone.
   */
  idleInTransactionTimeoutMs?: number | null
  connectTimeoutMs?: number
  /** lock_timeout of statements outside write transactions (default readLimits; a writer passes its own). */
  lockTimeoutMs?: number
  /** statement_timeout of statements outside write transactions (default readLimits). */
  statementTimeoutMs?: number
  /**
   * Apply lock_timeout and statement_timeout with SET once connected rather than in the startup
   * packet: a startup option becomes the session's reset value, so pg_settings.reset_val would
   * show airlock's own limits instead of what the server gives every other session (Airflow's).
   * For the reports that show the server's settings (doctor, audit-locks); one round trip more
   * per connection.
   */
  limitsAfterConnect?: boolean
  /**
   * The run is stopping and gives up on the server: once this fires, every round trip still
   * waiting for its answer, and every wait for a connection, ends at once with RoundTripAbandoned
   * (its connection ended), and none starts. The CLI fires it a grace period after the first
   * SIGINT/SIGTERM of a batch, so a statement that never returns cannot hold the exit.
   */
  abandon?: AbortSignal
  /** Every transaction of the session read-only (default_transaction_read_only): a plan writes nothing, by the server's word. */
  readOnly?: boolean
  /** Where the engine says something the operator should know about the connection (an ignored password file). */
  warn?: (message: string) => void
  /** The statement log (the CLI's verbose mode): every statement, connect, BEGIN, COMMIT and ROLLBACK, by label and duration (never values). */
  log?: StatementLog
}

/** An open connection pool to one database through one engine. */
export interface Database {
  readonly engine: EngineName
  /** The pool: every statement on its own, autocommitted. */
  readonly executor: Executor
  /**
   * One transaction at READ COMMITTED on one pooled connection, `locals` set in the same round
   * trip as BEGIN. Handler form: COMMIT when the work returns (unless it committed itself),
   * ROLLBACK when it throws, the connection released (or discarded when broken) either way.
   */
  transaction<T>(locals: TransactionLocals, work: (tx: Transaction) => Promise<T>): Promise<T>
  classify(error: unknown): ClassifiedError
  /** The knex instance under the pool, for the fixture migrations (tests, sandbox, bench) only. */
  readonly knex: Knex
  close(): Promise<void>
}

export type EngineName = 'postgres'

export interface Engine {
  readonly name: EngineName
  /** For messages: "PostgreSQL". */
  readonly displayName: string
  classify(error: unknown): ClassifiedError
  /**
   * For a failed connect: what went wrong in the operator's words and what to do, when the engine
   * knows more than the driver said. `poolSizeName`: how the operator sets the pool size (OpenOptions).
   */
  connectAdvice(error: unknown, poolSizeName?: string): {why: string; actions: string[]} | undefined
  /** Opens a pool and proves the server answers (a failure to reach or log in is exit 7). */
  open(url: string, options: OpenOptions): Promise<Database>
  /** A Database over a knex pool someone else owns (tests, sandbox, bench scratch databases). */
  wrap(knex: Knex): Database
}
