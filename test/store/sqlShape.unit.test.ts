import {describe, expect, it} from 'vitest'

import type {Executor, Statement} from '../../src/engine/engine.js'
import {beginStatement, truncateUtf8} from '../../src/engine/postgres/postgresEngine.js'
import {prepared} from '../../src/engine/prepared.js'
import {postgresStore} from '../../src/store/postgres/postgresStore.js'

/**
 * The shape of the SQL that carries the protocol's guarantees, checked without a database so a
 * refactor cannot silently drop a lock clause or the queue's key order.
 */
function recorder(): {ex: Executor; sql: string[]; statements: Statement[]} {
  const sql: string[] = []
  const statements: Statement[] = []
  const ex: Executor = {
    query<Row>(statement: Statement): Promise<Row[]> {
      statements.push(statement)
      sql.push(statement.text.replace(/\s+/g, ' ').toLowerCase())
      return Promise.resolve([])
    },
  }
  return {ex, sql, statements}
}

const before34 = {
  eventPartitionKey: false,
  partitionedTimetables: false,
  maxRunsFlag: false,
  partitionStep: null,
  queueShape: 'per_asset',
  multiTeam: false,
  inletReferences: false,
  consumerFilter: 'id_and_alias_skip_paused_and_stale',
  eventPartitionKeys: false,
  missingPartitionKeyLog: false,
  aliasAssetShape: 'bare',
  eventWindow: 'assets',
  taskStateTable: null,
  clearTaskStateOnSuccess: false,
  teamFilter: false,
} as const
const from34 = {
  eventPartitionKey: true,
  partitionedTimetables: true,
  maxRunsFlag: true,
  partitionStep: 'fresh_active',
  queueShape: 'per_event',
  multiTeam: false,
  inletReferences: true,
  consumerFilter: 'all_skip_paused',
  eventPartitionKeys: true,
  missingPartitionKeyLog: true,
  aliasAssetShape: 'declared',
  eventWindow: 'catchup_floor',
  taskStateTable: null,
  clearTaskStateOnSuccess: false,
  teamFilter: false,
} as const

describe('SQL shape', () => {
  it("prepared statement names fit PostgreSQL's 63 bytes, keeping the text hash that tells two texts apart", async () => {
    const long = prepared('x'.repeat(80), 'select 1')([])
    const other = prepared('x'.repeat(80), 'select 2')([])
    expect(long.name!.length).toBeLessThanOrEqual(63)
    expect(long.name).not.toBe(other.name)
    // The longest name the store makes: the queue statement of the widest capability set.
    const {ex, statements} = recorder()
    await postgresStore({...before34, teamFilter: true}).queueConsumers(
      ex,
      [{eventId: 1, assetId: 1, aliasId: null}],
      null,
      null,
      null,
    )
    expect(statements[0]!.name!.length).toBeLessThanOrEqual(63)
    expect(statements[0]!.name).toMatch(/_[0-9a-f]{12}$/)
  })

  it('the lock is FOR UPDATE by id only, never filtered on state, and runs prepared', async () => {
    const {ex, sql, statements} = recorder()
    await postgresStore(before34).lockTaskInstance(ex, 'id')
    expect(sql[0]).toMatch(
      /^select state, try_number, xmin::text as xmin from task_instance where id = \$1 for update$/,
    )
    expect(sql[0]).not.toContain('state =')
    expect(sql[0]).not.toMatch(/skip locked|nowait/)
    expect(statements[0]!.name).toMatch(/^airlock_lock_ti_/)
  })

  it('queue rows are inserted in key order, ON CONFLICT DO NOTHING before 3.4 and plain-inserted from 3.4', async () => {
    const events = [{eventId: 2, assetId: 9, aliasId: null}]
    const before = recorder()
    await postgresStore(before34).queueConsumers(before.ex, events, null, null, null)
    expect(before.sql[0]).toContain('order by asset_id, dag_id')
    // Airflow 3.0's _postgres_queue_dagruns: ON CONFLICT DO NOTHING, the first created_at is kept.
    expect(before.sql[0]).toContain('on conflict (asset_id, target_dag_id) do nothing')
    // 3.0 and 3.1.0: paused or stale DAGs are skipped for id and alias references; name/uri ones are queued unfiltered.
    expect(before.sql[0]).toContain(
      "where not (reference.kind in ('id', 'alias') and (d.is_paused is not false or d.is_stale is not false))",
    )

    const after = recorder()
    await postgresStore(from34).queueConsumers(after.ex, events, null, null, null)
    expect(after.sql[0]).toContain('order by dag_id, event_id')
    expect(after.sql[0]).not.toContain('on conflict')
    // From apache/airflow #60022 (3.1.7, 3.2.0): every reference kind skips paused DAGs only.
    expect(after.sql[0]).toContain('where not (d.is_paused is not false)')
    // One name per text: the two capability sets never share a prepared statement.
    expect(after.statements[0]!.name).not.toBe(before.statements[0]!.name)
  })

  it('--no-downstream runs the queue statement without the preview; with it, the preview rides in the same statement', async () => {
    const events = [
      {eventId: 2, assetId: 9, aliasId: null},
      {eventId: 3, assetId: 9, aliasId: null},
    ]
    const without = recorder()
    await postgresStore(before34).queueConsumers(without.ex, events, null, null, null)
    expect(without.sql[0]).not.toContain('consumer_dag')
    const within = recorder()
    // 11: an asset of the item's events under another partition key, queued by an earlier statement.
    await postgresStore(before34).queueConsumers(within.ex, events, null, null, {assetIds: [9, 9, 11], aliasIds: []})
    expect(within.statements).toHaveLength(1)
    expect(within.sql[0]).toContain('consumer_dag')
    expect(within.statements[0]!.name).not.toBe(without.statements[0]!.name)
    // The statement's own events find the preview's consumers in its reference rows; the preview
    // is bound only the assets beyond them, once each.
    expect(within.sql[0]).toContain('select dag_id from reference')
    expect(within.statements[0]!.values).toContainEqual([11])
    expect(within.statements[0]!.values).not.toContainEqual([9, 11])
  })

  it('every transaction begins at READ COMMITTED with its SET LOCAL timeouts and application_name, in one round trip', () => {
    const text = beginStatement(
      {lockTimeoutMs: 5000, statementTimeoutMs: 30_000, applicationName: "airlock:complete:it's"},
      (v) => `'${v.replace(/'/g, "''")}'`,
    )
    expect(text).toBe(
      "begin isolation level read committed; set local lock_timeout = '5000ms'; set local statement_timeout = '30000ms'; set local idle_in_transaction_session_timeout = '3000ms'; set local application_name = 'airlock:complete:it''s'",
    )
    expect(
      beginStatement(
        {lockTimeoutMs: 5000, statementTimeoutMs: 30_000, applicationName: 'airlock:complete:x', genericPlans: true},
        (v) => `'${v}'`,
      ),
    ).toContain("; set local plan_cache_mode = force_generic_plan; set local application_name = 'airlock:complete:x'")
  })

  it('the unlocked read takes no lock', async () => {
    const {ex, sql} = recorder()
    await postgresStore(before34).readTaskInstance(ex, {tiId: 'x'}, {withOutlets: true})
    expect(sql[0]).not.toContain('for update')
    expect(sql[0]).toContain('where ti.id = $1::uuid')
  })

  it('application names are cut to 63 bytes without splitting a character', () => {
    expect(Buffer.byteLength(truncateUtf8('airlock:complete:' + 'é'.repeat(40), 63))).toBeLessThanOrEqual(63)
    expect(truncateUtf8('short', 63)).toBe('short')
  })
})
