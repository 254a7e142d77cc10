import type {Knex} from 'knex'

import {truncateUtf8, type TransactionLocals} from './transactionLocals.js'

/**
 * SET LOCAL lock_timeout, statement_timeout and application_name in one round trip, for write
 * transactions that do not start with a task instance read (event re-emission, repairs).
 */
export async function setTransactionLocals(trx: Knex.Transaction, locals: TransactionLocals): Promise<void> {
  await trx.raw(`select set_config('lock_timeout', ?, true), set_config('statement_timeout', ?, true), set_config('application_name', ?, true)`, [
    `${locals.lockTimeoutMs}ms`,
    `${locals.statementTimeoutMs}ms`,
    truncateUtf8(locals.applicationName, 63),
  ])
}
