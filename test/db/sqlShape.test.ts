import type {Knex} from 'knex'
import {describe, expect, it} from 'vitest'

import type {DriverConnection} from '../../src/db/driverConnection.js'
import {lockTaskInstance} from '../../src/db/lockTaskInstance.js'
import {queueConsumers} from '../../src/db/queueConsumers.js'
import {readTaskInstance} from '../../src/db/readTaskInstance.js'
import {truncateUtf8} from '../../src/db/transactionLocals.js'

/**
 * The shape of the SQL that carries the protocol's guarantees, checked without a database so a
 * refactor cannot silently drop a lock clause or the queue's key order (as pg-boss does).
 */
function recorder(): {trx: Knex.Transaction; conn: DriverConnection; sql: string[]} {
  const sql: string[] = []
  const record = (text: string) => sql.push(text.replace(/\s+/g, ' ').toLowerCase())
  const trx = {raw: async (text: string) => (record(text), {rows: []})} as unknown as Knex.Transaction
  const conn: DriverConnection = {query: async (query: string | {text: string}) => (record(typeof query === 'string' ? query : query.text), {rows: []})}
  return {trx, conn, sql}
}

describe('SQL shape', () => {
  it('the lock is FOR UPDATE by id only, never filtered on state', async () => {
    const {conn, sql} = recorder()
    await lockTaskInstance(conn, 'id')
    expect(sql[0]).toMatch(/^select state, try_number from task_instance where id = \$1 for update$/)
    expect(sql[0]).not.toContain('state =')
    expect(sql[0]).not.toMatch(/skip locked|nowait/)
  })

  it('queue rows are inserted in key order, upserted before 3.4 and plain-inserted from 3.4', async () => {
    const events = [{eventId: 2, assetId: 9, aliasId: null}]
    const before = recorder()
    await queueConsumers(before.conn, events, {capabilities: {queueShape: 'per_asset', partitionedTimetables: false}, eventPartitionKey: null})
    expect(before.sql[0]).toContain('order by asset_id, dag_id')
    expect(before.sql[0]).toContain('on conflict (asset_id, target_dag_id) do update set created_at = greatest(')
    expect(before.sql[0]).toContain('not coalesce(d.is_paused, false)')

    const after = recorder()
    await queueConsumers(after.conn, events, {capabilities: {queueShape: 'per_event', partitionedTimetables: true}, eventPartitionKey: null})
    expect(after.sql[0]).toContain('order by dag_id, event_id')
    expect(after.sql[0]).not.toContain('on conflict')
  })

  it('the first statement sets the SET LOCAL timeouts and application_name, and takes no lock', async () => {
    const {conn, sql} = recorder()
    await readTaskInstance(conn, {tiId: 'x'}, {capabilities: {eventPartitionKey: false}, withOutlets: true, locals: {lockTimeoutMs: 5000, statementTimeoutMs: 30_000, applicationName: 'airlock:complete:x'}})
    expect(sql[0]).toMatch(/^with locals as materialized/)
    expect(sql[0]).not.toContain('for update')
    expect(sql[0]).toContain("set_config('lock_timeout', $1, true)")
    expect(sql[0]).toContain("set_config('statement_timeout', $2, true)")
    expect(sql[0]).toContain("set_config('application_name', $3, true)")
    expect(sql[0]).toContain('where ti.id = $4::uuid')
  })

  it('application names are cut to 63 bytes without splitting a character', () => {
    expect(Buffer.byteLength(truncateUtf8('airlock:complete:' + 'é'.repeat(40), 63))).toBeLessThanOrEqual(63)
    expect(truncateUtf8('short', 63)).toBe('short')
  })
})
