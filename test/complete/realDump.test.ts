import os from 'node:os'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {publicTables} from '../support/catalog.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'
import {countRows} from '../support/scenario.js'

const haveDump = await dumpAvailable()

/**
 * On a real Airflow 3.0.0 database (a pg_dump of a fresh 3.0.0 install) with a producer, its assets and a
 * consumer added by plain SQL, a completion writes exactly what Airflow's success path writes,
 * and nothing in any other of the 45 tables changes.
 */
describe.skipIf(!haveDump)('complete on the restored Airflow 3.0.0 dump', () => {
  let db: TestDatabase
  const tiId = '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a'

  beforeAll(async () => {
    db = await createTestDatabase('empty', 2)
    await restoreDump(db.knex)
    await db.knex.raw(`
      insert into dag (dag_id, is_paused, is_stale, bundle_name, owners, max_active_tasks, max_active_runs, max_consecutive_failed_dag_runs, has_task_concurrency_limits)
      values ('producer', false, false, 'dags-folder', 'alice', 16, 16, 0, false),
             ('consumer', false, false, 'dags-folder', 'bob', 16, 16, 0, false),
             ('paused_consumer', true, false, 'dags-folder', 'bob', 16, 16, 0, false);
      insert into dag_run (dag_id, run_id, run_type, state, logical_date, run_after, queued_at, start_date, log_template_id)
      values ('producer', 'scheduled__2026-12-01T00:00:00+00:00', 'scheduled', 'running', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z', now(), now(), 2);
      insert into task_instance (id, task_id, dag_id, run_id, map_index, start_date, state, try_number, pool, pool_slots, next_method, next_kwargs)
      values ('${tiId}', 'load', 'producer', 'scheduled__2026-12-01T00:00:00+00:00', -1, now() - interval '90 seconds', 'running', 1, 'default_pool', 1, 'resume', '{"x":1}');
      insert into asset (name, uri, "group", extra, created_at, updated_at)
      values ('warehouse.orders', 's3://warehouse/orders', 'asset', '{}', now(), now()),
             ('warehouse.customers', 's3://warehouse/customers', 'asset', '{}', now(), now()),
             ('warehouse.retired', 's3://warehouse/retired', 'asset', '{}', now(), now());
      insert into asset_active (name, uri) values ('warehouse.orders', 's3://warehouse/orders'), ('warehouse.customers', 's3://warehouse/customers');
      insert into task_outlet_asset_reference (asset_id, dag_id, task_id, created_at, updated_at) select id, 'producer', 'load', now(), now() from asset;
      insert into dag_schedule_asset_reference (asset_id, dag_id, created_at, updated_at)
      select id, 'consumer', now(), now() from asset where name = 'warehouse.orders'
      union all select id, 'paused_consumer', now(), now() from asset where name = 'warehouse.orders';
      insert into dag_schedule_asset_uri_reference (uri, dag_id, created_at) values ('s3://warehouse/customers', 'consumer', now());
    `)
  })
  afterAll(async () => db?.drop())

  async function rowCounts(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {}
    for (const table of await publicTables(db.knex)) counts[table] = await countRows(db.knex, table)

    return counts
  }

  it('writes the TI update, one event per active outlet, the queue rows and one log row, and nothing else', async () => {
    const before = await rowCounts()
    const result = await runCli(['complete', '--database-url', db.url, '--ti-id', tiId, '--json'])
    expect(result.code).toBe(0)
    expect(envelope(result)).toMatchObject({
      status: 0,
      result: {summary: {completed: 1, events_created: 2, runs_queued: 2}},
    })

    const after = await rowCounts()
    const changed = Object.keys(after).filter((table) => after[table] !== before[table])
    expect(changed.sort()).toEqual(['asset_dag_run_queue', 'asset_event', 'log'])
    expect(after.asset_event! - before.asset_event!).toBe(2)
    expect(after.log! - before.log!).toBe(1)

    const ti = await db.knex('task_instance').where({id: tiId}).first()
    expect(ti).toMatchObject({state: 'success', next_method: null, next_kwargs: null})
    expect(ti.duration).toBeGreaterThanOrEqual(90)
    expect(ti.duration).toBeCloseTo((ti.end_date.getTime() - ti.start_date.getTime()) / 1000, 2)

    const events = await db
      .knex('asset_event as e')
      .join('asset as a', 'a.id', 'e.asset_id')
      .orderBy('a.name')
      .select('a.name', 'e.*')
    expect(
      events.map((e) => [e.name, e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index, e.extra]),
    ).toEqual([
      ['warehouse.customers', 'producer', 'scheduled__2026-12-01T00:00:00+00:00', 'load', -1, {}],
      ['warehouse.orders', 'producer', 'scheduled__2026-12-01T00:00:00+00:00', 'load', -1, {}],
    ])

    const queue = await db
      .knex('asset_dag_run_queue as q')
      .join('asset as a', 'a.id', 'q.asset_id')
      .orderBy('a.name')
      .select('a.name', 'q.target_dag_id')
    expect(queue).toEqual([
      {name: 'warehouse.customers', target_dag_id: 'consumer'},
      {name: 'warehouse.orders', target_dag_id: 'consumer'},
    ])

    const log = await db.knex('log').orderBy('id', 'desc').first()
    expect(log).toMatchObject({
      dag_id: 'producer',
      task_id: 'load',
      run_id: 'scheduled__2026-12-01T00:00:00+00:00',
      map_index: -1,
      try_number: 1,
      event: 'success',
      owner: os.userInfo().username,
    })
    expect(log.logical_date.toISOString()).toBe('2026-12-01T00:00:00.000Z')
    expect(JSON.parse(log.extra)).toMatchObject({host_name: expect.any(String), airlock: {command: 'complete'}})
  })

  it('a second run is already_success and writes nothing', async () => {
    const before = await rowCounts()
    const result = await runCli(['complete', '--database-url', db.url, '--ti-id', tiId, '--json'])
    expect(envelope(result)).toMatchObject({status: 0, result: {summary: {already_success: 1}}})
    expect(await rowCounts()).toEqual(before)
  })
})
