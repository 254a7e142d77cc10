import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {failForRetryAsAirflowDoes, scenario} from '../support/scenario.js'

/**
 * Review: a try archived for its retry (ti_update_state → prepare_db_for_next_try → record_ti,
 * history state `failed`) and then completed by airlock (--from-state up_for_retry) succeeded.
 * When that task instance is later cleared, TaskInstanceHistory.record_ti finds the try already
 * archived and returns without writing (`if exists_q: return`): the only row of that try says
 * failed. tryRows (src/store/postgres/attribution.ts) takes the current row's success only while
 * it still carries that try number, so the success is forgotten and the try's own event becomes
 * `orphan_not_success` ("no try … succeeded"), a default --fail-on finding, although airlock's
 * own success row for that try names it.
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

describe('a try archived for retry, completed by airlock, then cleared', () => {
  it("its event stays a successful try's event, not orphan_not_success", async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1}).build()
    const retrying = await failForRetryAsAirflowDoes(db.knex, world.ti('etl').id)
    const done = await cli('complete', '--ti-id', retrying, '--from-state', 'up_for_retry', '--yes', '--json')
    expect(done.code, done.stderr).toBe(0)
    const before = envelope(await cli('audit-events', '--dag-id', 'etl', '--json')) as Audit
    expect(before.result.counts).toMatchObject({ok: 1, orphan_not_success: 0})

    // Airflow clears it (clear_task_instances → prepare_db_for_next_try: record_ti returns, try 1
    // is archived already; new id, state NULL), then DagRun.schedule_tis runs try 2.
    await db.knex.raw(
      `update task_instance set id = gen_random_uuid(), state = null, updated_at = clock_timestamp() where id = ?`,
      [retrying],
    )
    await db.knex.raw(
      `update task_instance set state = 'scheduled', try_number = try_number + 1, scheduled_dttm = clock_timestamp(), updated_at = clock_timestamp()
        where dag_id = 'etl'`,
    )
    const after = await cli('audit-events', '--dag-id', 'etl', '--json')
    expect((envelope(after) as Audit).result.counts).toMatchObject({orphan_not_success: 0})
  })
})
