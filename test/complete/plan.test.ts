import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {createReadOnlyRole, type ReadOnlyRole} from '../support/roles.js'
import {eventsOf, logWorkerSuccess, scenario, writeFootprint} from '../support/scenario.js'

/**
 * --plan on real PostgreSQL, as a role that can only read: the change review a second person
 * signs off before the write. The plan must predict what the dry run (as a writer) reports,
 * item for item and consumer for consumer, and write and lock nothing.
 */
let db: TestDatabase
let role: ReadOnlyRole
let reader: string
beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
  role = await createReadOnlyRole(db, 'airlock_planner')
  reader = role.url
})
afterAll(async () => {
  await role?.drop()
  await db?.drop()
})

interface Report {
  status: number
  result: {
    plan?: string
    items: Array<{ti_id: string; outcome: string; events: number; downstream?: Array<{dag_id: string; ready: boolean}>}>
    downstream?: Array<{dag_id: string; ready: boolean; waiting_for: string[]}>
    summary: Record<string, number | boolean>
  }
}

const shape = (report: Report) => ({
  items: report.result.items
    .map((i) => ({ti_id: i.ti_id, outcome: i.outcome, events: i.events}))
    .sort((a, b) => a.ti_id.localeCompare(b.ti_id)),
  downstream: report.result.downstream?.map((d) => ({dag_id: d.dag_id, ready: d.ready, waiting_for: d.waiting_for})),
})

describe('--plan: a read-only plan', () => {
  it('complete --plan as a read-only role predicts the dry run item for item and consumer for consumer, writing nothing', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 1, state: {task_3: 'failed'}})
      .consumer('report', {on: ['etl.task_1', 'etl.task_2']})
      .consumer('audit', {on: ['etl.task_1', 'etl.task_3']})
      .build()
    const footprint = await writeFootprint(db.knex)
    // The writer's dry run needs write privileges; the reader cannot even start one.
    const refused = await runCli(['complete', '--database-url', reader, '--dag-id', 'etl', '--dry-run', '--json'])
    expect(refused.code).toBe(2)

    const planned = await runCli(['complete', '--database-url', reader, '--dag-id', 'etl', '--plan', '--json'])
    // task_3 failed: not selected (running is the default --from-state), so no conflict.
    expect(planned.code).toBe(0)
    const plan = envelope(planned) as unknown as Report
    expect(plan.result.plan).toContain('writes nothing')
    const dry = envelope(
      await runCli(['complete', '--database-url', db.url, '--dag-id', 'etl', '--dry-run', '--json']),
    ) as unknown as Report
    expect(shape(plan)).toEqual(shape(dry))
    expect(
      shape(plan)
        .items.map((i) => i.outcome)
        .sort(),
    ).toEqual(['would_complete', 'would_complete'])
    expect(plan.result.summary).toMatchObject({not_selected: 1})
    // Both task instances together satisfy report; audit still waits for task_3's asset.
    expect(plan.result.downstream).toEqual(
      expect.arrayContaining([
        expect.objectContaining({dag_id: 'report', ready: true}),
        expect.objectContaining({dag_id: 'audit', ready: false, waiting_for: ['etl.task_3.out_1']}),
      ]),
    )
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    // For people: labelled as a plan, never as a write or a rollback.
    const human = await runCli(['complete', '--database-url', reader, '--dag-id', 'etl', '--plan'])
    expect(human.stdout).toContain('PLAN (read-only: nothing written, no row locked)')
    expect(human.stdout).toContain('report: would run (2 of 2 assets)')
    expect(human.stdout).not.toContain('DRY RUN')
  })

  it('replay-events --plan as a read-only role finds the lost events the dry run would replay, and leaves marked ones alone', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: 2, outlets: 1, state: 'success', emitted: true})
      .consumer('report', {on: ['etl']})
      .build()
    const lost = world.ti('etl', 'task_1')
    await logWorkerSuccess(db.knex, lost.id)
    for (const ti of [lost, world.ti('etl', 'task_2')])
      await db
        .knex('asset_event')
        .whereIn(
          'id',
          (await eventsOf(db.knex, ti)).map((e) => e.id),
        )
        .delete()
    const footprint = await writeFootprint(db.knex)
    const plan = envelope(
      await runCli(['replay-events', '--database-url', reader, '--dag-id', 'etl', '--plan', '--json']),
    ) as unknown as Report
    const dry = envelope(
      await runCli(['replay-events', '--database-url', db.url, '--dag-id', 'etl', '--dry-run', '--json']),
    ) as unknown as Report
    expect(shape(plan)).toEqual(shape(dry))
    const outcomes = new Map(plan.result.items.map((i) => [i.ti_id, i.outcome]))
    expect(outcomes.get(lost.id)).toBe('would_replay')
    expect(outcomes.get(world.ti('etl', 'task_2').id)).toBe('unknown')
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    // What a plan cannot be: a checkpoint, an event re-emission.
    expect((await runCli(['replay-events', '--database-url', reader, '--event-id', '1', '--plan'])).code).toBe(2)
  })
})
