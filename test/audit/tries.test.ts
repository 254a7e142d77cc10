import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {AirflowSchema} from '../../src/airflow/schema.js'
import type {EventAuditReport} from '../../src/cli/renderEventAudit.js'
import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {envelope, runCli} from '../support/cli.js'
import {schemaOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {failForRetryAsAirflowDoes, rerunAsAirflowDoes, scenario} from '../support/scenario.js'
import {airflowSucceeds, taskOutletsOf} from '../conformance/airflowSuccess.js'

/**
 * Which try an event belongs to, on every release line: tries built as Airflow builds them (the
 * finished try archived in task_instance_history, a new id, try_number and start_date advanced),
 * each try finished either by Airflow's own success path (the conformance transcription) or by
 * airlock. Each scenario is one an earlier attribution (one timestamp rule: "stamped after try N's
 * last write, so try N+1's") got wrong: it deleted a rerun's own event, hid a lost one, or listed
 * a named event as a duplicate forever.
 */
describe.each(fixtureVersions)('which try an event belongs to, on %s', (version) => {
  let db: TestDatabase
  let schema: AirflowSchema
  let dag = 0
  beforeAll(async () => {
    db = await createTestDatabase(version, 2)
    schema = await schemaOf(db.knex)
  })
  afterAll(async () => db?.drop())

  const cli = (...args: string[]) => runCli([...args, '--database-url', db.url])
  const audit = async (dagId: string, ...args: string[]) => {
    const result = await cli('audit-events', '--dag-id', dagId, '--json', ...args)
    return {code: result.code, report: (envelope(result) as {result: EventAuditReport}).result}
  }
  const eventIds = async (knex: Knex, dagId: string) =>
    (await knex('asset_event').where({source_dag_id: dagId}).orderBy('id').select('id')).map((row) => row.id as number)

  /** A fresh producer DAG with one running task instance and one outlet. */
  async function producer(): Promise<{dagId: string; tiId: string}> {
    const dagId = `etl_${++dag}`
    const world = await scenario(db.knex).producer(dagId, {outlets: 1}).build()
    return {dagId, tiId: world.ti(dagId).id}
  }

  async function airlockCompletes(tiId: string): Promise<void> {
    const result = await cli('complete', '--ti-id', tiId, '--yes', '--json')
    expect(result.code, result.stderr).toBe(0)
  }

  async function airflowCompletes(tiId: string): Promise<void> {
    expect(await airflowSucceeds(db.knex, schema, tiId, await taskOutletsOf(db.knex, tiId), [])).toBe('success')
  }

  /** A copy of an event nobody's audit row names, stamped now: a late duplicate of a retried request. */
  async function lateCopy(eventId: number): Promise<number> {
    const {rows} = await db.knex.raw<{rows: Array<{id: number}>}>(
      `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
       select asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, clock_timestamp()
         from asset_event where id = ? returning id`,
      [eventId],
    )
    return rows[0]!.id
  }

  async function reemit(eventId: number): Promise<number> {
    const result = await cli('replay-events', '--event-id', String(eventId), '--yes', '--json')
    expect(result.code, result.stderr).toBe(0)
    const [row] = await db.knex('asset_event').max('id as id')
    return row!.id as number
  }

  /**
   * Try 1 completed by airlock, its event copied after its last write (re-emitted by airlock, or a
   * late unnamed copy), then the task instance rerun as Airflow reruns it: try 2 running.
   */
  async function copiedThenRerun(copiedBy: 'replay-events --event-id' | 'a late unnamed copy') {
    const {dagId, tiId} = await producer()
    await airlockCompletes(tiId)
    const [original] = await eventIds(db.knex, dagId)
    const copy = copiedBy === 'a late unnamed copy' ? await lateCopy(original!) : await reemit(original!)
    return {dagId, original: original!, copy, second: await rerunAsAirflowDoes(db.knex, tiId)}
  }

  const findingsOf = (report: EventAuditReport, cls: string) =>
    report.findings.filter((finding) => finding.class === cls)

  it.each(['replay-events --event-id', 'a late unnamed copy'] as const)(
    "--fix never deletes a rerun's own event when try 1's event was copied after its last write (%s)",
    async (copiedBy) => {
      const {dagId, original, copy, second} = await copiedThenRerun(copiedBy)
      await airflowCompletes(second)
      const rerunEvent = (await eventIds(db.knex, dagId)).at(-1)!
      expect(rerunEvent).toBeGreaterThan(copy)

      const {code, report} = await audit(dagId)
      expect(findingsOf(report, 'duplicate')).toEqual([])
      expect(findingsOf(report, 'missing_events')).toEqual([])
      expect(findingsOf(report, 'missing_unknown')).toEqual([])
      if (copiedBy === 'replay-events --event-id') {
        // The copy's audit row names try 1: an earlier try's event, legitimate.
        expect(code).toBe(0)
        expect(report.counts).toMatchObject({superseded_by_rerun: 2, unattributed: 0, ok: 1})
      } else {
        // Stamped between try 1's last write and try 2's start, named by no row: nobody can tell.
        expect(report.counts).toMatchObject({superseded_by_rerun: 1, unattributed: 1, ok: 1})
        expect(findingsOf(report, 'unattributed').map((f) => f.event_id)).toEqual([copy])
        expect(findingsOf(report, 'unattributed')[0]!.evidence).toContain('cannot tell')
      }

      const fix = await cli('audit-events', '--dag-id', dagId, '--fix', '--no-dry-run', '--yes', '--json')
      expect(fix.code).toBeLessThan(6)
      expect(await eventIds(db.knex, dagId)).toEqual([original, copy, rerunEvent])
    },
  )

  it("a rerun's lost events are found: try 1's replayed event does not stand in for try 2's", async () => {
    const {dagId, tiId} = await producer()
    await airlockCompletes(tiId)
    await db.knex('asset_event').where({source_dag_id: dagId}).delete()
    const repair = await cli('replay-events', '--dag-id', dagId, '--yes', '--json')
    expect(repair.code, repair.stderr).toBe(0)
    const [repaired] = await eventIds(db.knex, dagId)
    expect(repaired).toBeDefined()

    const second = await rerunAsAirflowDoes(db.knex, tiId)
    await airlockCompletes(second)
    const [, lost] = await eventIds(db.knex, dagId)
    await db.knex('asset_event').where({id: lost}).delete()

    const {code, report} = await audit(dagId)
    expect(code).toBe(6)
    expect(findingsOf(report, 'missing_events').map((f) => [f.ti_id, f.suggestion])).toEqual([
      [second, `airlock replay-events --ti-id ${second}`],
    ])
    expect(report.counts).toMatchObject({superseded_by_rerun: 1, ok: 0})

    const dryRun = envelope(await cli('replay-events', '--dag-id', dagId, '--dry-run', '--json')) as {
      result: {items: Array<{ti_id: string; outcome: string}>}
    }
    expect(dryRun.result.items.map((item) => [item.ti_id, item.outcome])).toEqual([[second, 'would_replay']])
    const replay = await cli('replay-events', '--dag-id', dagId, '--yes', '--json')
    expect(replay.code, replay.stderr).toBe(0)
    expect(await eventIds(db.knex, dagId)).toHaveLength(2)
    const after = await audit(dagId)
    expect(after.code).toBe(0)
    expect(after.report.counts).toMatchObject({superseded_by_rerun: 1, ok: 1, missing_events: 0})
  })

  it.each(['replay-events --event-id', 'a late unnamed copy'] as const)(
    'a new try whose event airlock names is never a duplicate of a stray copy of the old one (%s)',
    async (copiedBy) => {
      const {dagId, copy, second} = await copiedThenRerun(copiedBy)
      await airlockCompletes(second)

      const {code, report} = await audit(dagId, '--fail-on', 'duplicate')
      expect(code).toBe(0)
      expect(report.counts.duplicate).toBe(0)
      expect(report.counts.ok).toBe(1)
      expect(report.counts[copiedBy === 'a late unnamed copy' ? 'unattributed' : 'superseded_by_rerun']).toBe(
        copiedBy === 'a late unnamed copy' ? 1 : 2,
      )
      expect(findingsOf(report, 'unattributed').map((f) => f.event_id)).toEqual(
        copiedBy === 'a late unnamed copy' ? [copy] : [],
      )
    },
  )

  it("an unnamed copy stamped inside the new try's span is that try's duplicate, and the event airlock names is the one kept", async () => {
    const {dagId, tiId} = await producer()
    await airlockCompletes(tiId)
    const second = await rerunAsAirflowDoes(db.knex, tiId)
    const [first] = await eventIds(db.knex, dagId)
    // After try 2 started, before airlock completes it: a copy of try 1's event nobody names.
    const stray = await lateCopy(first!)
    await airlockCompletes(second)
    const named = (await eventIds(db.knex, dagId)).at(-1)!

    const {report} = await audit(dagId)
    expect(findingsOf(report, 'duplicate').map((f) => [f.event_id, f.kept_id])).toEqual([[stray, named]])
    const fix = await audit(dagId, '--fix', '--no-dry-run', '--yes')
    // Exit 6: the duplicate was a finding of the audit that preceded the repair.
    expect(fix.code).toBe(6)
    expect(fix.report.fix).toMatchObject({removed: 1, refused_named: 0})
    expect(await eventIds(db.knex, dagId)).toEqual([first, named])
    expect((await audit(dagId)).code).toBe(0)
  })

  it("a try whose only event may be the previous try's is missing_unknown: the audit says so and a replay writes nothing unless asked", async () => {
    const {dagId, tiId} = await producer()
    await airflowCompletes(tiId)
    const [first] = await eventIds(db.knex, dagId)
    const copy = await lateCopy(first!)
    const second = await rerunAsAirflowDoes(db.knex, tiId)
    await airflowCompletes(second)
    const [, , lost] = await eventIds(db.knex, dagId)
    await db.knex('asset_event').where({id: lost}).delete()

    const {report} = await audit(dagId)
    expect(findingsOf(report, 'missing_events')).toEqual([])
    expect(findingsOf(report, 'missing_unknown').map((f) => f.ti_id)).toEqual([second])
    expect(findingsOf(report, 'missing_unknown')[0]!.evidence).toContain('the database cannot tell')
    expect(findingsOf(report, 'unattributed').map((f) => f.event_id)).toEqual([copy])

    const replay = await cli('replay-events', '--dag-id', dagId, '--yes', '--json')
    const out = envelope(replay) as {result: {items: Array<{ti_id: string; outcome: string}>}}
    expect(out.result.items.map((item) => [item.ti_id, item.outcome])).toEqual([[second, 'unknown']])
    expect(await eventIds(db.knex, dagId)).toEqual([first, copy])
    const asked = await cli('replay-events', '--dag-id', dagId, '--include-unknown', '--yes', '--json')
    expect(asked.code, asked.stderr).toBe(0)
    expect(await eventIds(db.knex, dagId)).toHaveLength(3)
    expect(findingsOf((await audit(dagId)).report, 'missing_unknown')).toEqual([])
  })

  it("one outlet's doubt never hides another's certain loss: the lost outlet is missing_events, and a plain replay writes it alone", async () => {
    const dagId = `etl_${++dag}`
    const world = await scenario(db.knex).producer(dagId, {outlets: 2}).build()
    const tiId = world.ti(dagId).id
    await airflowCompletes(tiId)
    const assetOf = async (id: number) =>
      (await db.knex('asset_event as e').join('asset as a', 'a.id', 'e.asset_id').where('e.id', id).first('a.name'))
        .name as string
    const [doubtfulFirst, lostFirst] = await eventIds(db.knex, dagId)
    const doubtful = await assetOf(doubtfulFirst!)
    const lost = await assetOf(lostFirst!)
    expect(doubtful).not.toBe(lost)
    // A late copy of try 1's event of one outlet, stamped before try 2 began: nobody can tell whose.
    const copy = await lateCopy(doubtfulFirst!)
    const second = await rerunAsAirflowDoes(db.knex, tiId)
    // airlock completes try 2: its audit row names both events, so losing them is certain.
    await airlockCompletes(second)
    await db.knex('asset_event').where({source_dag_id: dagId}).where('id', '>', copy).delete()

    const {code, report} = await audit(dagId)
    const of = (cls: string) => findingsOf(report, cls).map((f) => [f.ti_id, f.asset])
    expect(of('missing_events')).toEqual([[second, lost]])
    expect(of('missing_unknown')).toEqual([[second, doubtful]])
    expect(findingsOf(report, 'missing_unknown')[0]!.evidence).toContain('the database cannot tell')
    expect(of('unattributed')).toEqual([[null, doubtful]])
    expect(report.counts).toMatchObject({missing_events: 1, missing_unknown: 1})
    expect(code).toBe(6)
    expect((await audit(dagId, '--fail-on', 'missing_events')).code).toBe(6)

    // A plain replay writes the certain loss alone and names the doubtful outlet unknown.
    const replay = await cli('replay-events', '--dag-id', dagId, '--yes', '--json')
    expect(replay.code, replay.stderr).toBe(0)
    const out = envelope(replay) as {
      result: {items: Array<{ti_id: string; outcome: string; events: number; not_replayed?: unknown}>}
      warnings: string[]
    }
    expect(out.result.items.map((item) => [item.ti_id, item.outcome, item.events])).toEqual([[second, 'replayed', 1]])
    expect(out.result.items[0]!.not_replayed).toEqual([{asset: doubtful, outcome: 'unknown'}])
    expect(out.warnings.join('\n')).toContain(`not replayed, unknown: ${doubtful}`)
    const written = (await eventIds(db.knex, dagId)).filter((id) => id > copy)
    expect(await Promise.all(written.map(assetOf))).toEqual([lost])

    const after = await audit(dagId)
    expect(after.report.counts).toMatchObject({missing_events: 0, missing_unknown: 1})
    expect(after.code).toBe(0)
    const asked = await cli('replay-events', '--dag-id', dagId, '--include-unknown', '--yes', '--json')
    expect(asked.code, asked.stderr).toBe(0)
    const all = (await eventIds(db.knex, dagId)).filter((id) => id > copy)
    expect((await Promise.all(all.map(assetOf))).sort()).toEqual([doubtful, lost].sort())
    expect((await audit(dagId)).report.counts).toMatchObject({missing_events: 0, missing_unknown: 0})
  })

  it("a rerun not started yet: an unnamed copy after try 1's last write is nobody's, try 1's own event stays ok", async () => {
    const {dagId, tiId} = await producer()
    await airflowCompletes(tiId)
    const [first] = await eventIds(db.knex, dagId)
    const copy = await lateCopy(first!)
    await rerunAsAirflowDoes(db.knex, tiId, 'scheduled')

    const {report} = await audit(dagId)
    expect(report.counts).toMatchObject({ok: 1, unattributed: 1, duplicate: 0, orphan_not_success: 0})
    expect(findingsOf(report, 'unattributed').map((f) => f.event_id)).toEqual([copy])
  })

  it("a later try's event whose try was then marked failed stands behind no success: orphan_not_success, and try 1's event is ok", async () => {
    const {dagId, tiId} = await producer()
    await airflowCompletes(tiId)
    const second = await rerunAsAirflowDoes(db.knex, tiId)
    await airflowCompletes(second)
    await db.knex('task_instance').where({id: second}).update({state: 'failed'})
    const [first, later] = await eventIds(db.knex, dagId)

    const {report} = await audit(dagId)
    expect(report.counts).toMatchObject({ok: 1, orphan_not_success: 1, superseded_by_rerun: 0, duplicate: 0})
    const orphan = findingsOf(report, 'orphan_not_success')
    expect(orphan.map((f) => f.event_id)).toEqual([later])
    expect(orphan[0]!.evidence).toContain('belongs to try 2')
    expect(first).toBeDefined()
  })

  it("a copy of an event that is itself unattributed names no try: it never stands in for the last try's lost event", async () => {
    const {dagId, tiId} = await producer()
    await airflowCompletes(tiId)
    const [first] = await eventIds(db.knex, dagId)
    const stray = await lateCopy(first!)
    const second = await rerunAsAirflowDoes(db.knex, tiId)
    await airflowCompletes(second)
    const [, , lost] = await eventIds(db.knex, dagId)
    await db.knex('asset_event').where({id: lost}).delete()
    // Re-emitting the stray copy: its own try cannot be told, so neither can the new copy's.
    const copy = await reemit(stray)
    const row = await db.knex('log').where({event: 'airlock.replay-events', dag_id: dagId}).first()
    expect(row.try_number).toBeNull()
    expect(JSON.parse(row.extra).airlock).toMatchObject({event_ids: [copy], try_number: null})

    const {report} = await audit(dagId)
    expect(findingsOf(report, 'unattributed').map((f) => f.event_id)).toEqual([stray, copy])
    expect(findingsOf(report, 'unattributed')[1]!.evidence).toContain('without a try')
    expect(findingsOf(report, 'missing_unknown').map((f) => f.ti_id)).toEqual([second])
    expect(findingsOf(report, 'duplicate')).toEqual([])
  })

  it("a try archived for its retry and then marked success by airlock is that try's success: its events are ok, nothing missing", async () => {
    const {dagId, tiId} = await producer()
    const retrying = await failForRetryAsAirflowDoes(db.knex, tiId)
    const result = await cli('complete', '--ti-id', retrying, '--from-state', 'up_for_retry', '--yes', '--json')
    expect(result.code, result.stderr).toBe(0)

    const {code, report} = await audit(dagId)
    expect(code).toBe(0)
    expect(report.counts).toMatchObject({ok: 1, orphan_not_success: 0, missing_events: 0, missing_unknown: 0})
  })

  it("a try archived for its retry, marked success by airlock, then cleared and run again: record_ti keeps the failed archive, airlock's success row says the try succeeded, its event is ok", async () => {
    const {dagId, tiId} = await producer()
    const retrying = await failForRetryAsAirflowDoes(db.knex, tiId)
    const result = await cli('complete', '--ti-id', retrying, '--from-state', 'up_for_retry', '--yes', '--json')
    expect(result.code, result.stderr).toBe(0)
    // The clear finds try 1 archived already (as failed, for its retry) and archives nothing.
    const second = await rerunAsAirflowDoes(db.knex, retrying)
    expect(await db.knex('task_instance_history').where({dag_id: dagId}).pluck('state')).toEqual(['failed'])

    const {code, report} = await audit(dagId)
    expect(report.counts).toMatchObject({ok: 1, orphan_not_success: 0, superseded_by_rerun: 0})
    expect(code).toBe(0)
    expect(second).not.toBe(retrying)
  })

  it('a try airlock completed, then marked failed and cleared: the archive written after the completion says failed, its event orphan_not_success', async () => {
    const {dagId, tiId} = await producer()
    await airlockCompletes(tiId)
    await db.knex('task_instance').where({id: tiId}).update({state: 'failed'})
    await rerunAsAirflowDoes(db.knex, tiId)

    const {report} = await audit(dagId)
    expect(report.counts).toMatchObject({ok: 0, orphan_not_success: 1})
    expect(findingsOf(report, 'orphan_not_success')[0]!.evidence).toContain('no try')
  })

  it("a rerun whose earlier tries were pruned from task_instance_history: an event try 1's audit row names is still try 1's", async () => {
    const {dagId, tiId} = await producer()
    await airlockCompletes(tiId)
    const [first] = await eventIds(db.knex, dagId)
    const second = await rerunAsAirflowDoes(db.knex, tiId)
    await airlockCompletes(second)
    const [, own] = await eventIds(db.knex, dagId)
    // airflow db clean removes archived tries; the audit rows stay.
    await db.knex('task_instance_history').where({dag_id: dagId}).delete()
    // Try 2's own event is lost: try 1's event must not stand in for it.
    await db.knex('asset_event').where({id: own}).delete()

    const {report} = await audit(dagId)
    expect(report.counts).toMatchObject({superseded_by_rerun: 1, ok: 0})
    expect(findingsOf(report, 'missing_events').map((f) => f.ti_id)).toEqual([second])
    expect(first).toBeDefined()
  })
})
