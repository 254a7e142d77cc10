import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, scenario} from '../support/scenario.js'

/**
 * Review: Airflow's register_asset_changes_in_db emits one event per declared asset AND one per
 * Asset.ref resolving to it (airlock's complete does the same, "as in Airflow":
 * test/complete/outlets.test.ts). The audit calls the second a `duplicate` (default --fail-on),
 * and --fix deletes a worker's legitimate event.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
})
afterAll(async () => {
  await db?.drop()
})
const cli = (command: string, ...args: string[]) => runCli([command, '--database-url', db.url, ...args])
type Audit = {result: {counts: Record<string, number>}}

describe('an asset declared directly and by Asset.ref gets two events, as Airflow writes them', () => {
  it("airlock's own complete: the audit must not call its second event a duplicate", async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex).producer('etl', {outlets: 1, refs: [{name: 'etl.produce.out_1'}]}).build()
    const target = world.ti('etl')
    expect((await completeOne(db.knex, target.id)).events).toBe(2)
    const audit = await cli('audit-events', '--dag-id', 'etl', '--json')
    expect((envelope(audit) as Audit).result.counts.duplicate).toBe(0)
    expect(audit.code).toBe(0)
  })

  it("a worker's two events (what register_asset_changes_in_db wrote): --fix must not delete one", async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex)
      .producer('etl2', {outlets: 1, refs: [{name: 'etl2.produce.out_1'}], state: 'success', emitted: true})
      .build()
    const target = world.ti('etl2')
    // emitted: one event per active outlet; the worker wrote a second one for the ref, same content.
    await db.knex.raw(
      `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
       select asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp" + interval '1 millisecond'
         from asset_event where source_dag_id = 'etl2'`,
    )
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
    const audit = await cli('audit-events', '--dag-id', 'etl2', '--json')
    expect.soft((envelope(audit) as Audit).result.counts.duplicate).toBe(0)
    const fix = await cli('audit-events', '--dag-id', 'etl2', '--fix', '--no-dry-run', '--yes', '--json')
    expect.soft(fix.code).toBe(0)
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })
})
