import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {auditEvents, type AuditProgress, type Finding} from '../../src/audit/auditEvents.js'
import {airflowOf} from '../support/complete.js'
import type {EventAuditReport} from '../../src/cli/renderEventAudit.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {countRows, logWorkerSuccess, scenario, type World} from '../support/scenario.js'

/**
 * One database with every class present, written by plain SQL on top of a stated world, including
 * the legitimate look-alikes: a rerun after a clear, REST events without a source, and two alias
 * groups with different extras from one task instance.
 */
let db: TestDatabase
let world: World
const ids: Record<string, number> = {}

async function event(
  knex: Knex,
  name: string,
  asset: string,
  source: {dag: string; run: string; task: string} | null,
  extra: object,
  at: string,
): Promise<number> {
  const assetId = (await knex('asset').where({name: asset}).first('id')).id as number
  const [row] = await knex('asset_event')
    .insert({
      asset_id: assetId,
      extra: JSON.stringify(extra),
      source_dag_id: source?.dag ?? null,
      source_run_id: source?.run ?? null,
      source_task_id: source?.task ?? null,
      source_map_index: -1,
      timestamp: knex.raw(`now() + ?::interval`, [at]),
    })
    .returning('id')
  ids[name] = row.id
  return row.id
}

beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
  world = await scenario(db.knex)
    // etl_001: task_1 (whose out_2 is inactive) running, task_2 succeeded without emitting anything, task_3 up_for_retry.
    .producer('etl_001', {tasks: 3, outlets: 1, inactive: 1, state: {task_2: 'success', task_3: 'up_for_retry'}})
    .producer('etl_002', {tasks: 3, outlets: 2})
    .consumer('report_001', {alias: 'lake.daily_alias'})
    .build()
  const k = db.knex
  const src = (x: {dag_id: string; run_id: string; task_id: string}) => ({
    dag: x.dag_id,
    run: x.run_id,
    task: x.task_id,
  })
  // The worker logged task_2's success (Airflow 3.2+): its missing events were lost.
  await logWorkerSuccess(k, world.ti('etl_001', 'task_2').id)

  // ok: a completed task instance's own events.
  const okTi = world.ti('etl_002', 'task_1')
  await k('task_instance')
    .where({id: okTi.id})
    .update({state: 'success', start_date: k.raw(`now() - interval '1 hour'`), end_date: k.raw('now()')})
  await event(k, 'ok_1', 'etl_002.task_1.out_1', src(okTi), {}, '-30 minutes')
  await event(k, 'ok_2', 'etl_002.task_1.out_2', src(okTi), {}, '-30 minutes')

  // external: REST-created, no source.
  await event(k, 'external', 'etl_001.task_1.out_1', null, {via: 'rest'}, '-10 minutes')

  // orphan_missing_ti: no such task instance anywhere.
  await event(
    k,
    'orphan_missing',
    'etl_001.task_1.out_1',
    {dag: 'etl_001', run: 'manual__gone', task: 'task_1'},
    {},
    '-5 minutes',
  )

  // orphan_not_success: the TI exists (up_for_retry) and never succeeded.
  const failed = world.ti('etl_001', 'task_3')
  await event(k, 'orphan_not_success', 'etl_001.task_3.out_1', src(failed), {}, '-5 minutes')

  // superseded_by_rerun: try 1 succeeded (archived), cleared, try 2 succeeded later; both emitted.
  const rerun = world.ti('etl_002', 'task_2')
  await k('task_instance_history').insert({
    task_instance_id: k.raw('gen_random_uuid()'),
    dag_id: rerun.dag_id,
    run_id: rerun.run_id,
    task_id: rerun.task_id,
    map_index: -1,
    try_number: 1,
    start_date: k.raw(`now() - interval '3 hours'`),
    end_date: k.raw(`now() - interval '150 minutes'`),
    // Its success was written after its events (the API server registers them first).
    updated_at: k.raw(`now() - interval '149 minutes'`),
    state: 'success',
    pool: 'default_pool',
    pool_slots: 1,
  })
  await k('task_instance')
    .where({id: rerun.id})
    .update({state: 'success', try_number: 2, start_date: k.raw(`now() - interval '1 hour'`), end_date: k.raw('now()')})
  await event(k, 'superseded', 'etl_002.task_2.out_1', src(rerun), {}, '-150 minutes')
  await event(k, 'rerun_ok', 'etl_002.task_2.out_1', src(rerun), {}, '-30 minutes')

  // duplicate: the same event written twice by a retried request, one extra consumed by a run.
  const dup = world.ti('etl_002', 'task_3')
  await k('task_instance')
    .where({id: dup.id})
    .update({state: 'success', start_date: k.raw(`now() - interval '1 hour'`), end_date: k.raw('now()')})
  await event(k, 'dup_kept', 'etl_002.task_3.out_1', src(dup), {rows: 5}, '-30 minutes')
  await event(k, 'dup_extra', 'etl_002.task_3.out_1', src(dup), {rows: 5}, '-29 minutes')
  await event(k, 'dup_extra_consumed', 'etl_002.task_3.out_1', src(dup), {rows: 5}, '-28 minutes')
  await event(k, 'dup_other_asset', 'etl_002.task_3.out_2', src(dup), {}, '-30 minutes')
  const [consumer] = await k('dag_run')
    .insert({
      dag_id: 'report_001',
      run_id: 'asset_triggered__1',
      run_type: 'asset_triggered',
      run_after: k.raw('now()'),
      state: 'queued',
    })
    .returning('id')
  await k('dagrun_asset_event').insert({dag_run_id: consumer.id, event_id: ids.dup_extra_consumed})
  // The retried request went through an alias each time; the removed duplicate's alias link goes with it.
  const alias = await k('asset_alias').first('id')
  for (const name of ['dup_kept', 'dup_extra', 'dup_extra_consumed'])
    await k('asset_alias_asset_event').insert({alias_id: alias.id, event_id: ids[name]})

  // Two alias groups with different extras from one TI: legitimate, both ok.
  const aliasTi = world.ti('etl_001', 'task_1')
  await k('task_instance')
    .where({id: aliasTi.id})
    .update({state: 'success', start_date: k.raw(`now() - interval '1 hour'`), end_date: k.raw('now()')})
  await event(k, 'alias_a', 'etl_001.task_1.out_1', src(aliasTi), {partition: 'a'}, '-30 minutes')
  await event(k, 'alias_b', 'etl_001.task_1.out_1', src(aliasTi), {partition: 'b'}, '-30 minutes')

  // queue_orphan: a queue row whose DAG is gone (the FK bypassed, as a partial restore would).
  await k.transaction(async (trx) => {
    await trx.raw(`set local session_replication_role = replica`)
    await trx('asset_dag_run_queue').insert({
      asset_id: (await trx('asset').first('id')).id,
      target_dag_id: 'deleted_dag',
      created_at: new Date(),
    })
  })
})
afterAll(async () => db?.drop())

const audit = async (...args: string[]) => {
  const result = await runCli(['audit-events', '--database-url', db.url, '--json', ...args])
  return {code: result.code, out: envelope(result) as {status: number; result: EventAuditReport}}
}

const classOf = (findings: Finding[], name: string) =>
  findings.filter((f) => f.event_id === ids[name]).map((f) => f.class)

describe('airlock audit-events', () => {
  it('puts each event in exactly its class, with evidence, and counts the legitimate ones', async () => {
    const {code, out} = await audit()
    expect(code).toBe(6)
    const {counts, findings} = out.result
    expect(counts).toMatchObject({
      external: 1,
      orphan_missing_ti: 1,
      orphan_not_success: 1,
      superseded_by_rerun: 1,
      duplicate: 2,
      queue_orphan: 1,
    })
    expect(counts.ok).toBe(7)
    expect(classOf(findings, 'orphan_missing')).toEqual(['orphan_missing_ti'])
    expect(classOf(findings, 'orphan_not_success')).toEqual(['orphan_not_success'])
    expect(classOf(findings, 'dup_extra')).toEqual(['duplicate'])
    expect(classOf(findings, 'dup_extra_consumed')).toEqual(['duplicate'])
    for (const legit of [
      'ok_1',
      'ok_2',
      'external',
      'superseded',
      'rerun_ok',
      'dup_kept',
      'dup_other_asset',
      'alias_a',
      'alias_b',
    ])
      expect(classOf(findings, legit)).toEqual([])
    const duplicate = findings.find((f) => f.event_id === ids.dup_extra)!
    expect(duplicate).toMatchObject({
      kept_id: ids.dup_kept,
      consumed: false,
      evidence: expect.stringContaining(`event ${ids.dup_kept}`),
      // 3.2: --fix leaves a duplicate a partitioned consumer can still take; only its read can tell.
      suggestion:
        'airlock audit-events --fix removes it, unless a run can still take it (a consumer with a partitioned timetable)',
    })
    expect(findings.find((f) => f.event_id === ids.dup_extra_consumed)).toMatchObject({
      consumed: true,
      suggestion: expect.stringContaining('left alone'),
    })
    const missing = findings.filter((f) => f.class === 'missing_events')
    const silentSuccess = world.ti('etl_001', 'task_2')
    expect(missing.map((f) => f.ti_id)).toContain(silentSuccess.id)
    expect(missing.find((f) => f.ti_id === silentSuccess.id)!.suggestion).toBe(
      `airlock replay-events --ti-id ${silentSuccess.id}`,
    )
    expect(findings.find((f) => f.class === 'queue_orphan')!.evidence).toContain('deleted_dag')
  })

  it('--fail-on limits which classes exit 6; filters narrow the audit', async () => {
    expect((await audit('--fail-on', 'queue_orphan')).code).toBe(6)
    const narrowed = await audit('--dag-id', 'etl_001', '--fail-on', 'duplicate')
    expect(narrowed.code).toBe(0)
    expect(narrowed.out.result.counts.duplicate).toBe(0)
  })

  it('a --dag-id no DAG and no event has is exit 4 with the close matches, for audit-events and export-events', async () => {
    const audited = await runCli(['audit-events', '--database-url', db.url, '--dag-id', 'etl_01', '--json'])
    expect(audited.code).toBe(4)
    expect(JSON.stringify(envelope(audited))).toContain('did you mean etl_001')
    // export-events streams NDJSON to stdout: the error is on stderr.
    const exported = await runCli(['export-events', '--database-url', db.url, '--dag-id', 'etl_01'])
    expect(exported.code).toBe(4)
    expect(exported.stderr).toContain('did you mean etl_001')
    expect(exported.stdout).toBe('')
    // A DAG deleted since keeps its events: they are still audited.
    const [source] = await db.knex('asset_event').whereNotNull('source_dag_id').pluck('source_dag_id')
    await db.knex('asset_event').where({source_dag_id: source}).update({source_dag_id: 'deleted_dag_x'})
    try {
      expect(
        (await runCli(['audit-events', '--database-url', db.url, '--dag-id', 'deleted_dag_x', '--json'])).code,
      ).not.toBe(4)
    } finally {
      await db.knex('asset_event').where({source_dag_id: 'deleted_dag_x'}).update({source_dag_id: source})
    }
  })

  it('an --asset that names no asset is exit 4 for audit-events and export-events, not a clean run', async () => {
    const audited = await runCli(['audit-events', '--database-url', db.url, '--asset', 'no.such.asset', '--json'])
    expect(audited.code).toBe(4)
    expect(JSON.stringify(envelope(audited))).toContain('No asset has the name or uri \\"no.such.asset\\"')
    const exported = await runCli(['export-events', '--database-url', db.url, '--asset', 'no.such.asset'])
    expect(exported.code).toBe(4)
    expect(exported.stdout).toBe('')
    // A real asset, by its name or by its uri, is audited as before.
    const [asset] = await db.knex('asset').select('name', 'uri').limit(1)
    for (const named of [asset.name, asset.uri]) {
      expect((await runCli(['audit-events', '--database-url', db.url, '--asset', named, '--json'])).code).not.toBe(4)
    }
  })

  it('--lock-timeout without its unit is exit 2 before anything is read, with --fix or without', async () => {
    for (const args of [
      ['--lock-timeout', '5'],
      ['--lock-timeout', 'abc', '--fix'],
      ['--lock-timeout', '5', '--fix'],
    ]) {
      const result = await runCli(['audit-events', '--database-url', db.url, ...args, '--json', '--verbose'])
      expect(result.code).toBe(2)
      expect(JSON.stringify(envelope(result))).toContain('--lock-timeout must be a duration with its unit')
      // Refused before the first connection: no statement ran.
      expect(result.stderr).not.toMatch(/^sql /m)
    }
  })

  it('--fix without --no-dry-run changes nothing', async () => {
    const before = await countRows(db.knex, 'asset_event')
    const {out} = await audit('--fix')
    expect(out.result.fix).toMatchObject({dry_run: true, removed: 1, refused_consumed: 1})
    expect(await countRows(db.knex, 'asset_event')).toBe(before)
    expect(await db.knex('asset_event').where({id: ids.dup_extra})).toHaveLength(1)
  })

  it('--fix --no-dry-run --yes removes exactly the unconsumed duplicate and its alias link, logs it with the row it removed, refuses the consumed one, and is idempotent', async () => {
    const before = await countRows(db.knex, 'asset_event')
    // The removed event as it was, every column but its extra (free-form data the audit log need
    // not show; it equals the kept event's) and its alias links: what the audit row must keep.
    const [removedRow] = await db.knex
      .raw<{rows: Array<{row: Record<string, unknown>}>}>(
        `select (to_jsonb(e) - 'extra') || jsonb_build_object('alias_ids', coalesce((select json_agg(l.alias_id order by l.alias_id)
              from asset_alias_asset_event l where l.event_id = e.id), '[]'::json)) as row
         from asset_event e where e.id = ?`,
        [ids.dup_extra!],
      )
      .then((result) => result.rows)
    expect((removedRow!.row.alias_ids as unknown[]).length).toBeGreaterThan(0)
    const {out} = await audit('--fix', '--no-dry-run', '--yes')
    expect(out.result.fix).toMatchObject({dry_run: false, removed: 1, refused_consumed: 1})
    expect(await countRows(db.knex, 'asset_event')).toBe(before - 1)
    expect(await db.knex('asset_event').where({id: ids.dup_extra})).toEqual([])
    expect(await db.knex('asset_event').where({id: ids.dup_extra_consumed})).toHaveLength(1)
    expect(await db.knex('asset_alias_asset_event').where({event_id: ids.dup_extra})).toEqual([])
    const log = await db.knex('log').where({event: 'airlock.audit-events.fix'})
    expect(log).toHaveLength(1)
    expect(JSON.parse(log[0].extra)).toMatchObject({
      airlock: {
        kept_event_id: ids.dup_kept,
        removed_event_ids: [ids.dup_extra],
        left_consumed: [ids.dup_extra_consumed],
        before: {version: 1, removed_events: [removedRow!.row]},
      },
    })

    const again = await audit('--fix', '--no-dry-run', '--yes')
    expect(again.out.result.fix).toMatchObject({removed: 0, refused_consumed: 1})
    expect(await countRows(db.knex, 'asset_event')).toBe(before - 1)
  })

  it('a bulk repair without --yes and without a terminal is refused (exit 2)', async () => {
    await event(
      db.knex,
      'dup_late',
      'etl_002.task_3.out_1',
      {dag: 'etl_002', run: world.ti('etl_002', 'task_3').run_id, task: 'task_3'},
      {rows: 5},
      '-27 minutes',
    )
    await event(
      db.knex,
      'dup_later',
      'etl_002.task_3.out_1',
      {dag: 'etl_002', run: world.ti('etl_002', 'task_3').run_id, task: 'task_3'},
      {rows: 5},
      '-26 minutes',
    )
    const result = await runCli(['audit-events', '--database-url', db.url, '--fix', '--no-dry-run'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--yes')
    // The refusal names what would go, in the dry run's own figure: consumed duplicates stay and are not counted.
    const dry = await audit('--fix')
    const refusal =
      /Refusing to delete (\d+) unconsumed duplicate events? in (\d+) groups? \(each group keeps its first event; (\d+) consumed duplicates? stay/.exec(
        result.stderr,
      )
    expect(refusal).not.toBeNull()
    expect(Number(refusal![1])).toBe(dry.out.result.fix!.removed)
    expect(Number(refusal![3])).toBeGreaterThan(0)
    expect(await db.knex('asset_event').where({id: ids.dup_late})).toHaveLength(1)
  })

  it('a cursor read one row at a time classifies every event exactly as one batch of all does, and reports its progress', async () => {
    const airflow = await airflowOf(db.knex)
    const run = async (batch?: number) => {
      const findings: Finding[] = []
      const progress: AuditProgress[] = []
      const {counts} = await auditEvents(
        airflow,
        {filter: {assets: []}, windowSeconds: 600, collectGroups: true, batch, onProgress: (p) => progress.push(p)},
        (f) => findings.push(f),
      )
      return {
        counts,
        findings: findings.map((f) => `${f.class} ${f.event_id ?? f.ti_id ?? ''} ${f.kept_id ?? ''}`).sort(),
        progress,
      }
    }
    const whole = await run()
    expect(whole.counts.duplicate).toBeGreaterThan(0)
    const oneByOne = await run(1)
    expect({counts: oneByOne.counts, findings: oneByOne.findings}).toEqual({
      counts: whole.counts,
      findings: whole.findings,
    })
    // Progress counts toward every sourced event (all but the external ones), once per batch.
    const sourced = Object.entries(whole.counts)
      .filter(
        ([cls]) => !['external', 'missing_events', 'missing_unknown', 'not_emitted', 'queue_orphan'].includes(cls),
      )
      .reduce((n, [, count]) => n + count, 0)
    expect(oneByOne.progress[0]).toEqual({total: sourced, done: 0})
    expect(oneByOne.progress.at(-1)).toEqual({total: sourced, done: sourced})
    expect(oneByOne.progress).toHaveLength(sourced + 1)
  })

  it('classifies in one pass: a --verbose run declares one cursor and pages nothing by source key', async () => {
    const result = await runCli(['audit-events', '--database-url', db.url, '--json', '--verbose'])
    expect(result.code).toBe(6)
    const statements = result.stderr.split('\n').filter((line) => line.startsWith('sql '))
    expect(statements.filter((line) => line.includes('declare airlock_classified_events'))).toHaveLength(1)
    expect(statements.filter((line) => line.includes('select distinct e.source_dag_id'))).toHaveLength(0)
    expect(statements.filter((line) => line.includes('fetch forward')).length).toBeGreaterThan(0)
  })

  it('events whose source_map_index is NULL are classified like -1, once', async () => {
    const before = await audit()
    const okTi = world.ti('etl_002', 'task_1')
    const asset = world.asset('etl_002.task_1.out_1')
    await db.knex('asset_event').insert({
      asset_id: asset.id,
      extra: JSON.stringify({null_map: true}),
      source_dag_id: okTi.dag_id,
      source_run_id: okTi.run_id,
      source_task_id: okTi.task_id,
      source_map_index: null,
      timestamp: db.knex.raw(`now() - interval '20 minutes'`),
    })
    const after = await audit()
    expect(after.out.result.counts.ok).toBe(before.out.result.counts.ok + 1)
  })

  it('--format csv and --ndjson stream the findings', async () => {
    const csv = await runCli(['audit-events', '--database-url', db.url, '--format', 'csv'])
    const lines = csv.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^class,event_id,ti_id/)
    expect(lines.slice(1).some((l) => l.startsWith('orphan_missing_ti,'))).toBe(true)
    const nd = await runCli(['audit-events', '--database-url', db.url, '--ndjson'])
    const objects = nd.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as {type: string})
    expect(objects.at(-1)).toMatchObject({type: 'summary'})
    expect(objects.filter((o) => o.type === 'finding').length).toBeGreaterThan(3)
  })

  it('--output keeps every finding, and replay-events --from-file repairs its missing_events in one command', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-findings-'))
    try {
      const human = await runCli([
        'audit-events',
        '--database-url',
        db.url,
        '--output',
        path.join(dir, 'audit-{timestamp}.ndjson'),
      ])
      expect(human.code).toBe(6)
      const [name] = await fs.readdir(dir)
      expect(name).toMatch(/^audit-\d{8}T\d{6}Z\.ndjson$/)
      const file = path.join(dir, name!)
      const lines = (await fs.readFile(file, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Finding & {type: string})
      expect(lines.at(-1)).toMatchObject({type: 'summary'})
      const silentSuccess = world.ti('etl_001', 'task_2')
      // The finding names the task instance by its key, beside its id.
      expect(lines.find((l) => l.class === 'missing_events')).toMatchObject({
        ti_id: silentSuccess.id,
        source_dag_id: 'etl_001',
        source_run_id: silentSuccess.run_id,
        source_task_id: 'task_2',
        source_map_index: -1,
      })
      expect(human.stdout).toContain(`etl_001/${silentSuccess.run_id}/task_2`)
      expect(human.stdout).toContain(`airlock replay-events --from-file ${file} --dry-run`)
      expect(human.stdout).toContain('--profile')
      expect(human.stdout).not.toContain('--env')

      const before = await countRows(db.knex, 'asset_event')
      const replay = await runCli([
        'replay-events',
        '--database-url',
        db.url,
        '--from-file',
        file,
        '--dry-run',
        '--json',
      ])
      expect(replay.code).toBe(0)
      const out = envelope(replay) as {result: {items: Array<{ti_id: string; outcome: string}>}; warnings: string[]}
      // The lost try is replayed; the try nothing can tell about reads unknown, as with --ti-id.
      const unknown = lines.filter((l) => l.class === 'missing_unknown').map((l) => l.ti_id)
      expect(unknown).toHaveLength(1)
      expect(out.result.items).toHaveLength(2)
      expect(out.result.items).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ti_id: silentSuccess.id, outcome: 'would_replay'}),
          expect.objectContaining({ti_id: unknown[0], outcome: 'unknown'}),
        ]),
      )
      expect(out.warnings.join('\n')).toContain('1 missing_unknown finding will read "unknown"')
      expect(await countRows(db.knex, 'asset_event')).toBe(before)
      // The other classes are said and left to what repairs them.
      expect(out.warnings.join('\n')).toContain(
        'duplicate findings left alone (audit-events --fix removes unconsumed duplicates)',
      )
      // A second audit with the same command line writes a new file: never-overwrite holds, cron works.
      await new Promise((resolve) => setTimeout(resolve, 1100))
      const again = await runCli([
        'audit-events',
        '--database-url',
        db.url,
        '--output',
        path.join(dir, 'audit-{timestamp}.ndjson'),
      ])
      expect(again.code).toBe(6)
      expect(await fs.readdir(dir)).toHaveLength(2)
      // A fixed name is refused the second time, before anything is read.
      const fixed = await runCli(['audit-events', '--database-url', db.url, '--output', file])
      expect(fixed.code).toBe(2)
      expect(fixed.stderr).toContain('already exists')
    } finally {
      await fs.rm(dir, {recursive: true, force: true})
    }
  })
})

describe('airlock audit-events: the events of a try, whatever the clocks say', () => {
  let own: TestDatabase
  beforeAll(async () => {
    own = await createTestDatabase('3.0', 2)
  })
  afterAll(async () => own?.drop())

  it('a never-started task completed by airlock keeps its events ok; what an older replay added again is duplicate', async () => {
    const w = await scenario(own.knex).producer('etl', {outlets: 2, state: 'queued'}).build()
    const target = w.ti('etl')
    await own.knex('task_instance').where({id: target.id}).update({start_date: null, end_date: null})
    expect(
      (await runCli(['complete', '--database-url', own.url, '--ti-id', target.id, '--from-state', 'queued', '--yes']))
        .code,
    ).toBe(0)
    const originals = await own.knex('asset_event').where({source_dag_id: 'etl'}).orderBy('id')
    expect(originals).toHaveLength(2)

    // What replay-events did before it knew the try's events: copies an hour later, and its audit row.
    const copies: number[] = []
    for (const original of originals) {
      const [row] = await own
        .knex('asset_event')
        .insert({...original, id: undefined, timestamp: own.knex.raw(`now() + interval '1 hour'`)})
        .returning('id')
      copies.push(row.id)
    }
    await own.knex('log').insert({
      dttm: own.knex.raw('now()'),
      dag_id: target.dag_id,
      run_id: target.run_id,
      task_id: target.task_id,
      map_index: -1,
      try_number: 1,
      event: 'airlock.replay-events',
      extra: JSON.stringify({airlock: {command: 'replay-events', mode: 'missing', event_ids: copies}}),
    })

    const result = await runCli(['audit-events', '--database-url', own.url, '--json'])
    const out = envelope(result) as {result: EventAuditReport}
    expect(result.code).toBe(6)
    expect(out.result.counts).toMatchObject({superseded_by_rerun: 0, duplicate: 2})
    const duplicates = out.result.findings.filter((f) => f.class === 'duplicate')
    expect(duplicates.map((f) => f.event_id).sort()).toEqual(copies)
    expect(duplicates.map((f) => f.kept_id).sort()).toEqual(originals.map((o) => o.id))
  })
})

describe('airlock audit-events --fix beside a live scheduler', () => {
  let own: TestDatabase
  let w: World
  const made: Record<string, number> = {}
  beforeAll(async () => {
    own = await createTestDatabase('3.2', 4)
  })
  afterAll(async () => own?.drop())

  /** etl.produce succeeded and emitted `etl.produce.out_1` twice (a retried request), `report` is scheduled on it. */
  async function world(): Promise<void> {
    w = await scenario(own.knex)
      .producer('etl', {outlets: 1, state: 'success'})
      .consumer('report', {on: ['etl']})
      .build()
    const ti = w.ti('etl')
    await own
      .knex('task_instance')
      .where({id: ti.id})
      .update({start_date: own.knex.raw(`now() - interval '1 hour'`), end_date: own.knex.raw('now()')})
    for (const [name, at] of [
      ['kept', '-30 minutes'],
      ['extra', '-29 minutes'],
    ] as const) {
      const [row] = await own
        .knex('asset_event')
        .insert({
          asset_id: w.asset('etl.produce.out_1').id,
          extra: '{}',
          source_dag_id: 'etl',
          source_run_id: ti.run_id,
          source_task_id: 'produce',
          source_map_index: -1,
          timestamp: own.knex.raw(`now() + ?::interval`, [at]),
        })
        .returning('id')
      made[name] = row.id
    }
  }

  const fix = async () => {
    const result = await runCli([
      'audit-events',
      '--database-url',
      own.url,
      '--dag-id',
      'etl',
      '--fix',
      '--no-dry-run',
      '--yes',
      '--json',
    ])
    return (envelope(result) as {result: EventAuditReport}).result.fix!
  }

  /** A consumer run of `report`, as the scheduler creates it, that took `events`; run_after now. */
  async function consumerRun(knex: Knex, events: number[]): Promise<void> {
    const [run] = await knex('dag_run')
      .insert({
        dag_id: 'report',
        run_id: `asset_triggered__${Date.now()}`,
        run_type: 'asset_triggered',
        run_after: knex.raw('now()'),
        state: 'queued',
      })
      .returning('id')
    for (const event of events) await knex('dagrun_asset_event').insert({dag_run_id: run.id, event_id: event})
  }

  it('an extra a consumer could still take (no run took it yet) is removed, with the consumer DAG row held', async () => {
    await world()
    const result = await fix()
    expect(result).toMatchObject({removed: 1, refused_pending: 0, skipped_busy: 0})
    expect(await own.knex('asset_event').where({id: made.extra})).toEqual([])
    expect(await own.knex('asset_event').where({id: made.kept})).toHaveLength(1)
  })

  it('a group the scheduler is consuming right now is skipped, not waited on, and the scheduler commits', async () => {
    await world()
    const scheduler = await own.knex.transaction()
    try {
      // The scheduler's run creation holds the events' keys through its foreign-key checks.
      await consumerRun(scheduler, [made.kept!, made.extra!])
      const result = await fix()
      expect(result).toMatchObject({removed: 0, skipped_busy: 1})
      expect(result.groups[0]).toMatchObject({outcome: 'skipped_busy'})
      await scheduler.commit()
    } catch (error) {
      await scheduler.rollback()
      throw error
    }
    expect(await own.knex('dagrun_asset_event').whereIn('event_id', [made.kept!, made.extra!])).toHaveLength(2)
  })

  it('once every consumer ran past it without taking it, the extra is removed', async () => {
    await world()
    await consumerRun(own.knex, [made.kept!])
    const result = await fix()
    expect(result).toMatchObject({removed: 1, refused_pending: 0})
    expect(await own.knex('asset_event').where({id: made.extra})).toEqual([])
  })

  it('a direct event and an alias event of the same asset and extra are both legitimate, not duplicates', async () => {
    await world()
    const [alias] = await own.knex('asset_alias').insert({name: 'etl_alias', group: 'asset'}).returning('id')
    await own.knex('asset_alias_asset_event').insert({alias_id: alias.id, event_id: made.extra})
    const result = await runCli(['audit-events', '--database-url', own.url, '--dag-id', 'etl', '--json'])
    expect((envelope(result) as {result: EventAuditReport}).result.counts.duplicate).toBe(0)
  })
})
