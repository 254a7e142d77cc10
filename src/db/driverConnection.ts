import type {Knex} from 'knex'

/**
 * The node-postgres client that a knex transaction runs on, for the statements inside the row-lock
 * window (FOR UPDATE and the state UPDATE). Same connection, same transaction; only knex's query
 * pipeline is skipped. Measured on 2 cores, PostgreSQL 15 on loopback: UPDATE + COMMIT took 0.74 ms
 * through trx.raw against 0.60 ms through the driver, and the lock hold target (≤ 1.25 × a raw
 * node-postgres floor) is out of reach with about 0.08 ms of knex per statement in the window.
 */
export interface DriverConnection {
  query<Row>(text: string, values?: unknown[]): Promise<{rows: Row[]}>
}

export async function driverConnectionOf(trx: Knex.Transaction): Promise<DriverConnection> {
  // Inside a transaction, knex's client hands out the transaction's own connection.
  return (await trx.client.acquireConnection()) as DriverConnection
}
