import os from 'node:os'

import type {Knex} from 'knex'

import {
  LockWaitInterrupted,
  readLimits,
  RoundTripAbandoned,
  writeTransactionIdleLimitMs,
  type Database,
  type Engine,
  type Executor,
  type OpenOptions,
  type Statement,
  type StatementLog,
  type Transaction,
  type TransactionLocals,
} from '../engine.js'
import {logRoundTrip, logTextOnce, rowCount, statementLabel} from '../statementLog.js'
import {answerWatch, watched, type AnswerWatch} from './answerWatch.js'
import {passwordFromFile} from './pgpass.js'
import {
  classifyPostgresError,
  isMissingPassword,
  isTlsVerificationError,
  noteKnexTimeoutError,
  refusesTls,
  SqlState,
  sqlStateOf,
} from './sqlstate.js'
import {attemptsFor, splitTls, sslOption} from './tls.js'

/**
 * knex (with lodash and its dialect registry, about 70 ms to import) and node-postgres load when a
 * connection is first opened, not when a command module is imported: `airlock --help`, `--version`
 * and every command's `--help` never connect, and each command imports this module through the
 * base command. test/cli/startup.test.ts checks they stay out.
 */
async function loadKnex(): Promise<typeof import('knex').knex> {
  const knex = (await import('knex')).default
  noteKnexTimeoutError(knex.KnexTimeoutError)
  return knex
}

/** The node-postgres client knex hands out; statements run on it directly (see executorOn). */
interface PgClient {
  query(
    query: string | {name?: string; text: string; values?: unknown[]},
  ): Promise<{rows: unknown[]; rowCount: number | null}>
  escapeLiteral(value: string): string
  /** node-postgres's public end(): knex's pool discards a client that ended (its 'end' listener). */
  end(): Promise<void>
  /**
   * The backend's pid, from the server's BackendKeyData at connect (node-postgres keeps it on the
   * client, beside the cancel key; it has no cancel call of its own on a client). Behind a
   * connection pooler it names the pooler's session, not a backend: see cancelLockWait.
   */
  processID?: number | null
}

/**
 * Connections a transaction left in an unknown state (a ROLLBACK that failed, a COMMIT whose
 * answer never came): never handed out again. A pool airlock owns checks this set through knex's
 * public `pool.validate` option before every acquire. Every broken client is also ended before it
 * goes back (node-postgres's public end(); knex's own listener marks an ended client, and its pool
 * discards it), so a pool someone else owns (tests, the sandbox) drops it too. The wait is bounded:
 * a half-open connection may never confirm its end.
 */
const brokenClients = new WeakSet<object>()

/** node-postgres's callback form of query, as knex's afterCreate hands the raw client. */
interface SimpleQueryClient {
  query(text: string, callback: (error: Error | null) => void): void
}
const endWaitMs = 1000

async function discard(client: PgClient): Promise<void> {
  brokenClients.add(client)
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    client.end().catch(() => undefined),
    new Promise((resolve) => (timer = setTimeout(resolve, endWaitMs))),
  ])
  clearTimeout(timer)
}

export const silentKnexLog = {warn() {}, error() {}, debug() {}, deprecate() {}}

/**
 * Statements run on the node-postgres client under knex, not through knex's query builder:
 * `$n` placeholders as PostgreSQL has them, named prepared statements (parsed and planned once per
 * pooled connection, so COMMIT no longer releases the relation locks that planning took), and no
 * per-statement overhead inside the lock window. What that did to the lock hold and to
 * completions per second is measured in docs/bench.md.
 */
function executorOn(client: PgClient, log: StatementLog | undefined, watch?: RoundTripWatch): Executor {
  const run = (statement: Statement) =>
    watchedOn(client, watch, () =>
      client.query({
        ...(statement.name ? {name: statement.name} : {}),
        text: statement.text,
        values: [...(statement.values ?? [])],
      }),
    )
  return {
    async query<Row>(statement: Statement): Promise<Row[]> {
      if (log) logTextOnce(log, statement)
      const {rows} = log
        ? await logRoundTrip(
            log,
            `sql ${statementLabel(statement)}`,
            () => run(statement),
            (result) => rowCount(result.rowCount ?? result.rows.length),
          )
        : await run(statement)
      // The statement's text decides the row shape; the store's methods name it.
      return rows as Row[]
    },
  }
}

/** The watch over a connection's round trips, and the statement_timeout the server applies to them there. */
interface RoundTripWatch {
  watch: AnswerWatch
  statementTimeoutMs: number
}

/** A round trip on `client` under the watch; given up, the client is ended and never handed out again. */
function watchedOn<T>(client: PgClient, on: RoundTripWatch | undefined, roundTrip: () => Promise<T>): Promise<T> {
  return watched(on?.watch, on?.statementTimeoutMs ?? 0, roundTrip, () => void discard(client))
}

/** PostgreSQL keeps at most 63 bytes of an application_name; cut without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= maxBytes) return text
  return bytes
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '')
}

/**
 * BEGIN and the transaction's SET LOCALs in one round trip (a simple-protocol multi-statement:
 * no parameters there, so the values are numbers and one escaped literal). Every write
 * transaction starts here: how long it may wait for a lock, how long a statement may run, and
 * the tag that lets audit-locks and pg_stat_activity name what it works on.
 */
export function beginStatement(locals: TransactionLocals, escapeLiteral: (value: string) => string): string {
  const ms = (value: number) => `'${Math.max(0, Math.trunc(value))}ms'`
  return [
    'begin isolation level read committed',
    `set local lock_timeout = ${ms(locals.lockTimeoutMs)}`,
    `set local statement_timeout = ${ms(locals.statementTimeoutMs)}`,
    `set local idle_in_transaction_session_timeout = ${ms(locals.idleInTransactionTimeoutMs ?? writeTransactionIdleLimitMs)}`,
    ...(locals.genericPlans ? ['set local plan_cache_mode = force_generic_plan'] : []),
    `set local application_name = ${escapeLiteral(truncateUtf8(locals.applicationName, 63))}`,
  ].join('; ')
}

/** What the statement log says for BEGIN: the isolation level and every SET LOCAL, as beginStatement sets them. */
function beginEvent(locals: TransactionLocals): string {
  const idleMs = locals.idleInTransactionTimeoutMs ?? writeTransactionIdleLimitMs
  return `begin read committed (lock_timeout ${Math.trunc(locals.lockTimeoutMs)}ms, statement_timeout ${Math.trunc(locals.statementTimeoutMs)}ms, idle_in_transaction_session_timeout ${Math.trunc(idleMs)}ms, ${locals.genericPlans ? 'plan_cache_mode force_generic_plan, ' : ''}application_name ${truncateUtf8(locals.applicationName, 63)})`
}

/**
 * Cancels backend `pid`'s statement `text` while, and only while, it waits for a lock
 * (pg_cancel_backend: the server answers the wait with 57014, and the transaction is rolled back by
 * its owner). Run from another pooled connection, as the waiting one is busy. The conditions are
 * read in the same statement as the cancel: a wait that was granted meanwhile (the statement
 * returned, or the transaction went on to its recheck or COMMIT) is never cancelled, and behind a
 * connection pooler, whose pids are not the server's, nothing is; the wait then ends at its
 * lock-wait slice, since no new one starts. Cancelling one's own role's backends needs no
 * privilege.
 */
const cancelLockWaitStatement: Statement = {
  text: `select pg_cancel_backend(pid) as cancelled
           from pg_stat_activity
          where pid = $1 and state = 'active' and wait_event_type = 'Lock' and left($2, length(query)) = query`,
}

/**
 * Transaction.queryUntil: the statement, and when `stop` fires while it runs, cancelLockWait on
 * another connection (`cancel`). Awaited before returning, so a cancel never reaches a later
 * statement of the transaction.
 */
async function queryUntilStopped<Row>(
  executor: Executor,
  client: PgClient,
  statement: Statement,
  stop: AbortSignal,
  cancel: (values: [number, string], settled: () => boolean, onSend: (sent: Promise<unknown>) => void) => Promise<void>,
): Promise<Row[]> {
  if (stop.aborted) throw new LockWaitInterrupted(null)
  // The cancel needs another pooled connection, which may take a while when every connection is
  // waiting on a lock. A statement that returns meanwhile must not wait for it while holding its
  // row lock: the cancel is sent only if the statement is still running once a connection is in
  // hand, and only a cancel actually sent is awaited (before the next statement goes out).
  let settled = false
  const signalled = {fired: false}
  let sending: Promise<unknown> | undefined
  const onSend = (sent: Promise<unknown>) => {
    sending = sent
  }
  const onStop = () => {
    signalled.fired = true
    const pid = client.processID
    if (typeof pid !== 'number') return
    void cancel([pid, statement.text], () => settled, onSend).catch(() => undefined)
  }
  stop.addEventListener('abort', onStop, {once: true})
  try {
    return await executor.query<Row>(statement)
  } catch (error) {
    if (signalled.fired && sqlStateOf(error) === SqlState.queryCanceled)
      throw new LockWaitInterrupted(SqlState.queryCanceled)
    throw error
  } finally {
    settled = true
    stop.removeEventListener('abort', onStop)
    await sending?.catch(() => undefined)
  }
}

/** The cancel of queryUntilStopped, sent on a connection of its own from the pool. */
function cancelOn(
  acquire: () => Promise<PgClient>,
  release: (client: PgClient) => Promise<void>,
  log: StatementLog | undefined,
  watch: RoundTripWatch | undefined,
) {
  return async (values: [number, string], settled: () => boolean, onSend: (sent: Promise<unknown>) => void) => {
    const other = await acquire()
    try {
      // Checked and sent in one turn of the event loop: the statement cannot settle between.
      if (settled()) return
      const sent = executorOn(other, log, watch).query({...cancelLockWaitStatement, values})
      onSend(sent)
      await sent
    } finally {
      await release(other)
    }
  }
}

/**
 * How long close() waits for the pool to say goodbye: ending an idle connection sends Terminate
 * and waits for the server to close it, which a silent path never does. Past it, the process ends
 * anyway (bin/run.js exits) and the server ends the sessions.
 */
const closeWaitMs = 1000

async function destroyWithin(knex: Knex, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([knex.destroy(), new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

/** BEGIN (with its SET LOCALs), COMMIT and ROLLBACK: simple-protocol round trips, logged by what they are. */
function controlRoundTrip(
  client: PgClient,
  text: string,
  event: string,
  on: RoundTripWatch | undefined,
  log: StatementLog | undefined,
) {
  const roundTrip = () => watchedOn(client, on, () => client.query(text))
  return log ? logRoundTrip(log, event, roundTrip) : roundTrip()
}

/**
 * A connection from the pool, unless the run gives up on the server first (OpenOptions.abandon):
 * then it does not wait for one either, and one that comes after goes straight back.
 */
async function acquireUnlessAbandoned(
  pool: {acquireConnection(): Promise<unknown>},
  release: (client: PgClient) => Promise<void>,
  abandon: AbortSignal | undefined,
): Promise<PgClient> {
  if (!abandon) return (await pool.acquireConnection()) as PgClient
  if (abandon.aborted) throw new RoundTripAbandoned(String(abandon.reason))
  const acquiring = pool.acquireConnection() as Promise<PgClient>
  let onAbandon: (() => void) | undefined
  try {
    return await Promise.race([
      acquiring,
      new Promise<never>((_, reject) => {
        onAbandon = () => {
          void acquiring.then(release, () => undefined)
          reject(new RoundTripAbandoned(String(abandon.reason)))
        }
        abandon.addEventListener('abort', onAbandon, {once: true})
      }),
    ])
  } finally {
    if (onAbandon) abandon.removeEventListener('abort', onAbandon)
  }
}

/**
 * The pool as a Database. `watching`: the answer watch over the round trips of a pool airlock
 * opened, with the statement_timeout its sessions run statements under outside write transactions
 * (see answerWatch.ts); a pool someone else owns (wrap) runs unwatched.
 */
function databaseOver(
  knex: Knex,
  owned: boolean,
  log?: StatementLog,
  watching?: {watch: AnswerWatch; sessionStatementTimeoutMs: number},
): Database {
  // knex types its client loosely; these two calls are its documented pool interface.
  const pool = knex.client as {
    acquireConnection(): Promise<unknown>
    releaseConnection(connection: unknown): Promise<void>
  }
  const release = (client: PgClient) => pool.releaseConnection(client)
  const acquire = () => acquireUnlessAbandoned(pool, release, watching?.watch.abandon)
  const under = (statementTimeoutMs: number) => watching && {watch: watching.watch, statementTimeoutMs}
  const session = under(watching?.sessionStatementTimeoutMs ?? 0)
  const control = (client: PgClient, text: string, event: string, on: RoundTripWatch | undefined) =>
    controlRoundTrip(client, text, event, on, log)
  return {
    engine: 'postgres',
    knex,
    executor: {
      async query<Row>(statement: Statement): Promise<Row[]> {
        const client = await acquire()
        try {
          return await executorOn(client, log, session).query<Row>(statement)
        } finally {
          await release(client)
        }
      },
    },
    async transaction<T>(locals: TransactionLocals, work: (tx: Transaction) => Promise<T>): Promise<T> {
      const client = await acquire()
      // Flags the COMMIT callback sets, read after it ran (an object, so the flow analysis sees them change).
      const state = {committed: false}
      // Past BEGIN, the transaction's own statement_timeout (SET LOCAL) applies, to COMMIT too.
      const inTransaction = under(locals.statementTimeoutMs)
      try {
        await control(
          client,
          beginStatement(locals, (value) => client.escapeLiteral(value)),
          log ? beginEvent(locals) : '',
          under(Math.max(session?.statementTimeoutMs ?? 0, locals.statementTimeoutMs)),
        )
        const executor = executorOn(client, log, inTransaction)
        const tx: Transaction = {
          query: (statement) => executor.query(statement),
          async commit() {
            // Marked before the round trip: if the connection dies in flight, nothing may roll back or commit again.
            state.committed = true
            await control(client, 'commit', 'commit', inTransaction)
          },
          async setApplicationName(applicationName) {
            const name = truncateUtf8(applicationName, 63)
            await control(
              client,
              `set local application_name = ${client.escapeLiteral(name)}`,
              `set local application_name ${name}`,
              inTransaction,
            )
          },
          queryUntil: (statement, stop) =>
            queryUntilStopped(executor, client, statement, stop, cancelOn(acquire, release, log, session)),
        }
        const result = await work(tx)
        if (!state.committed) {
          state.committed = true
          await control(client, 'commit', 'commit', inTransaction)
        }

        return result
      } catch (error) {
        if (!state.committed) {
          // Also when BEGIN's round trip failed part-way (a SET LOCAL refused): the session may
          // sit in an aborted transaction block. A failed ROLLBACK means the connection is gone:
          // the pool must not hand it out again.
          await control(client, 'rollback', 'rollback', inTransaction).catch(() => discard(client))
        } else {
          await discard(client)
        }

        throw error
      } finally {
        await release(client)
      }
    },
    classify: classifyPostgresError,
    close: () => (owned ? destroyWithin(knex, closeWaitMs) : Promise.resolve()),
  }
}

export const postgresEngine: Engine = {
  name: 'postgres',
  displayName: 'PostgreSQL',
  classify: classifyPostgresError,
  connectAdvice: postgresConnectAdvice,

  async open(url: string, options: OpenOptions): Promise<Database> {
    const idleMs = options.idleInTransactionTimeoutMs === undefined ? 60_000 : options.idleInTransactionTimeoutMs
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    const {url: plainUrl, tls} = splitTls(url)
    const attempts = attemptsFor(tls.mode)
    const password = passwordSource(plainUrl, options.warn)
    // Parsed here rather than given as connectionString: node-postgres lets the string's fields
    // override the object's, which would drop the password source and the session settings.
    const fromUrl = (await import('pg-connection-string')).default.parse(plainUrl)
    const knexFactory = await loadKnex()
    const sessionStatementTimeoutMs = Math.trunc(options.statementTimeoutMs ?? readLimits.statementTimeoutMs)
    const limits = [
      `lock_timeout=${Math.trunc(options.lockTimeoutMs ?? readLimits.lockTimeoutMs)}`,
      `statement_timeout=${sessionStatementTimeoutMs}`,
    ]
    for (const [index, encrypted] of attempts.entries()) {
      const connection = () =>
        connectionSettings({
          fromUrl,
          password,
          ssl: sslOption(tls, encrypted),
          limits,
          idleMs,
          connectTimeoutMs,
          options,
        })
      const knex = knexFactory({
        client: 'pg',
        connection: connection(),
        pool: {
          min: 0,
          max: options.poolSize ?? 2,
          validate: (client: object) => !brokenClients.has(client),
          ...(options.limitsAfterConnect
            ? {
                // knex's documented pool hook: one simple-protocol round trip, before the pool hands the client out.
                afterCreate: (
                  client: SimpleQueryClient,
                  done: (error: Error | null, client: SimpleQueryClient) => void,
                ) => {
                  client.query(limits.map((l) => `set ${l}`).join('; '), (error) => done(error, client))
                },
              }
            : {}),
        },
        acquireConnectionTimeout: connectTimeoutMs + 2000,
        // knex prints pool errors to the console itself; airlock reports them once, classified and scrubbed.
        log: silentKnexLog,
      })
      const watch = answerWatch({
        connectTimeoutMs,
        abandon: options.abandon,
        ask: () => answersNewConnection(connection(), connectTimeoutMs),
        log: options.log,
      })
      const database = databaseOver(knex, true, options.log, {watch, sessionStatementTimeoutMs})
      try {
        // The first round trip opens the first connection: logged as the connect, never with the password.
        const probe = () =>
          databaseOver(knex, false, undefined, {watch, sessionStatementTimeoutMs}).executor.query({text: 'select 1'})
        const where = () =>
          `${fromUrl.user ? `${fromUrl.user}@` : ''}${fromUrl.host ?? 'localhost'}:${fromUrl.port ?? 5432}/${fromUrl.database ?? ''}`
        await (options.log
          ? logRoundTrip(
              options.log,
              `connect ${where()} (sslmode ${tls.mode}, ${encrypted ? 'TLS' : 'no TLS'})`,
              probe,
            )
          : probe())
        return database
      } catch (error) {
        await knex.destroy().catch(() => undefined)
        // prefer: the server does not speak TLS, so plain; allow: plain was refused, so TLS.
        const fallBack =
          index < attempts.length - 1 && (encrypted ? refusesTls(error) : classifyPostgresError(error).kind === 'login')
        if (!fallBack) throw error
      }
    }

    throw new Error('unreachable: every sslmode has at least one attempt')
  },

  wrap(knex) {
    // The caller loaded knex already; this only records its timeout class for classify().
    void loadKnex()
    return databaseOver(knex, false)
  },
}

/** The node-postgres settings of every connection open() makes: the pool's, and the answer watch's questions. */
function connectionSettings({
  fromUrl,
  password,
  ssl,
  limits,
  idleMs,
  connectTimeoutMs,
  options,
}: {
  fromUrl: ReturnType<typeof import('pg-connection-string').parse>
  password: (() => Promise<string | undefined>) | undefined
  ssl: ReturnType<typeof sslOption>
  limits: string[]
  idleMs: number | null
  connectTimeoutMs: number
  options: OpenOptions
}) {
  return {
    host: fromUrl.host ?? undefined,
    port: fromUrl.port ? Number(fromUrl.port) : undefined,
    user: fromUrl.user,
    database: fromUrl.database ?? undefined,
    ...(fromUrl.client_encoding ? {client_encoding: fromUrl.client_encoding} : {}),
    // node-postgres takes undefined from this function as "no password" (client.js _getPassword); its types say string.
    password: password ? (password as () => Promise<string>) : fromUrl.password,
    ssl,
    application_name: truncateUtf8(`airlock:${options.verb}`, 63),
    // Session defaults for statements outside write transactions (which SET LOCAL their own):
    // a read never waits forever behind a table lock, and a crashed or stuck airlock never
    // holds a task_instance row lock for long (the incident behind this project).
    options: [
      ...(fromUrl.options ? [fromUrl.options] : []),
      ...(options.limitsAfterConnect ? [] : limits.map((l) => `-c ${l}`)),
      ...(idleMs === null ? [] : [`-c idle_in_transaction_session_timeout=${idleMs}`]),
      ...(options.readOnly ? ['-c default_transaction_read_only=on'] : []),
      // No JIT: PostgreSQL compiles a statement whose estimated cost passes jit_above_cost,
      // and airlock's scans of task_instance (a missing-events page, a selection's
      // breakdown) pass it on a large database: 0.6-1.6 s of compiling for every page,
      // more than the page's own work. See docs/bench.md.
      '-c jit=off',
    ].join(' '),
    connectionTimeoutMillis: connectTimeoutMs,
    // TCP keepalive: see keepAliveIdleMs.
    keepAlive: true,
    keepAliveInitialDelayMillis: keepAliveIdleMs,
  }
}

/**
 * TCP keepalive, which node-postgres leaves off (libpq turns it on): a connection whose path stops
 * acknowledging while it is quiet (a long statement, an idle pooled connection) errors after this
 * plus 10 unanswered probes a second apart (Node 20 sets that interval and count), rather than
 * after the kernel's two hours. It cannot see a middlebox whose kernel still acknowledges (a
 * stopped proxy), nor a path that died with data unacknowledged: the answer watch
 * (answerWatch.ts) covers those.
 */
const keepAliveIdleMs = 10_000

/**
 * The answer watch's question (answerWatch.ts): does the server answer a new connection, outside
 * the pool (whose connections may all be stuck on the silent path), within the connect timeout,
 * to connect and to `select 1`? A refusal with a SQLSTATE (too many connections, starting up) is
 * an answer too: the server is there.
 */
async function answersNewConnection(settings: object, connectTimeoutMs: number): Promise<boolean> {
  const pg = (await import('pg')).default
  const client = new pg.Client({
    ...settings,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: connectTimeoutMs,
  })
  // Reported through connect() and query(); an error event with no listener would end the process.
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('select 1')
    return true
  } catch (error) {
    return sqlStateOf(error) !== undefined
  } finally {
    // With a query still unanswered, end() drops the socket at once rather than waiting for a goodbye.
    void client.end().catch(() => undefined)
  }
}

/**
 * A one-connection pool for a short piece of admin or fixture work (CREATE DATABASE, a schema
 * build, a seed), destroyed when the work ends, whatever happens.
 */
export async function withKnex<T>(url: string, work: (knex: Knex) => Promise<T>): Promise<T> {
  const knexFactory = await loadKnex()
  const knex = knexFactory({client: 'pg', connection: url, pool: {min: 0, max: 1}, log: silentKnexLog})
  try {
    return await work(knex)
  } finally {
    await knex.destroy()
  }
}

/** Connect failures in words, with what to do: TLS, then the login problems libpq users know. */
function postgresConnectAdvice(
  error: unknown,
  poolSizeName = 'the pool size',
): {why: string; actions: string[]} | undefined {
  const message = error instanceof Error ? error.message : String(error)
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : ''
  // The CA was passed and it signed the certificate, but the certificate names other hosts: say
  // that, never "pass the CA" (Node's message lists the host and the certificate's names).
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return {
      why: `the server's certificate is valid but does not name the host connected to (${message})`,
      actions: [
        'Connect by a host name the certificate lists (its altnames, above), or have the certificate reissued for this name.',
        'Or sslmode=verify-ca: the certificate is still checked against the CA, the host name is not.',
      ],
    }
  }
  if (isTlsVerificationError(error)) {
    return {
      why: `the server's TLS certificate could not be verified (${code}: ${message})`,
      actions: [
        "Pass the CA that signed the server's certificate: sslrootcert=/path/to/ca.crt in the URL, or PGSSLROOTCERT.",
        'Or sslmode=require to encrypt without verifying the certificate (what psql does with require).',
      ],
    }
  }
  if (isMissingPassword(error)) {
    return {
      why: 'the server asks for a password and none was given',
      actions: [
        'Put it in ~/.pgpass (mode 600; PGPASSFILE names another file) or PGPASSWORD, rather than in the URL on the command line.',
      ],
    }
  }
  if (refusesTls(error)) {
    return {
      why: 'the server does not offer TLS, and the sslmode asks for it',
      actions: ['Use sslmode=prefer (or disable) for this server, or enable ssl on it.'],
    }
  }
  const state = sqlStateOf(error)
  const byState: Record<string, {why: string; action: string}> = {
    [SqlState.invalidPassword]: {
      why: 'authentication failed (wrong password, or none given)',
      action: 'Check the password; keep it in ~/.pgpass (mode 600) or PGPASSWORD rather than in the URL.',
    },
    [SqlState.invalidAuthorization]: {
      why: 'the server refuses this user from this host (pg_hba.conf), or requires TLS',
      action: 'Check the user, and sslmode if the server only accepts TLS.',
    },
    [SqlState.invalidCatalogName]: {
      why: 'the database does not exist',
      action: 'Check the database name at the end of the URL.',
    },
    [SqlState.cannotConnectNow]: {why: 'the server is starting up or shutting down', action: 'Try again in a moment.'},
    [SqlState.tooManyConnections]: {
      why: 'the server has no free connection slot (max_connections)',
      action: `Lower ${poolSizeName}, or try again when the load drops.`,
    },
  }
  const known = state ? byState[state] : undefined
  if (known) return {why: `${known.why} (${state}): ${message}`, actions: [known.action]}
  const errno: Record<string, string> = {
    ECONNREFUSED: 'connection refused: nothing listens on that host and port',
    ENOTFOUND: 'the host name does not resolve (DNS)',
    EAI_AGAIN: 'the host name could not be resolved right now (DNS)',
    ETIMEDOUT: 'the connection timed out',
    EHOSTUNREACH: 'the host is unreachable',
    ENETUNREACH: 'the network is unreachable',
    ECONNRESET: 'the connection was reset',
  }
  if (errno[code]) return {why: `${errno[code]} (${code})`, actions: []}
  if (message === 'Connection terminated unexpectedly') {
    return {
      why: 'the server closed the connection right after accepting it (a proxy, or a TLS-only server)',
      actions: ['If the server requires TLS, use sslmode=require.'],
    }
  }
  return undefined
}

/**
 * Where the password comes from when the URL has none: PGPASSWORD (node-postgres reads it), else
 * the password file, looked up for this connection's host, port, database and user as libpq does.
 */
function passwordSource(
  url: string,
  warn: ((message: string) => void) | undefined,
): (() => Promise<string | undefined>) | undefined {
  const parsed = new URL(url)
  if (parsed.password || parsed.searchParams.get('password') || process.env.PGPASSWORD) return undefined
  const user = decodeURIComponent(parsed.username) || process.env.PGUSER || os.userInfo().username
  const lookup = {
    host: parsed.hostname || parsed.searchParams.get('host') || process.env.PGHOST || 'localhost',
    port: parsed.port || process.env.PGPORT || '5432',
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || process.env.PGDATABASE || user,
    user,
  }
  let warned = false
  return () =>
    Promise.resolve(
      passwordFromFile(lookup, process.env, (message) => {
        if (!warned) warn?.(message)
        warned = true
      }),
    )
}
