import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createAssetTriggeredRuns} from '../conformance/scheduler.js'
import {completeOne, schemaOf} from '../support/complete.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {createReadOnlyRole} from '../support/roles.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * `airlock explain` as an operator runs it: one world per verdict and per finding, read by the
 * CLI on real PostgreSQL (the conformance suite holds its verdicts to the scheduler's step on
 * every release line; this file holds what it says and how).
 */
interface Leaf {
  leaf: string
  state: string
  since?: string
  event?: {id: number; source: string} | null
  last_event?: {id: number} | null
  last_event_consumed_by?: string[]
  producers?: Array<{dag_id: string; task_id: string}>
}
type Condition = {all: Condition[]} | {any: Condition[]} | Leaf
interface Explained {
  dag_id: string
  verdict: string
  waiting_for: string[]
  blocked_by?: string
  reason?: string
  condition: Condition | null
  met_since?: string
  consumes?: {run_after: string; after: string | null; count: number; events: Array<{id: number}>}
  queued: Array<{asset: string; event: {id: number; source: string} | null}>
  partitions?: Array<{partition_key: string; verdict: string; waiting_for: string[]}>
  runs: Array<{run_id: string; events: number[]}>
  findings: Array<{kind: string; detail: string; runs?: string[]; events?: number[]}>
  caveats?: string[]
}
interface Health {
  alive: boolean | null
  last_heartbeat: string | null
  state: string | null
  threshold_seconds: number
}
interface Report {
  status: number
  result: {
    summary: {dags: number; verdicts: Record<string, number>; findings: Record<string, number>}
    scheduler: Health
    dag_processor: Health
    dags: Explained[]
  }
}

const asset = (name: string) => ({
  __type: 'asset',
  name,
  uri: `s3://lake/${name.replaceAll('.', '/')}`,
  group: 'asset',
  extra: {},
})

describe.each(['3.0', '3.3'] as const)('airlock explain on %s', (version) => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase(version)
  })
  afterAll(async () => db?.drop())

  const explain = async (...args: string[]) => {
    const result = await runCli(['explain', '--database-url', db.url, ...args])
    return {
      result,
      report: result.code === 0 || result.code === 6 ? (envelope(result) as unknown as Report) : undefined,
    }
  }
  const dagOf = (report: Report | undefined, dagId: string) => report!.result.dags.find((d) => d.dag_id === dagId)!

  /** etl: tasks a, b and c, one outlet each; consumers on them in every shape the verdicts need. */
  async function world() {
    const w = await scenario(db.knex)
      .producer('etl', {tasks: ['a', 'b', 'c'], outlets: 1})
      .consumer('both', {on: ['etl.a', 'etl.b']})
      .consumer('either', {on: ['etl.a', 'etl.b'], condition: 'any'})
      .consumer('nested', {on: ['etl.a', 'etl.b', 'etl.c']})
      .consumer('paused', {on: ['etl.a'], paused: true})
      .consumer('busy', {on: ['etl.a'], maxActiveRuns: 1})
      .producer('plain', {tasks: ['x'], outlets: 0})
      .build()
    // nested: (a | b) & c, as encode_asset_condition writes it.
    await db.knex.raw(
      `update serialized_dag set data = jsonb_set(data::jsonb, '{dag,timetable,__var,asset_condition}', ?::jsonb)::json where dag_id = 'nested'`,
      [
        JSON.stringify({
          __type: 'asset_all',
          objects: [{__type: 'asset_any', objects: [asset('etl.a.out_1'), asset('etl.b.out_1')]}, asset('etl.c.out_1')],
        }),
      ],
    )
    await db.knex('dag_run').insert({
      dag_id: 'busy',
      run_id: 'manual__busy',
      run_type: 'manual',
      run_after: '2026-01-01T00:00:00Z',
      state: 'running',
    })
    return w
  }

  it('each verdict, with the condition as a tree, the fewest assets each waiting DAG needs, and what blocks', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const footprint = await writeFootprint(db.knex)
    const {result, report} = await explain('--all', '--json')
    expect(result.code).toBe(0)
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    const either = dagOf(report, 'either')
    expect(either).toMatchObject({verdict: 'will_run', waiting_for: []})
    expect(either.met_since).toBeDefined()
    const both = dagOf(report, 'both')
    expect(both).toMatchObject({verdict: 'waiting', waiting_for: ['etl.b.out_1']})
    // The queued leaf names the event that queued it and its source; the missing one has none yet.
    const [queuedLeaf, missingLeaf] = (both.condition as {all: Leaf[]}).all
    expect(queuedLeaf).toMatchObject({leaf: 'etl.a.out_1', state: 'queued'})
    expect(queuedLeaf!.event!.source).toMatch(/^etl\/.+\/a$/)
    expect(missingLeaf).toMatchObject({leaf: 'etl.b.out_1', state: 'missing', last_event: null})
    // (a | b) & c with a queued: only c is missing, never "b or c".
    expect(dagOf(report, 'nested')).toMatchObject({verdict: 'waiting', waiting_for: ['etl.c.out_1']})
    const busy = dagOf(report, 'busy')
    expect(busy).toMatchObject({verdict: 'blocked', blocked_by: 'max_active_runs'})
    expect(busy.reason).toContain('max_active_runs 1')
    // 3.0 queues no paused DAG by id either way; whatever its queue, a paused DAG is blocked.
    expect(dagOf(report, 'paused')).toMatchObject({verdict: 'blocked', blocked_by: 'paused'})
    expect(report!.result.summary.verdicts).toEqual({will_run: 1, waiting: 2, blocked: 2, not_asset_scheduled: 0})
    // Not asset-scheduled DAGs are not part of --all; named, they say so.
    const plain = await explain('--dag-id', 'plain', '--json')
    expect(dagOf(plain.report, 'plain')).toMatchObject({verdict: 'not_asset_scheduled', condition: null})
  })

  it('an inactive asset is inactive, not missing, and a condition that needs it is blocked', async () => {
    const w = await world()
    // etl.b.out_1 loses its asset_active row (no DAG declares it any more): no outlet emits for it.
    await db.knex('asset_active').where({name: 'etl.b.out_1'}).del()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const {report} = await explain('--all', '--json')
    const both = dagOf(report, 'both')
    expect(both).toMatchObject({verdict: 'blocked', blocked_by: 'inactive_assets', waiting_for: ['etl.b.out_1']})
    expect(both.reason).toContain('inactive asset etl.b.out_1')
    expect((both.condition as {all: Leaf[]}).all[1]).toMatchObject({leaf: 'etl.b.out_1', state: 'inactive'})
    // a | b holds through a; (a | b) & c can still be met without b.
    expect(dagOf(report, 'either')).toMatchObject({verdict: 'will_run'})
    expect(dagOf(report, 'nested')).toMatchObject({verdict: 'waiting', waiting_for: ['etl.c.out_1']})
    const human = await runCli(['explain', '--database-url', db.url, '--dag-id', 'both'])
    expect(human.stdout).toContain('etl.b.out_1: inactive')

    // Its uri taken by an active asset of another name: the reason names the clash, which keeps
    // it inactive (asset_active is unique on name and on uri).
    const now = new Date()
    await db.knex('asset').insert({
      name: 'lake.b',
      uri: 's3://lake/etl/b/out_1',
      group: 'asset',
      extra: '{}',
      created_at: now,
      updated_at: now,
    })
    await db.knex('asset_active').insert({name: 'lake.b', uri: 's3://lake/etl/b/out_1'})
    const clash = dagOf((await explain('--dag-id', 'both', '--json')).report, 'both')
    expect(clash).toMatchObject({verdict: 'blocked', blocked_by: 'inactive_assets'})
    expect(clash.reason).toContain('etl.b.out_1 (its uri s3://lake/etl/b/out_1 belongs to active asset lake.b)')
  })

  it('reads like an answer for people, and --asset explains every consumer of that asset', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const result = await runCli(['explain', '--database-url', db.url, '--asset', 's3://lake/etl/b/out_1'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('both: waiting for etl.b.out_1; the other asset is queued')
    expect(result.stdout).toContain('either: will run')
    expect(result.stdout).toContain('nested: waiting for etl.c.out_1; 1 of 3 assets queued')
    expect(result.stdout).not.toContain('busy:')
    expect(result.stdout).toMatch(/✓ etl\.a\.out_1: queued .* by event \d+ of .* from etl\//)
    expect(result.stdout).toContain('3 DAGs: 1 will run, 2 waiting, 0 blocked, 0 not asset-scheduled; no findings.')
  })

  it('duplicate_run: two runs that consumed one event; --fail-on exits 6 for cron, --ndjson streams a line per DAG', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const [event] = await db.knex('asset_event').pluck('id')
    for (const runId of ['asset_triggered__1', 'asset_triggered__2']) {
      const [run] = await db
        .knex('dag_run')
        .insert({dag_id: 'either', run_id: runId, run_type: 'asset_triggered', run_after: new Date(), state: 'queued'})
        .returning('id')
      await db.knex('dagrun_asset_event').insert({dag_run_id: (run as {id: number}).id, event_id: event})
    }
    const {result, report} = await explain('--dag-id', 'either', '--fail-on', 'duplicate_run', '--json')
    expect(result.code).toBe(6)
    const either = dagOf(report, 'either')
    expect(either.runs.map((r) => r.run_id)).toHaveLength(2)
    expect(either.findings).toEqual([
      expect.objectContaining({
        kind: 'duplicate_run',
        events: [event],
        runs: ['asset_triggered__1', 'asset_triggered__2'],
      }),
    ])
    // Without --fail-on a finding is reported, not an exit.
    expect((await explain('--dag-id', 'either', '--json')).result.code).toBe(0)
    const ndjson = await runCli([
      'explain',
      '--database-url',
      db.url,
      '--dag-id',
      'either',
      '--dag-id',
      'both',
      '--ndjson',
    ])
    const lines = ndjson.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {type: string; dag_id?: string})
    expect(lines.map((l) => l.type)).toEqual(['dag', 'dag', 'summary'])
    expect(lines.map((l) => l.dag_id).slice(0, 2)).toEqual(['both', 'either'])
  })

  it('two schedulers racing (the queue read without a lock): both create a run from one event, and explain names it', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const schema = await schemaOf(db.knex)
    // The second scheduler runs its whole loop after the first read the queue and before it locks
    // the DAG row; the first then goes on with the rows the second already consumed.
    const first = await createAssetTriggeredRuns(db.knex, schema, async () => {
      await createAssetTriggeredRuns(db.knex, schema)
    })
    const runs = await db.knex('dag_run').where({dag_id: 'either', run_type: 'asset_triggered'}).pluck('run_id')
    const {result, report} = await explain('--dag-id', 'either', '--fail-on', 'duplicate_run', '--json')
    if (version === '3.0') {
      // 3.0 goes on with the queue it read: two runs, both consuming the event.
      expect(runs).toHaveLength(2)
      expect(first.map((r) => r.dagId)).toContain('either')
      expect(result.code).toBe(6)
      expect(dagOf(report, 'either').findings.map((f) => f.kind)).toEqual(['duplicate_run'])
    } else {
      // From 3.2 the queue rows are locked and read again before the run: the second loop finds
      // none left, one run, nothing to report.
      expect(runs).toHaveLength(1)
      expect(result.code).toBe(0)
      expect(dagOf(report, 'either').findings).toEqual([])
    }
  })

  it('stuck: a condition held past --stuck-after with no run; an orphan queue row is named', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    // Three hours ago, event and queue rows together (the event moved too, or it would read as
    // one that came after its queue row: stranded), the DAGs scheduled on the assets before that.
    await db.knex('asset_dag_run_queue').update({created_at: db.knex.raw(`created_at - interval '3 hours'`)})
    await db.knex('asset_event').update({timestamp: db.knex.raw(`timestamp - interval '3 hours'`)})
    await db.knex('dag_schedule_asset_reference').update({created_at: db.knex.raw(`created_at - interval '4 hours'`)})
    const stuck = await explain('--dag-id', 'either', '--stuck-after', '2h', '--fail-on', 'stuck', '--json')
    expect(stuck.result.code).toBe(6)
    expect(dagOf(stuck.report, 'either').findings[0]).toMatchObject({kind: 'stuck'})
    expect(dagOf(stuck.report, 'either').findings[0]!.detail).toMatch(
      /held since .* \(3 h ago\) and no run was created/,
    )
    expect(
      (await explain('--dag-id', 'either', '--stuck-after', '4h', '--fail-on', 'stuck', '--json')).result.code,
    ).toBe(0)

    // Every DAG whose condition holds is paused or at max_active_runs: normal operation, not stuck.
    await db.knex('dag').where({dag_id: 'either'}).update({is_paused: true})
    const silent = await explain('--all', '--stuck-after', '2h', '--fail-on', 'stuck', '--json')
    expect(silent.result.code).toBe(0)
    expect(silent.report!.result.summary.findings).toMatchObject({stuck: 0, paused_backlog: 1})
    expect(dagOf(silent.report, 'either').findings[0]!.detail).toMatch(
      /paused and its condition has held since .* \(3 h ago\): unpausing it creates a run/,
    )
    expect(dagOf(silent.report, 'busy').findings).toEqual([])
    // Opt-in: a paused backlog fails the run only when --fail-on names it.
    expect((await explain('--all', '--stuck-after', '2h', '--fail-on', 'paused_backlog', '--json')).result.code).toBe(6)
    await db.knex('dag').where({dag_id: 'either'}).update({is_paused: false})

    // A queue row whose asset row is gone: the foreign key cascades, so only a restore or a manual
    // fix that bypassed it (as session_replication_role = replica does) leaves one.
    await db.knex.transaction(async (trx) => {
      await trx.raw('set local session_replication_role = replica')
      await trx('asset').where({name: 'etl.a.out_1'}).delete()
    })
    const {report} = await explain('--dag-id', 'both', '--json')
    expect(dagOf(report, 'both').findings).toEqual([expect.objectContaining({kind: 'orphan_queue'})])
  })

  it("no live scheduler: the report, every will_run and stuck say so, as Airflow's health check judges the job table", async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    // Three hours ago, event and queue rows together (the event moved too, or it would read as
    // one that came after its queue row: stranded), the DAGs scheduled on the assets before that.
    await db.knex('asset_dag_run_queue').update({created_at: db.knex.raw(`created_at - interval '3 hours'`)})
    await db.knex('asset_event').update({timestamp: db.knex.raw(`timestamp - interval '3 hours'`)})
    await db.knex('dag_schedule_asset_reference').update({created_at: db.knex.raw(`created_at - interval '4 hours'`)})
    await db.knex('job').delete()
    const heartbeat = (type: string, state: string, age: string) =>
      db.knex('job').insert({
        job_type: type,
        state,
        hostname: 'sched-1',
        start_date: db.knex.raw(`now() - interval '2 years'`),
        latest_heartbeat: db.knex.raw(`now() - ?::interval`, [age]),
      })
    try {
      // No job row at all.
      let {report} = await explain('--dag-id', 'either', '--dag-id', 'both', '--json')
      expect(report!.result.scheduler).toMatchObject({alive: false, last_heartbeat: null, threshold_seconds: 30})
      expect(dagOf(report, 'either').caveats).toEqual([
        'no scheduler has run here (the job table has no SchedulerJob row): no run is created until one runs',
      ])
      // A waiting DAG needs no scheduler to be waiting.
      expect(dagOf(report, 'both').caveats).toBeUndefined()

      // A scheduler whose last heartbeat is a year old: still "running" in its row, not alive.
      await heartbeat('SchedulerJob', 'running', '365 days')
      ;({report} = await explain('--dag-id', 'either', '--stuck-after', '2h', '--json'))
      expect(report!.result.scheduler).toMatchObject({alive: false, state: 'running'})
      const either = dagOf(report, 'either')
      expect(either.verdict).toBe('will_run')
      expect(either.caveats![0]).toMatch(
        /^no scheduler heartbeat since \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(365 d ago\): no run is created until one runs$/,
      )
      expect(either.findings[0]!.kind).toBe('stuck')
      expect(either.findings[0]!.detail).toMatch(/; no scheduler heartbeat since .*: no run is created until one runs$/)
      const people = await runCli(['explain', '--database-url', db.url, '--dag-id', 'either'])
      expect(people.stdout).toContain('either: will run: a coming scheduler loop creates its run')
      expect(people.stdout).toMatch(/! but no scheduler heartbeat since .* \(365 d ago\)/)
      expect(people.stdout).toMatch(/! no scheduler heartbeat since .*: a verdict is what a running one does\./)
      // One time format in every sentence: to the second, UTC, as the heartbeat's.
      const at = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`
      expect(either.findings[0]!.detail).toMatch(new RegExp(`^its condition has held since ${at} \\(3 h ago\\)`))
      expect(people.stdout).toMatch(new RegExp(`✓ etl\\.a\\.out_1: queued ${at} by event \\d+ of ${at} from `))

      // The threshold is Airflow's [scheduler] scheduler_health_check_threshold: 30 s by default.
      await db.knex('job').delete()
      await heartbeat('SchedulerJob', 'running', '40 seconds')
      ;({report} = await explain('--dag-id', 'either', '--json'))
      expect(report!.result.scheduler.alive).toBe(false)
      const lenient = await runCli(['explain', '--database-url', db.url, '--dag-id', 'either', '--json'], {
        env: {AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD: '60'},
      })
      const alive = (envelope(lenient) as unknown as Report).result
      expect(alive.scheduler).toMatchObject({alive: true, threshold_seconds: 60})
      expect(dagOf({result: alive} as Report, 'either').caveats).toBeUndefined()
    } finally {
      await db.knex('job').delete()
    }
  })

  it('no live DAG processor: a verdict that waits on parsing says so', async () => {
    await world()
    await db.knex('job').delete()
    await db.knex('dag').where({dag_id: 'both'}).update({has_import_errors: true})
    await db.knex('job').insert({job_type: 'SchedulerJob', state: 'running', latest_heartbeat: db.knex.raw('now()')})
    try {
      const {report} = await explain('--dag-id', 'both', '--json')
      expect(report!.result.dag_processor).toMatchObject({alive: false, state: null})
      expect(dagOf(report, 'both')).toMatchObject({verdict: 'blocked', blocked_by: 'import_errors'})
      expect(dagOf(report, 'both').caveats).toEqual([
        'no DAG processor has run here (the job table has no DagProcessorJob row): the file is not parsed again (nor its DAG serialized) until one runs',
      ])
      await db
        .knex('job')
        .insert({job_type: 'DagProcessorJob', state: 'running', latest_heartbeat: db.knex.raw('now()')})
      const again = await explain('--dag-id', 'both', '--json')
      expect(again.report!.result.dag_processor.alive).toBe(true)
      expect(dagOf(again.report, 'both').caveats).toBeUndefined()
    } finally {
      await db.knex('job').delete()
    }
  })

  it('queue rows of a DAG whose asset_expression is NULL: from 3.2 a coming loop deletes them', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const [asset] = await db.knex('asset').where({name: 'etl.a.out_1'}).select('id')
    await db
      .knex('asset_dag_run_queue')
      .insert({asset_id: asset.id, target_dag_id: 'plain', created_at: db.knex.raw('now()')})
    const {report} = await explain('--dag-id', 'plain', '--json')
    const plain = dagOf(report, 'plain')
    expect(plain.verdict).toBe('not_asset_scheduled')
    const deletion = plain.caveats!.find((c) => c.startsWith('its dag.asset_expression is NULL'))
    expect(deletion).toContain(
      version === '3.0'
        ? 'before 3.2 the scheduler leaves its 1 queue row in place and creates no run from them; while its latest serialized DAG has no asset condition, dags_needing_dagruns raises NotImplementedError'
        : 'a coming scheduler loop deletes its 1 queue row before it evaluates any condition',
    )
  })

  it('a missing leaf says whether its last event was consumed or never queued for the DAG, and who produces it', async () => {
    const w = await world()
    // `paused` is paused when etl.a's event arrives: register_asset_change queues nothing for it.
    await completeOne(db.knex, w.ti('etl', 'a').id)
    // The scheduler's step: `either` gets its run, which consumes the event and its queue row.
    await createAssetTriggeredRuns(db.knex, await schemaOf(db.knex))
    await db.knex('dag').where({dag_id: 'paused'}).update({is_paused: false})
    const [event] = await db.knex('asset_event').pluck('id')
    const [run] = await db.knex('dag_run').where({dag_id: 'either', run_type: 'asset_triggered'}).pluck('run_id')
    expect(run).toBeDefined()
    // The producer: paused, its latest run failed.
    await db.knex('dag').where({dag_id: 'etl'}).update({is_paused: true})
    await db.knex('dag_run').where({dag_id: 'etl'}).update({state: 'failed'})

    const {report} = await explain('--dag-id', 'either', '--dag-id', 'paused', '--runs', '0', '--json')
    const producer = {dag_id: 'etl', task_id: 'a', paused: true, stale: false, import_errors: false}
    const paused = dagOf(report, 'paused')
    expect(paused.verdict).toBe('waiting')
    expect((paused.condition as {all: Leaf[]}).all[0]).toMatchObject({
      leaf: 'etl.a.out_1',
      state: 'missing',
      last_event: {id: event},
      last_event_consumed_by: [],
      producers: [expect.objectContaining({...producer, latest_run: expect.objectContaining({state: 'failed'})})],
    })
    // Consumed by a run --runs 0 does not show: read whatever --runs says.
    const either = dagOf(report, 'either')
    expect((either.condition as {any: Leaf[]}).any[0]).toMatchObject({
      leaf: 'etl.a.out_1',
      state: 'missing',
      last_event_consumed_by: [run],
    })
    // etl.b.out_1 never had an event: nothing to consume; its producer is named.
    expect((either.condition as {any: Leaf[]}).any[1]).toMatchObject({
      leaf: 'etl.b.out_1',
      last_event: null,
      producers: [expect.objectContaining({dag_id: 'etl', task_id: 'b'})],
    })
    expect((either.condition as {any: Leaf[]}).any[1]).not.toHaveProperty('last_event_consumed_by')

    const human = await runCli(['explain', '--database-url', db.url, '--dag-id', 'either', '--dag-id', 'paused'])
    expect(human.stdout).toMatch(/paused: waiting for etl\.a\.out_1 \(last event .*, never queued for it\)/)
    expect(human.stdout).toContain(
      `event ${event} was never queued for this DAG (it was paused when it arrived, was not yet scheduled on the asset, or its queue row was deleted): it will start no run; trigger it or wait for the next event`,
    )
    expect(human.stdout).toContain(`; consumed by run ${run}`)
    expect(human.stdout).toMatch(/produced by etl\/a \(paused, latest run .* failed\)/)
  })

  it('will_run names the events the run consumes; one that came after the newest queue row is stranded_events', async () => {
    const w = await world()
    await completeOne(db.knex, w.ti('etl', 'a').id)
    const [asset] = await db.knex('asset').where({name: 'etl.a.out_1'}).pluck('id')
    const [first] = await db.knex('asset_event').pluck('id')
    // A second event of etl.a.out_1 (posted through the API, say) after its queue rows were
    // written: those rows are kept as they were (on_conflict_do_nothing), it writes none.
    const [second] = await db
      .knex('asset_event')
      .insert({asset_id: asset, extra: '{}', timestamp: db.knex.raw(`now() + interval '1 second'`)})
      .returning('id')
    const secondId = (second as {id: number}).id
    const {result, report} = await explain('--dag-id', 'either', '--fail-on', 'stranded_events', '--json')
    expect(result.code).toBe(6)
    const either = dagOf(report, 'either')
    expect(either.verdict).toBe('will_run')
    // From 3.3 (apache/airflow #68749, catchup off) a first run's window starts at the DAG's first
    // schedule reference; before, at the beginning of time.
    const {rows: refs} = await db.knex.raw<{rows: Array<{at: string}>}>(
      `select to_char(min(created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at
         from dag_schedule_asset_reference where dag_id = 'either'`,
    )
    expect(either.consumes).toMatchObject({
      after: version === '3.0' ? null : refs[0]!.at,
      count: 1,
      events: [{id: first}],
    })
    expect(either.findings).toEqual([expect.objectContaining({kind: 'stranded_events', events: [secondId]})])
    expect(either.findings[0]!.detail).toContain('came after its newest queue row')
    const human = await runCli(['explain', '--database-url', db.url, '--dag-id', 'either'])
    expect(human.stdout).toMatch(new RegExp(`consumes: 1 event stamped (after \\S+ )?through \\S+ \\(${first}\\)`))
    expect(human.stdout).toContain(`! stranded_events: event ${secondId} of its assets came after`)

    // The scheduler's step (transcribed) takes the first event only: the second stays behind,
    // with no queue row and no run coming for it.
    await createAssetTriggeredRuns(db.knex, await schemaOf(db.knex))
    const [run] = await db
      .knex('dag_run')
      .where({dag_id: 'either', run_type: 'asset_triggered'})
      .select('id', 'run_after')
    expect(await db.knex('dagrun_asset_event').where({dag_run_id: run.id}).pluck('event_id')).toEqual([first])
    const after = dagOf((await explain('--dag-id', 'either', '--json')).report, 'either')
    expect(after.verdict).toBe('waiting')
    expect(after.consumes).toBeUndefined()
    expect(after.findings).toEqual([expect.objectContaining({kind: 'stranded_events', events: [secondId]})])
    expect(after.findings[0]!.detail).toContain('after its last asset-triggered run')
    // both waits with etl.a queued: the run that completes it takes every event, nothing strands.
    expect(dagOf((await explain('--dag-id', 'both', '--json')).report, 'both').findings).toEqual([])
  })

  it('a read-only role is enough; bad input is a clear exit 2 or 4 and reads nothing', async () => {
    await world()
    const reader = await createReadOnlyRole(db)
    try {
      const result = await runCli(['explain', '--database-url', reader.url, '--all', '--json'])
      expect(result.code).toBe(0)
    } finally {
      await reader.drop()
    }
    const unknown = await runCli(['explain', '--database-url', db.url, '--dag-id', 'bothh'])
    expect(unknown.code).toBe(4)
    expect(unknown.stderr).toContain('did you mean both')
    expect((await runCli(['explain', '--database-url', db.url, '--asset', 's3://nowhere'])).code).toBe(4)
    const none = await runCli(['explain', '--database-url', db.url])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('exactly one of --dag-id, --asset or --all')
    expect((await runCli(['explain', '--database-url', db.url, '--all', '--stuck-after', '5'])).code).toBe(2)
  })
})

describe('airlock explain on partitioned consumers (3.3)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.3')
  })
  afterAll(async () => db?.drop())

  it('each pending partition run with what it received; two pending runs for one key are a finding', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: ['a', 'b'], outlets: 1})
      .consumer('parts', {on: ['etl']})
      .build()
    await db.knex('dag').where({dag_id: 'parts'}).update({timetable_partitioned: true})
    const assets = await db.knex('asset').orderBy('id').select('id', 'name')
    const now = new Date()
    const pending = async (key: string, received: number[]) => {
      const [row] = await db
        .knex('asset_partition_dag_run')
        .insert({target_dag_id: 'parts', partition_key: key, created_at: now, updated_at: now})
        .returning('id')
      for (const assetId of received) {
        await db.knex('partitioned_asset_key_log').insert({
          asset_id: assetId,
          asset_event_id: 1,
          asset_partition_dag_run_id: (row as {id: number}).id,
          source_partition_key: key,
          target_dag_id: 'parts',
          target_partition_key: key,
          created_at: now,
        })
      }
    }
    await pending('2026-12-01', [assets[0]!.id, assets[1]!.id])
    await pending('2026-12-02', [assets[0]!.id])
    await pending('2026-12-02', [assets[1]!.id])
    const result = await runCli([
      'explain',
      '--database-url',
      db.url,
      '--dag-id',
      'parts',
      '--json',
      '--fail-on',
      'duplicate_partition_run',
    ])
    expect(result.code).toBe(6)
    const parts = (envelope(result) as unknown as Report).result.dags[0]!
    expect(parts.verdict).toBe('will_run')
    expect(parts.partitions).toEqual([
      expect.objectContaining({partition_key: '2026-12-01', verdict: 'will_run', waiting_for: []}),
      expect.objectContaining({partition_key: '2026-12-02', verdict: 'waiting', waiting_for: [assets[1]!.name]}),
      expect.objectContaining({partition_key: '2026-12-02', verdict: 'waiting', waiting_for: [assets[0]!.name]}),
    ])
    expect(parts.findings).toEqual([expect.objectContaining({kind: 'duplicate_partition_run'})])

    // Paused: 3.3's partition step reads no is_paused (apache/airflow #73151 is not in it), so
    // the run is still created, and stays queued.
    await db.knex('dag').where({dag_id: 'parts'}).update({is_paused: true})
    const paused = (
      envelope(await runCli(['explain', '--database-url', db.url, '--dag-id', 'parts', '--json'])) as unknown as Report
    ).result.dags[0]!
    expect(paused).toMatchObject({verdict: 'will_run'})
    expect(paused.blocked_by).toBeUndefined()
    expect(paused.reason).toContain('it is paused, yet this release')
    expect(paused.reason).toContain('the run stays queued while the DAG is paused')
    await db.knex('dag').where({dag_id: 'parts'}).update({is_paused: false})

    // A partition run whose condition has held past --stuck-after is stuck, for cron.
    await db.knex('asset_partition_dag_run').update({created_at: db.knex.raw(`created_at - interval '2 days'`)})
    await db.knex('partitioned_asset_key_log').update({created_at: db.knex.raw(`created_at - interval '2 days'`)})
    const stuck = await runCli([
      'explain',
      '--database-url',
      db.url,
      '--dag-id',
      'parts',
      '--json',
      '--fail-on',
      'stuck',
    ])
    expect(stuck.code).toBe(6)
    const [first] = (envelope(stuck) as unknown as Report).result.dags[0]!.findings
    expect(first).toMatchObject({kind: 'stuck'})
    expect(first!.detail).toMatch(
      /partition run for key 2026-12-01 has had what its condition needs since .* \(2 d ago/,
    )

    // Pending runs still waiting for an event are normal operation, however old: not stuck.
    await db.knex('asset_partition_dag_run').where({partition_key: '2026-12-01'}).delete()
    const waiting = await runCli([
      'explain',
      '--database-url',
      db.url,
      '--dag-id',
      'parts',
      '--json',
      '--fail-on',
      'stuck',
    ])
    expect(waiting.code).toBe(0)
    expect((envelope(waiting) as unknown as Report).result.dags[0]!.findings.map((f) => f.kind)).toEqual([
      'duplicate_partition_run',
    ])
  })
})

describe('airlock explain on rollup partitions (3.3)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.3')
  })
  afterAll(async () => db?.drop())

  const startOfDay = (timezone = 'UTC') => ({
    __type: 'airflow.partition_mappers.temporal.StartOfDayMapper',
    __var: {timezone, input_format: '%Y-%m-%dT%H', output_format: '%Y-%m-%d'},
  })
  const rollup = (
    upstream: unknown,
    policy: unknown = {__type: 'airflow.partition_mappers.wait_policy.WaitForAll', __var: {}},
  ) => ({
    __type: 'airflow.partition_mappers.base.RollupMapper',
    __var: {
      upstream_mapper: upstream,
      window: {__type: 'airflow.partition_mappers.window.DayWindow', __var: {direction: 'forward'}},
      wait_policy: policy,
    },
  })

  /** daily: one asset, its mapper a DayWindow rollup of hourly keys; one pending run for 2026-12-01 with these hours. */
  async function daily(mapper: unknown, hours: number) {
    await scenario(db.knex)
      .producer('etl', {tasks: ['a'], outlets: 1})
      .consumer('daily', {on: ['etl.a']})
      .build()
    const [a] = await db.knex('asset').select('id', 'name', 'uri')
    const timetable = {
      __type: 'airflow.timetables.simple.PartitionedAssetTimetable',
      __var: {asset_condition: asset('etl.a.out_1'), default_partition_mapper: mapper, partition_mapper_config: []},
    }
    await db.knex.raw(
      `update serialized_dag set data = jsonb_set(data::jsonb, '{dag,timetable}', ?::jsonb)::json where dag_id = 'daily'`,
      [JSON.stringify(timetable)],
    )
    await db.knex('dag').where({dag_id: 'daily'}).update({timetable_partitioned: true})
    const now = new Date()
    const [row] = await db
      .knex('asset_partition_dag_run')
      .insert({
        target_dag_id: 'daily',
        partition_key: '2026-12-01',
        created_at: now,
        updated_at: now,
        rollup_fingerprint: JSON.stringify({[`${a.name}|${a.uri}`]: mapper}),
      })
      .returning('id')
    for (let h = 0; h < hours; h++) {
      await db.knex('partitioned_asset_key_log').insert({
        asset_id: a.id,
        asset_event_id: 1,
        asset_partition_dag_run_id: (row as {id: number}).id,
        source_partition_key: `2026-12-01T${String(h).padStart(2, '0')}`,
        target_dag_id: 'daily',
        target_partition_key: '2026-12-01',
        created_at: now,
      })
    }
    const result = await runCli(['explain', '--database-url', db.url, '--dag-id', 'daily', '--json'])
    return (envelope(result) as unknown as Report).result.dags[0]!
  }

  it('a daily rollup of hourly keys waits for the whole window, as its wait policy asks', async () => {
    // One hourly key of 24: waiting, with the count and the first missing keys.
    const one = await daily(rollup(startOfDay()), 1)
    expect(one.verdict).toBe('waiting')
    expect(one.partitions).toEqual([
      expect.objectContaining({
        partition_key: '2026-12-01',
        verdict: 'waiting',
        waiting_for: ['etl.a.out_1'],
        rollups: [
          expect.objectContaining({
            asset: 'etl.a.out_1',
            counted: true,
            received_keys: 1,
            expected_keys: 24,
            needs: 24,
          }),
        ],
      }),
    ])
    expect((one.partitions![0] as {reason?: string}).reason).toContain(
      '1 of the 24 upstream keys its window needs received',
    )
    expect((one.partitions![0] as {reason?: string}).reason).toContain('missing 2026-12-01T01')
  })

  it('the whole window runs', async () => {
    expect((await daily(rollup(startOfDay()), 24)).verdict).toBe('will_run')
  })

  it('MinimumCount(-1): one key may be missing', async () => {
    const minimum = rollup(startOfDay(), {__type: 'airflow.partition_mappers.wait_policy.MinimumCount', __var: {n: -1}})
    expect((await daily(minimum, 23)).verdict).toBe('will_run')
  })

  it('a rollup airlock cannot count is waiting, never will_run', async () => {
    const paris = await daily(rollup(startOfDay('Europe/Paris')), 24)
    expect(paris.verdict).toBe('waiting')
    expect((paris.partitions![0] as {reason?: string}).reason).toContain(
      'a rollup: airlock cannot count the keys it needs (a mapper in timezone Europe/Paris)',
    )
  })
})
