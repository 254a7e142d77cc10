import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, scenario} from '../support/scenario.js'

/**
 * Review: an audit row airlock wrote keeps "naming" events after `airlock undo` took them back, and
 * tryEvidenceRows (src/store/postgres/fragments.ts) reads it as `airlock_events`: "written, then
 * lost". The operator's deliberate undo turns into a default replay and a `missing_events` finding.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
})
afterAll(async () => {
  await db?.drop()
})

const cli = (command: string, ...args: string[]) => runCli([command, '--database-url', db.url, ...args])
type Items = {result: {items: Array<{outcome: string; log_id?: number; events?: number; detail?: string}>}}
type Audit = {result: {counts: Record<string, number>}}

describe('an undone airlock write is not evidence that events were lost', () => {
  it('replay --include-unknown, then undo: a plain replay must not write them again, and the audit must not call them lost', async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    // Success with no row saying how (a bulk mark): unknown.
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'success'}).consumer('report', {on: ['etl']}).build()
    const target = world.ti('etl')
    const forced = envelope(await cli('replay-events', '--ti-id', target.id, '--include-unknown', '--yes', '--json')) as Items
    expect(forced.result.items[0]).toMatchObject({outcome: 'replayed', events: 2})
    // The operator takes the replay back: those events should not have been written.
    const undone = await cli('undo', '--log-id', String(forced.result.items[0]!.log_id), '--yes', '--json')
    expect(undone.code, undone.stderr).toBe(0)
    expect(await eventsOf(db.knex, target)).toHaveLength(0)

    const audit = envelope(await cli('audit-events', '--dag-id', 'etl', '--json')) as Audit
    // Nothing says they were lost: the try is as unknown as before the replay.
    expect.soft(audit.result.counts.missing_events).toBe(0)
    const again = envelope(await cli('replay-events', '--ti-id', target.id, '--yes', '--json')) as Items
    expect.soft(again.result.items[0]!.outcome).not.toBe('replayed')
    expect(await eventsOf(db.knex, target)).toHaveLength(0)
  })

  it('complete, undo, then a mark-success in the UI: not_emitted, not lost', async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex).producer('etl2', {outlets: 1}).build()
    const target = world.ti('etl2')
    const done = envelope(await cli('complete', '--ti-id', target.id, '--yes', '--json')) as Items
    expect(done.result.items[0]!.outcome).toBe('completed')
    const undone = await cli('undo', '--log-id', String(done.result.items[0]!.log_id), '--yes', '--json')
    expect(undone.code, undone.stderr).toBe(0)
    // Then someone marks the same try success in the UI (PATCH …/taskInstances/produce): no events, on purpose.
    await db.knex('log').insert({
      dttm: db.knex.raw('clock_timestamp()'),
      dag_id: 'etl2',
      task_id: 'produce',
      run_id: target.run_id,
      event: 'patch_task_instance',
      owner: 'admin',
      extra: JSON.stringify({new_state: 'success', note: null, method: 'PATCH'}),
    })
    await db.knex.raw(
      `update task_instance set state = 'success', end_date = clock_timestamp(), updated_at = clock_timestamp() where id = ?`,
      [target.id],
    )
    const replay = envelope(await cli('replay-events', '--ti-id', target.id, '--yes', '--json')) as Items
    expect(replay.result.items[0]!.outcome).toBe('not_emitted')
  })
})
