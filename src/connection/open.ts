import knexFactory, {type Knex} from 'knex'

import {AirlockError, unreachableError} from '../errors.js'
import {loginSqlStates, sqlStateOf} from '../db/sqlstate.js'
import type {ResolvedConnection} from './resolve.js'
import {describeTarget, passwordOf, redact} from './url.js'

export interface OpenOptions {
  /** The command, for application_name (`airlock:<verb>`), so lock audits can name the session. */
  verb: string
  /** Pool size: per-TI transactions run concurrently over this many connections. */
  poolSize?: number
  /**
   * Milliseconds; the server ends a session that sits idle inside a transaction this long.
   * null leaves the server's setting alone (doctor reports what Airflow's sessions get).
   */
  idleInTransactionTimeoutMs?: number | null
  connectTimeoutMs?: number
}

export interface Database {
  knex: Knex
  connection: ResolvedConnection
  /** host:port/database, safe to print. */
  target: string
  /** Scrubs this connection's password from any text before it is shown. */
  scrub(text: string): string
  close(): Promise<void>
}

export const silentKnexLog = {warn() {}, error() {}, debug() {}, deprecate() {}}

/**
 * A one-connection pool for a short piece of admin or fixture work (CREATE DATABASE, a schema
 * build, a seed), destroyed when the work ends, whatever happens.
 */
export async function withConnection<T>(url: string, work: (knex: Knex) => Promise<T>): Promise<T> {
  const knex = knexFactory({client: 'pg', connection: url, pool: {min: 0, max: 1}, log: silentKnexLog})
  try {
    return await work(knex)
  } finally {
    await knex.destroy()
  }
}

/** Driver errors that mean the server could not be reached at all. */
const networkErrnos = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET'])

/**
 * Opens a pool to the resolved database and proves it answers, so an unreachable server or a
 * failed login becomes exit 7 here, with a message naming the target and where the URL came from.
 */
export async function openDatabase(connection: ResolvedConnection, options: OpenOptions): Promise<Database> {
  const password = passwordOf(connection.url)
  const scrub = (text: string) => redact(text, password ? [password] : [])
  const target = describeTarget(connection.url)
  const idleMs = options.idleInTransactionTimeoutMs === undefined ? 60_000 : options.idleInTransactionTimeoutMs

  const knex = knexFactory({
    client: 'pg',
    connection: {
      connectionString: connection.url,
      application_name: `airlock:${options.verb}`.slice(0, 63),
      // A crashed or stuck airlock must never hold a task_instance row lock for long (the incident
      // behind this project): the server itself ends such a session.
      ...(idleMs === null ? {} : {options: `-c idle_in_transaction_session_timeout=${idleMs}`}),
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    },
    pool: {min: 0, max: options.poolSize ?? 2},
    acquireConnectionTimeout: (options.connectTimeoutMs ?? 10_000) + 2000,
    // knex prints pool errors to the console itself; airlock reports them once, classified and scrubbed.
    log: silentKnexLog,
  })

  const database: Database = {
    knex,
    connection,
    target,
    scrub,
    close: () => knex.destroy(),
  }

  try {
    await knex.raw('select 1')
  } catch (error) {
    await knex.destroy().catch(() => undefined)
    throw classifyConnectError(error, target, connection.source, scrub)
  }

  return database
}

export function classifyConnectError(error: unknown, target: string, source: string, scrub: (t: string) => string): Error {
  const state = sqlStateOf(error)
  const errno = typeof error === 'object' && error !== null && 'code' in error ? String((error as {code: unknown}).code) : ''
  const message = scrub(error instanceof Error ? error.message : String(error))
  const isTimeout = error instanceof Error && error.name === 'KnexTimeoutError'

  if ((state && loginSqlStates.has(state)) || networkErrnos.has(errno) || isTimeout || /timeout/i.test(message)) {
    const why = isTimeout ? 'no answer before the connect timeout' : message
    return unreachableError(`Cannot connect to PostgreSQL at ${target} (from ${source}): ${why}`, [
      'Check that the server is running and that host, port, database, user and password are right.',
      'airlock doctor shows which connection setting is in use.',
    ], error)
  }

  if (error instanceof AirlockError) return error
  return new Error(scrub(`Connecting to ${target} failed: ${message}`), {cause: error})
}
