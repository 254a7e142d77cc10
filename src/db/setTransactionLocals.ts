import type {Knex} from 'knex'

export interface TransactionLocals {
  lockTimeoutMs: number
  statementTimeoutMs: number
  /** ≤ 63 bytes (PostgreSQL truncates longer names): `airlock:<verb>:<ti>`. */
  applicationName: string
}

/**
 * The first statement of every airlock write transaction: SET LOCAL lock_timeout,
 * statement_timeout and application_name in one round trip (set_config(…, true) is SET LOCAL).
 * The tag lets audit-locks and pg_stat_activity name the task instance a session works on.
 */
export async function setTransactionLocals(trx: Knex.Transaction, locals: TransactionLocals): Promise<void> {
  await trx.raw(
    `select set_config('lock_timeout', ?, true), set_config('statement_timeout', ?, true), set_config('application_name', ?, true)`,
    [`${locals.lockTimeoutMs}ms`, `${locals.statementTimeoutMs}ms`, truncateUtf8(locals.applicationName, 63)],
  )
}

export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= maxBytes) return text
  return bytes.subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '')
}
