import type {Database, Engine, OpenOptions} from '../engine/engine.js'
import {engineFor} from '../engine/engines.js'
import {AirlockError, doctorAction, unreachableError} from '../errors.js'
import type {ResolvedConnection} from './profiles.js'
import {describeTarget, passwordOf, redact} from './url.js'

export interface OpenedDatabase {
  db: Database
  connection: ResolvedConnection
  /** host:port/database, safe to print. */
  target: string
}

/**
 * Opens the resolved database through the engine its URL names and proves it answers, so an
 * unreachable server or a failed login becomes exit 7 here, with a message naming the target and
 * where the URL came from.
 */
export async function openDatabase(connection: ResolvedConnection, options: OpenOptions): Promise<OpenedDatabase> {
  const password = passwordOf(connection.url)
  const scrub = (text: string) => redact(text, password ? [password] : [])
  const target = describeTarget(connection.url)
  const engine = engineFor(connection.url, connection.source)
  try {
    return {db: await engine.open(connection.url, options), connection, target}
  } catch (error) {
    throw classifyConnectError(error, engine, target, connection.source, scrub, options.poolSizeName)
  }
}

function classifyConnectError(
  error: unknown,
  engine: Engine,
  target: string,
  source: string,
  scrub: (t: string) => string,
  poolSizeName: string | undefined,
): Error {
  if (error instanceof AirlockError) return error
  const message = scrub(error instanceof Error ? error.message : String(error))
  const {kind, connectTimeout} = engine.classify(error)
  if (kind === 'login' || kind === 'unreachable') {
    const advice = engine.connectAdvice(error, poolSizeName)
    const why = connectTimeout ? 'no answer before the connect timeout' : scrub(advice?.why ?? message)
    return unreachableError(
      `Cannot connect to ${engine.displayName} at ${target} (from ${source}): ${why}`,
      [
        ...(advice?.actions ?? [
          'Check that the server is running and that host, port, database, user and password are right.',
        ]),
        doctorAction('shows which connection setting is in use.'),
      ],
      error,
    )
  }

  return new Error(scrub(`Connecting to ${target} failed: ${message}`), {cause: error})
}
