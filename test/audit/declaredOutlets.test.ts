import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {Finding} from '../../src/audit/auditEvents.js'
import {prepareDuplicateFix} from '../../src/audit/prepareDuplicateFix.js'
import type {EventAuditReport} from '../../src/cli/renderEventAudit.js'
import {envelope, runCli} from '../support/cli.js'
import {airflowOf, completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, scenario} from '../support/scenario.js'

/**
 * Airflow's `register_asset_changes_in_db` writes one event per declared asset, then one per
 * `Asset.ref` by name and one per ref by uri resolving to it, in loops of their own (the 3.0-,
 * 3.1- and 3.2-era copies read; per partition key from 3.3), and airlock's complete does the same
 * (test/complete/outlets.test.ts). A group of identical events of one try is therefore allowed as
 * many as the try's declared outlets call for; only the rest are duplicates, and where the
 * serialized DAG cannot tell, none is removable.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
})
afterAll(async () => {
  await db?.drop()
})
const cli = (command: string, ...args: string[]) => runCli([command, '--database-url', db.url, ...args])
type Audit = {result: EventAuditReport}
const audit = async (dagId: string, ...args: string[]) => {
  const run = await cli('audit-events', '--dag-id', dagId, '--json', ...args)
  return {code: run.code, result: (envelope(run) as Audit).result}
}
const findings = (result: EventAuditReport, cls: string): Finding[] => result.findings.filter((f) => f.class === cls)

/** The task instance's event, copied `times` more times 1 ms apart: what a worker wrote per declaration. */
async function copyEvent(dagId: string, times: number): Promise<void> {
  for (let k = 1; k <= times; k++)
    await db.knex.raw(
      `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
       select asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp" + make_interval(secs => ? / 1000.0)
         from asset_event where source_dag_id = ? order by id limit 1`,
      [k, dagId],
    )
}

describe('an asset declared directly and by Asset.ref gets one event per declaration, as Airflow writes them', () => {
  it("complete's two events are not duplicates", async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, refs: [{name: 'etl.produce.out_1'}]})
      .build()
    expect((await completeOne(db.knex, world.ti('etl').id)).events).toBe(2)
    const {code, result} = await audit('etl')
    expect(result.counts.duplicate).toBe(0)
    expect(result.counts.duplicate_unknown).toBe(0)
    expect(code).toBe(0)
  })

  it("a worker's two events: neither is a duplicate, and --fix removes nothing", async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex)
      .producer('etl2', {outlets: 1, refs: [{name: 'etl2.produce.out_1'}], state: 'success', emitted: true})
      .build()
    const target = world.ti('etl2')
    // emitted: one event per active outlet; the worker wrote a second one for the ref, same content.
    await copyEvent('etl2', 1)
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
    expect((await audit('etl2')).result.counts.duplicate).toBe(0)
    const fix = await audit('etl2', '--fix', '--no-dry-run', '--yes')
    expect(fix.code).toBe(0)
    expect(fix.result.fix?.removed ?? 0).toBe(0)
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })

  it('an asset declared directly, by name and by uri: three are allowed, the fourth is the duplicate --fix removes', async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex)
      .producer('etl3', {
        outlets: 1,
        refs: [{name: 'etl3.produce.out_1'}, {uri: 's3://lake/etl3/produce/out_1'}],
        state: 'success',
        emitted: true,
      })
      .build()
    const target = world.ti('etl3')
    await copyEvent('etl3', 3)
    const [first, , , fourth] = (await eventsOf(db.knex, target)).map((e) => e.id)
    const {result} = await audit('etl3')
    expect(result.counts.duplicate).toBe(1)
    expect(findings(result, 'duplicate').map((f) => [f.event_id, f.kept_id])).toEqual([[fourth, first]])
    expect(findings(result, 'duplicate')[0]!.evidence).toContain('call for 3 events')
    const fix = await audit('etl3', '--fix', '--no-dry-run', '--yes')
    expect(fix.result.fix?.removed).toBe(1)
    expect((await eventsOf(db.knex, target)).map((e) => e.id)).not.toContain(fourth)
    expect(await eventsOf(db.knex, target)).toHaveLength(3)
  })

  it('no serialized DAG for the try: the database cannot tell, duplicate_unknown, and --fix leaves it', async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex)
      .producer('etl4', {outlets: 1, state: 'success', emitted: true, serialized: 'none'})
      .build()
    const target = world.ti('etl4')
    await copyEvent('etl4', 1)
    const {code, result} = await audit('etl4')
    expect(result.counts.duplicate).toBe(0)
    expect(result.counts.duplicate_unknown).toBe(1)
    expect(findings(result, 'duplicate_unknown')[0]!.evidence).toContain('no serialized DAG')
    // Not in the default --fail-on: a finding to look at, not a failure.
    expect(code).toBe(0)
    const fix = await audit('etl4', '--fix', '--no-dry-run', '--yes')
    expect(fix.result.fix?.groups ?? []).toEqual([])
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })

  it('a serialized DAG that cannot be read (not zlib): duplicate_unknown saying why, not a failure of the audit', async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex).producer('etl6', {outlets: 1, state: 'success', emitted: true}).build()
    await db.knex.raw(
      `update serialized_dag set data = null, data_compressed = '\\xdeadbeef'::bytea
        where dag_version_id = (select dag_version_id from task_instance where id = ?)`,
      [world.ti('etl6').id],
    )
    await copyEvent('etl6', 1)
    const {code, result} = await audit('etl6')
    expect(code).toBe(0)
    expect(result.counts.duplicate).toBe(0)
    expect(result.counts.duplicate_unknown).toBe(1)
    expect(findings(result, 'duplicate_unknown')[0]!.evidence).toContain('could not be read')
    const fix = await audit('etl6', '--fix', '--no-dry-run', '--yes')
    expect(fix.code).toBe(0)
    expect(await eventsOf(db.knex, world.ti('etl6'))).toHaveLength(2)
  })

  it('the serialized DAG declares the asset once: the second event is still a duplicate', async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex).producer('etl5', {outlets: 1, state: 'success', emitted: true}).build()
    await copyEvent('etl5', 1)
    const {code, result} = await audit('etl5')
    expect(result.counts.duplicate).toBe(1)
    expect(findings(result, 'duplicate')[0]!.evidence).toContain('call for 1 event ')
    expect(code).toBe(6)
    expect(await eventsOf(db.knex, world.ti('etl5'))).toHaveLength(2)
  })

  it("--fix's recheck under its locks: a group naming the ref's event as an extra removes only the excess", async () => {
    await db.knex.raw('truncate asset_event, log, asset_dag_run_queue cascade')
    const world = await scenario(db.knex)
      .producer('etl6', {outlets: 1, refs: [{name: 'etl6.produce.out_1'}], state: 'success', emitted: true})
      .build()
    const target = world.ti('etl6')
    await copyEvent('etl6', 2)
    const [kept, ref, extra] = (await eventsOf(db.knex, target)).map((e) => e.id)
    // A group as an audit blind to the ref would have read it: both later events extras.
    const fix = prepareDuplicateFix(await airflowOf(db.knex), [{kept: kept!, extras: [ref!, extra!], consumed: 0}], {
      dryRun: false,
      lockTimeoutMs: 5000,
      statementTimeoutMs: 30_000,
      airlockVersion: 'test',
    })
    const groups: Array<{removed: number[]; changed: number[]; outcome: string}> = []
    await fix.run({shouldStop: () => false, onItem: (group) => groups.push(group)})
    // Three identical events, two declarations: one is beyond them (the last), the other stays.
    expect(groups).toMatchObject([{outcome: 'removed', removed: [extra], changed: [ref]}])
    expect((await eventsOf(db.knex, target)).map((e) => e.id)).toEqual([kept, ref])
  })
})
