import {performance} from 'node:perf_hooks'

import type {Statement, StatementLog} from './engine.js'

/**
 * What a statement is called in the log: its prepared name (`airlock_lock_ti_3f2a…`), else the
 * start of its text in quotes, whitespace collapsed, quoted literals blanked, cut at 60
 * characters. The text holds `$n` placeholders, never values; blanking literals also keeps out a
 * constant that a statement might one day spell inline.
 */
export function statementLabel(statement: Statement): string {
  if (statement.name) return statement.name
  const text = statement.text
    .replace(/'(?:[^']|'')*'/g, "'…'")
    .replace(/\s+/g, ' ')
    .trim()
  return `"${text.length > maxLabelLength ? `${text.slice(0, maxLabelLength - 1)}…` : text}"`
}

const maxLabelLength = 60

/** Prepared statements whose text this process has logged already. */
const textsLogged = new Set<string>()

/**
 * The first time a prepared statement runs in this process, `text <name> <its whole text>` on one
 * line (comments dropped, whitespace collapsed), so every `sql <name>` line after it can be read whole. The text
 * holds `$n` placeholders and the constants written in airlock's code, never a bound value.
 */
export function logTextOnce(log: StatementLog, statement: Statement): void {
  if (!statement.name || textsLogged.has(statement.name)) return
  textsLogged.add(statement.name)
  // Comments go: on one line, a `--` comment would swallow the rest of the statement.
  const oneLine = statement.text
    .replace(/--[^\n]*/g, '')
    .replace(/\s+/g, ' ')
    .trim()
  log(`text ${statement.name} ${oneLine}`)
}

/**
 * Runs one round trip and logs `<event> <ms> [<detail>]` when it returns, or `<event> <ms>
 * failed (<code>)` when it throws (the error is rethrown untouched).
 */
export async function logRoundTrip<T>(
  log: StatementLog,
  event: string,
  run: () => Promise<T>,
  detail?: (result: T) => string,
): Promise<T> {
  const started = performance.now()
  try {
    const result = await run()
    log(`${event} ${elapsed(started)}${detail ? ` ${detail(result)}` : ''}`)
    return result
  } catch (error) {
    const code = errorCode(error)
    log(`${event} ${elapsed(started)} failed${code ? ` (${code})` : ''}`)
    throw error
  }
}

/** `(1 row)`, `(3 rows)`: rows returned, or affected by an INSERT, UPDATE or DELETE without RETURNING. */
export const rowCount = (rows: number) => `(${rows} ${rows === 1 ? 'row' : 'rows'})`

const elapsed = (started: number) => `${(performance.now() - started).toFixed(1)} ms`

/** The driver's code for a failure: a SQLSTATE (55P03) or a socket error (ECONNREFUSED); never its message. */
function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined
  const {code} = error
  return typeof code === 'string' && /^[A-Z0-9_]{1,32}$/.test(code) ? code : undefined
}
