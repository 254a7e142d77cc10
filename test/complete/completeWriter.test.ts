import os from 'node:os'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {countRows, eventsOf, scenario, tiById, writeFootprint} from '../support/scenario.js'

/**
 * Airflow's own success scenarios (the rows its success path writes),
 * through the real protocol on PostgreSQL. Each test builds its world: a producer DAG `etl` with
 * one run whose task `produce` declares outlets `etl.produce.out_N` (see test/support/scenario.ts).
 */
describe('complete on Airflow 3.0', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.0')
  })
  afterAll(async () => db?.drop())

  it('running → completed: one event per active outlet, state, duration, cleared next_*, one log row', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, owner: 'analytics'}).build()
    const before = world.ti('etl')
    await db
      .knex('task_instance')
      .where({id: before.id})
      .update({next_method: 'resume', next_kwargs: JSON.stringify({a: 1})})
    const result = await completeOne(db.knex, before.id, {defaultExtra: '{"reason":"INC-1"}'})
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.events).toBe(2)

    const after = await tiById(db.knex, before.id)
    expect(after.state).toBe('success')
    expect(after.next_method).toBeNull()
    expect(after.next_kwargs).toBeNull()
    expect(after.end_date!.getTime()).toBeGreaterThan(before.start_date!.getTime())
    expect(after.duration).toBeCloseTo((after.end_date!.getTime() - before.start_date!.getTime()) / 1000, 2)

    const events = await eventsOf(db.knex, before)
    expect(events.map((e) => e.asset_name)).toEqual(['etl.produce.out_1', 'etl.produce.out_2'])
    for (const event of events) {
      expect(event).toMatchObject({source_map_index: -1, extra: {reason: 'INC-1'}})
      expect(Math.abs((event.timestamp as Date).getTime() - Date.now())).toBeLessThan(60_000)
    }

    const logs = await db.knex('log').where({dag_id: 'etl', task_id: 'produce'})
    expect(logs).toHaveLength(1)
    expect(logs[0]).toMatchObject({
      event: 'success',
      run_id: before.run_id,
      map_index: -1,
      try_number: 1,
      // Who acted (the OS user here), not the DAG's owners ('analytics').
      owner: os.userInfo().username,
      logical_date: world.run('etl').logical_date,
    })
    const extra = JSON.parse(logs[0].extra as string)
    expect(extra).toMatchObject({
      host_name: expect.any(String),
      airlock: {command: 'complete', previous_state: 'running', events: 2, os_user: expect.any(String)},
    })
    // Written in the statement that inserts the events: it names exactly those rows, in their
    // order, and reads as JSON.stringify writes the extra (compact, keys in airlock's order) up to
    // the before-image, which PostgreSQL wrote under the row lock.
    expect(extra.airlock.event_ids).toEqual(events.map((e) => e.id))
    const text = logs[0].extra as string
    const upToBefore = (json: string) => json.slice(0, json.indexOf('"before":'))
    expect(upToBefore(text)).toBe(upToBefore(JSON.stringify(extra)))
    expect(extra.airlock.before).toMatchObject({version: 1, task_instance: {id: before.id, state: 'running'}})
    expect(Object.keys(extra.airlock)).toEqual([
      'version',
      'command',
      'os_user',
      'previous_state',
      'events',
      'event_ids',
      'before',
    ])
  })

  it('already success → already_success, nothing written, end_date unchanged', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'success'}).build()
    const done = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    const result = await completeOne(db.knex, done.id)
    expect(result.result).toEqual({outcome: 'already_success'})
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    expect((await tiById(db.knex, done.id)).end_date).toEqual(done.end_date)
  })

  it.each(['up_for_retry', 'failed', 'queued', 'deferred'] as const)(
    '%s → conflict with previous_state, nothing written',
    async (state) => {
      const world = await scenario(db.knex).producer('etl', {outlets: 2, state}).build()
      const footprint = await writeFootprint(db.knex)
      const result = await completeOne(db.knex, world.ti('etl').id)
      expect(result.result).toEqual({outcome: 'conflict', previousState: state})
      expect(await writeFootprint(db.knex)).toEqual(footprint)
    },
  )

  it('--from-state failed lets a failed task instance be completed', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'failed'}).build()
    const result = await completeOne(db.knex, world.ti('etl').id, {fromStates: ['running', 'failed']})
    expect(result.result).toEqual({outcome: 'completed'})
    const log = await db.knex('log').where({dag_id: 'etl', task_id: 'produce'}).first()
    expect(JSON.parse(log.extra).airlock.previous_state).toBe('failed')
  })

  it('unknown id and unknown key → not_found, nothing written', async () => {
    await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const footprint = await writeFootprint(db.knex)
    // By id: says what can be followed and names the key form; by key: a bare not_found.
    expect((await completeOne(db.knex, '00000000-0000-0000-0000-000000000000')).result).toEqual({
      outcome: 'not_found',
      detail: expect.stringContaining('--ti-id dag_id/run_id/task_id[map_index]'),
    })
    expect(
      (await completeOne(db.knex, {key: {dagId: 'etl', runId: 'nope', taskId: 'produce', mapIndex: -1}})).result,
    ).toEqual({outcome: 'not_found'})
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('skips an inactive outlet asset with a warning', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1, inactive: 1}).build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id)
    expect(result.events).toBe(1)
    expect((await eventsOf(db.knex, target)).map((e) => e.asset_name)).toEqual(['etl.produce.out_1'])
    expect(result.warnings.join()).toContain('etl.produce.out_2')
  })

  it('every outlet inactive: completed with no event, and the audit row written with an empty event_ids', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 0, inactive: 2}).build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.events).toBe(0)
    expect(await eventsOf(db.knex, target)).toEqual([])
    const logs = await db.knex('log').where({dag_id: 'etl', task_id: 'produce', event: 'success'})
    expect(logs).toHaveLength(1)
    expect(logs[0].extra).toContain('"events":0,"event_ids":[],"before":')
    expect(JSON.parse(logs[0].extra as string).airlock.event_ids).toEqual([])
  })

  it('--actor names the operator as the owner of the audit row', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1, owner: 'analytics'}).build()
    await completeOne(db.knex, world.ti('etl').id, {actor: 'oncall-alice'})
    const logs = await db.knex('log').where({dag_id: 'etl', event: 'success'})
    expect(logs.map((l: {owner: string}) => l.owner)).toEqual(['oncall-alice'])
  })

  it('--strict-outlets refuses a task instance with an inactive outlet asset, as Airflow would fail it: nothing written', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1, inactive: 1}).build()
    const target = world.ti('etl')
    const before = await writeFootprint(db.knex)
    const result = await completeOne(db.knex, target.id, {strictOutlets: true})
    expect(result.result).toEqual({
      outcome: 'inactive_outlet',
      detail: expect.stringContaining('etl.produce.out_2') as string,
    })
    expect(await writeFootprint(db.knex)).toEqual(before)
    expect((await tiById(db.knex, target.id)).state).toBe('running')
  })

  it('--strict-outlets completes a task instance whose outlets are all active', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const result = await completeOne(db.knex, world.ti('etl').id, {strictOutlets: true})
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.events).toBe(2)
  })

  it('3.0: a paused or stale DAG scheduled by name or uri is queued, as register_asset_change selects them unfiltered; by id it is not', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1})
      .consumer('paused_by_id', {on: ['etl'], paused: true})
      .consumer('paused_by_name', {on: ['etl'], by: 'name', paused: true})
      .consumer('paused_by_uri', {on: ['etl'], by: 'uri', paused: true})
      .build()
    const result = await completeOne(db.knex, world.ti('etl').id)
    const queue = await db.knex('asset_dag_run_queue').orderBy('target_dag_id')
    expect(queue.map((q: {target_dag_id: string}) => q.target_dag_id)).toEqual(['paused_by_name', 'paused_by_uri'])
    expect(result.queued).toBe(2)
  })

  it('queues every unpaused consumer (id, name, uri references) once, never the paused one', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1})
      .consumer('by_id', {on: ['etl']})
      .consumer('by_name', {on: ['etl'], by: 'name'})
      .consumer('by_uri', {on: ['etl'], by: 'uri'})
      .consumer('by_all_three', {on: ['etl'], by: ['id', 'name', 'uri']})
      .consumer('paused', {on: ['etl'], paused: true})
      .build()
    const result = await completeOne(db.knex, world.ti('etl').id)
    const queue = await db.knex('asset_dag_run_queue').orderBy('target_dag_id')
    expect(queue.map((q) => q.target_dag_id)).toEqual(['by_all_three', 'by_id', 'by_name', 'by_uri'])
    expect(result.queued).toBe(4)
  })

  it('an asset without consumers gets its event and no queue row', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const result = await completeOne(db.knex, world.ti('etl').id)
    expect(result.events).toBe(2)
    expect(result.queued).toBe(0)
    expect(await db.knex('asset_dag_run_queue')).toEqual([])
  })

  it('a queued (asset, DAG) keeps its first created_at, as Airflow 3.0 does (ON CONFLICT DO NOTHING)', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1})
      .consumer('report', {on: ['etl']})
      .build()
    const asset = world.asset('etl.produce.out_1')
    const old = new Date('2020-01-01T00:00:00Z')
    await db.knex('asset_dag_run_queue').insert({asset_id: asset.id, target_dag_id: 'report', created_at: old})
    const result = await completeOne(db.knex, world.ti('etl').id)
    expect(result.queued).toBe(0)
    const rows = await db.knex('asset_dag_run_queue').where({asset_id: asset.id, target_dag_id: 'report'})
    expect(rows.map((row: {created_at: Date}) => row.created_at.getTime())).toEqual([old.getTime()])
  })

  it('an event through a declared alias: a separate event, the missing asset created (asset row only, as Airflow), link rows, alias consumers queued', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, aliases: ['lake.daily_alias']})
      .consumer('by_alias', {alias: 'lake.daily_alias'})
      .build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id, {
      outletEvents: [
        {
          asset: {name: 'dynamic_2026_12_01', uri: 's3://lake/dynamic/2026-12-01'},
          alias: 'lake.daily_alias',
          extra: {rows: 7},
        },
        {asset: 'etl.produce.out_1', extra: {rows: 3}},
      ],
    })
    expect(result.result).toEqual({outcome: 'completed'})
    const created = await db.knex('asset').where({uri: 's3://lake/dynamic/2026-12-01'}).first()
    expect(created).toMatchObject({name: 'dynamic_2026_12_01', group: '', extra: {}})
    expect(await db.knex('asset_active').where({uri: created.uri})).toEqual([])
    const alias = await db.knex('asset_alias').where({name: 'lake.daily_alias'}).first()
    expect(await db.knex('asset_alias_asset').where({alias_id: alias.id, asset_id: created.id})).toHaveLength(1)

    const events = await eventsOf(db.knex, target)
    expect(events.map((e) => [e.asset_name, e.extra])).toEqual([
      ['etl.produce.out_1', {rows: 3}],
      ['etl.produce.out_2', {}],
      ['dynamic_2026_12_01', {rows: 7}],
    ])
    const aliasEvent = events[2]!
    expect(await db.knex('asset_alias_asset_event').where({alias_id: alias.id})).toEqual([
      {alias_id: alias.id, event_id: aliasEvent.id},
    ])
    expect(await db.knex('asset_dag_run_queue').where({asset_id: created.id})).toEqual([
      expect.objectContaining({target_dag_id: 'by_alias'}),
    ])
  })

  it('an alias emission of an asset that is also a direct outlet is its own event; two aliases emitting the same (asset, extra) share one event linked to both', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, aliases: ['a1', 'a2']})
      .consumer('by_a1', {alias: 'a1'})
      .consumer('by_a2', {alias: 'a2'})
      .build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id, {
      outletEvents: [
        {asset: 'etl.produce.out_1', alias: 'a1', extra: {n: 1, m: 2}},
        {asset: 'etl.produce.out_1', alias: 'a2', extra: {m: 2, n: 1}},
        {asset: 'etl.produce.out_1', alias: 'a2', extra: {n: 9}},
      ],
    })
    expect(result.result).toEqual({outcome: 'completed'})
    const events = await eventsOf(db.knex, target)
    expect(events.map((e) => e.extra)).toEqual([{}, {m: 2, n: 1}, {n: 9}])
    const links = await db
      .knex('asset_alias_asset_event as l')
      .join('asset_alias as al', 'al.id', 'l.alias_id')
      .orderBy(['l.event_id', 'al.name'])
      .select('l.event_id', 'al.name')
    expect(links).toEqual([
      {event_id: events[1]!.id, name: 'a1'},
      {event_id: events[1]!.id, name: 'a2'},
      {event_id: events[2]!.id, name: 'a2'},
    ])
  })

  it('refuses an alias the task does not declare, and a target named by a string that matches no asset: failed, nothing written', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, aliases: ['declared']})
      .consumer('by_other', {alias: 'other'})
      .consumer('by_declared', {alias: 'declared'})
      .build()
    const target = world.ti('etl')
    const before = await writeFootprint(db.knex)
    const undeclared = await completeOne(db.knex, target.id, {
      outletEvents: [{asset: 'etl.produce.out_1', alias: 'other'}],
    })
    expect(undeclared.result).toMatchObject({
      outcome: 'failed',
      message: expect.stringContaining('does not declare') as string,
    })
    const guessed = await completeOne(db.knex, target.id, {
      outletEvents: [{asset: 's3://never/seen', alias: 'declared'}],
    })
    expect(guessed.result).toMatchObject({
      outcome: 'failed',
      message: expect.stringContaining('matches no asset') as string,
    })
    expect(await writeFootprint(db.knex)).toEqual(before)
    expect(await db.knex('asset').where({uri: 's3://never/seen'})).toEqual([])
  })

  it('--no-events: state and log row only', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2})
      .consumer('report', {on: ['etl']})
      .build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id, {emitEvents: false})
    expect(result).toMatchObject({result: {outcome: 'completed'}, events: 0, queued: 0})
    expect(await eventsOf(db.knex, target)).toEqual([])
    expect((await tiById(db.knex, target.id)).state).toBe('success')
    expect(await countRows(db.knex, 'log')).toBe(1)
  })

  it('a dry run takes the same path and rolls back: outcome completed, nothing written', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const footprint = await writeFootprint(db.knex)
    const result = await completeOne(db.knex, world.ti('etl').id, {dryRun: true})
    expect(result).toMatchObject({result: {outcome: 'completed'}, events: 2, dryRun: true})
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    expect(await db.knex('asset_event').max({id: 'id'}).first()).toEqual({id: null})
  })

  it('a task instance that never started gets start_date = end_date and duration 0, as Airflow does', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'queued'}).build()
    const target = world.ti('etl')
    await db.knex('task_instance').where({id: target.id}).update({start_date: null})
    const result = await completeOne(db.knex, target.id, {fromStates: ['queued']})
    expect(result.result).toEqual({outcome: 'completed'})
    const after = await tiById(db.knex, target.id)
    expect(after.start_date).toEqual(after.end_date)
    expect(after.duration).toBe(0)
  })

  it('an explicit --end-date is recorded and the duration follows it', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    const end = new Date(target.start_date!.getTime() + 90_000)
    await completeOne(db.knex, target.id, {endDate: end})
    const after = await tiById(db.knex, target.id)
    expect(after.end_date).toEqual(end)
    expect(after.duration).toBeCloseTo(90, 2)
  })
})
