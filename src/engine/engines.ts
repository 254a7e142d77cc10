import {unsupportedSchemaError, usageError} from '../errors.js'
import type {ClassifiedError, Engine} from './engine.js'
import {postgresEngine} from './postgres/postgresEngine.js'

/**
 * How the engines read a failure that reached the command without an AirlockError (a connection
 * lost in the middle of a run): by error code, never by message text.
 */
export function classifyDatabaseError(error: unknown): ClassifiedError {
  return postgresEngine.classify(error)
}

/**
 * The engine for a database URL, by its scheme. Adding an engine is one folder beside
 * postgres/ and one case here (and its SQL in src/store/<engine>/, one case in openStore).
 */
export function engineFor(url: string, origin = 'The database URL'): Engine {
  const scheme = /^([a-z][a-z0-9]*):/i.exec(url)?.[1]?.toLowerCase()
  switch (scheme) {
    case 'postgres':
    case 'postgresql':
      return postgresEngine
    case 'mysql':
    case 'mariadb':
      // Airflow runs on MySQL 8 too; airlock's statements and lock monitoring are PostgreSQL's so far.
      throw unsupportedSchemaError(
        `${origin} points at MySQL, which airlock does not support yet: it works on PostgreSQL only.`,
        ['Run airlock against an Airflow metadata database on PostgreSQL.'],
      )
    default:
      throw usageError(
        `${origin} uses the scheme "${scheme ?? '(none)'}:"; expected postgresql:// (or postgresql+psycopg2:// from Airflow).`,
      )
  }
}
