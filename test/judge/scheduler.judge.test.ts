import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {compareVersions} from '../../src/airflow/revisions.js'
import {runCli} from '../support/cli.js'
import type {TestDatabase} from '../support/database.js'
import {
  dagsFolder,
  harness,
  installedReleases,
  schedule,
  type Release,
  type ScheduledRun,
  type Step,
} from './support/airflow.js'
import {airlockEvents, willRun} from './support/airlock.js'
import {airflowDatabase, cloneDatabase} from './support/databases.js'
import {randomWorld, type RandomWorld} from './support/randomWorld.js'

/**
 * The scheduler, differentially, on random worlds: conditions over 2–6 assets with `&`, `|`,
 * `Asset.ref` and an alias, paused, stale and import-error consumers, consumers held by
 * max_active_runs, producers declaring
 * by reference. Airflow's DAG processor serializes the DAG files; in one twin the release's
 * execution API succeeds the chosen task instances, in the other `airlock complete` does. Then on
 * each twin `airlock explain` says which DAGs will run, and the release's scheduler step runs: its
 * runs must be exactly those, and the same on both twins.
 *
 * AIRLOCK_JUDGE_WORLDS sets the number of worlds per release (default 6), AIRLOCK_JUDGE_SEED the
 * first seed (default: a new one each run, printed with every failure).
 */
const count = Number(process.env.AIRLOCK_JUDGE_WORLDS ?? 6)
const firstSeed = Number(process.env.AIRLOCK_JUDGE_SEED ?? Math.floor(Math.random() * 1_000_000))
const seeds = Array.from({length: count}, (_, i) => firstSeed + i)
process.stderr.write(
  `airlock judge lane: scheduler worlds from seed ${firstSeed} (AIRLOCK_JUDGE_SEED), ${count} per release\n`,
)

const dropped: TestDatabase[] = []
/** Per release: worlds compared, runs the scheduler created on the airlock twin, DAGs it did not run. */
const tally = new Map<string, {worlds: number; runs: number; idle: number}>()
afterAll(async () => {
  for (const database of dropped) await database.drop()
  for (const [version, {worlds, runs, idle}] of tally)
    process.stderr.write(
      `airlock judge lane: Airflow ${version} scheduler: ${worlds} random worlds, ${runs} runs created and predicted, ${idle} consumers left waiting or blocked as predicted\n`,
    )
})

async function scheduled(release: Release, database: TestDatabase, dags: string): Promise<string[]> {
  return (await schedule(release, database.url, dags)).map((run) => run.dag_id).sort()
}

async function compare(release: Release, world: RandomWorld) {
  const dags = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-judge-dags-'))
  await fs.writeFile(path.join(dags, 'world.py'), world.dagFile)
  const base = await airflowDatabase(release.version)
  dropped.push(base)
  const setup: Step[] = [
    {op: 'reserialize'},
    {op: 'trigger', dag: 'p', run_id: 'judge'},
    ...world.complete.map((task) => ({op: 'start' as const, dag: 'p', run_id: 'judge', task})),
    ...world.busy.map((dag) => ({op: 'trigger' as const, dag, run_id: 'busy'})),
  ]
  await harness(release, base.url, setup, dags)
  // What the DAG processor records when a consumer's file is gone or no longer parses.
  if (world.stale.length > 0) await base.knex('dag').whereIn('dag_id', world.stale).update({is_stale: true})
  if (world.importErrors.length > 0)
    await base.knex('dag').whereIn('dag_id', world.importErrors).update({has_import_errors: true})
  await base.knex.destroy()
  const airflow = await cloneDatabase(base.name)
  const airlock = await cloneDatabase(base.name)
  dropped.push(airflow, airlock)

  const emissionFor = (task: string) =>
    task === 'via_alias' && world.aliasTarget
      ? [{alias: 'alias', asset: world.aliasTarget, uri: `s3://judge/${world.aliasTarget}`, extra: {}}]
      : []
  if (world.complete.length > 0) {
    await harness(
      release,
      airflow.url,
      world.complete.map((task) => ({op: 'succeed', dag: 'p', run_id: 'judge', task, emit: emissionFor(task)})),
      dags,
    )
    const {rows} = await airlock.knex.raw<{rows: Array<{id: string; task_id: string}>}>(
      "select id, task_id from task_instance where dag_id = 'p' and run_id = 'judge' and state = 'running'",
    )
    const input = path.join(dags, 'tis.ndjson')
    await fs.writeFile(
      input,
      rows
        .map((row) =>
          JSON.stringify({
            ti_id: row.id,
            outlet_events: airlockEvents(emissionFor(row.task_id)),
          }),
        )
        .join('\n') + '\n',
    )
    // Items commit in any order; the lane compares what the scheduler then sees, not the order.
    const done = await runCli(['complete', '--database-url', airlock.url, '--from-file', input, '--yes', '--json'])
    if (done.code !== 0) throw new Error(`complete exited ${done.code}: ${done.stdout}\n${done.stderr}`)
  }

  const predicted = {airflow: await willRun(airflow), airlock: await willRun(airlock)}
  const ran = {airflow: await scheduled(release, airflow, dags), airlock: await scheduled(release, airlock, dags)}
  return {predicted, ran}
}

describe.each(installedReleases())('Airflow $version: its scheduler after airlock, on random worlds', (release) => {
  it.concurrent.each(seeds)('seed %i', async (seed) => {
    const world = randomWorld(seed)
    const {predicted, ran} = await compare(release, world)
    const context = `seed ${seed} (AIRLOCK_JUDGE_SEED=${seed} AIRLOCK_JUDGE_WORLDS=1): ${world.describe}`
    expect({context, runs: ran.airlock}).toEqual({context, runs: ran.airflow})
    expect({context, explain: predicted.airlock}).toEqual({context, explain: ran.airlock})
    expect({context, explain: predicted.airflow}).toEqual({context, explain: ran.airflow})
    const counts = tally.get(release.version) ?? {worlds: 0, runs: 0, idle: 0}
    const consumers = (world.dagFile.match(/^with DAG\("c\d+"/gm) ?? []).length
    tally.set(release.version, {
      worlds: counts.worlds + 1,
      runs: counts.runs + ran.airlock.length,
      idle: counts.idle + consumers - ran.airlock.length,
    })
  })
})

/**
 * After the other writes: `replay-events` after an incident lost a success's events, and `undo`
 * of a completion. Airflow has no twin for these, so the release's scheduler is the judge of what
 * `explain` said before it ran.
 */
describe.each(installedReleases())('Airflow $version: its scheduler after replay-events and undo', (release) => {
  async function producerWorld(): Promise<TestDatabase> {
    const world = await airflowDatabase(release.version)
    dropped.push(world)
    await harness(release, world.url, [
      {op: 'reserialize'},
      {op: 'trigger', dag: 'producer', run_id: 'judge'},
      {op: 'start', dag: 'producer', run_id: 'judge', task: 'load'},
    ])
    return world
  }
  const consumed = async (database: TestDatabase) =>
    Number(
      (await database.knex.raw<{rows: Array<{n: string}>}>('select count(*) as n from dagrun_asset_event')).rows[0]!.n,
    )

  it('replay-events after the events were lost: explain names the runs the scheduler creates, on the replayed events', async () => {
    const world = await producerWorld()
    await harness(release, world.url, [{op: 'succeed', dag: 'producer', run_id: 'judge', task: 'load', emit: []}])
    // The incident: the success committed, its events and queue rows did not survive.
    await world.knex.raw('delete from asset_dag_run_queue')
    await world.knex.raw('delete from asset_event')
    expect(await willRun(world)).toEqual([])

    // From 3.2.0 the worker's success leaves a `log` row `success` naming the try: evidence that
    // its events were written, so they are lost and replayed. Before 3.2.0 nothing in the database
    // tells a worker's success from a mark-success: the try is `unknown`, nothing is written (the
    // scheduler agrees: no run), and only --include-unknown replays it.
    const replay = (...flags: string[]) =>
      runCli(['replay-events', '--database-url', world.url, '--dag-id', 'producer', '--yes', '--json', ...flags])
    const before32 = compareVersions(release.version, '3.2.0') < 0
    if (before32) {
      const refused = await replay()
      expect(refused.stdout).toContain('"unknown"')
      expect(await willRun(world)).toEqual([])
      expect(await scheduled(release, world, dagsFolder)).toEqual([])
    }
    const replayed = await replay(...(before32 ? ['--include-unknown'] : []))
    expect({code: replayed.code, stdout: replayed.stdout}).toEqual({
      code: 0,
      stdout: expect.stringContaining('"replayed"'),
    })
    const predicted = await willRun(world)
    expect(predicted).toEqual(['on_both', 'on_either', 'on_nested', 'on_orders'])
    expect(await scheduled(release, world, dagsFolder)).toEqual(predicted)
    expect(await consumed(world)).toBeGreaterThan(0)
  })

  it('audit-events --fix of a duplicate: the runs the scheduler creates take the kept events, as without it', async () => {
    const world = await producerWorld()
    await harness(release, world.url, [{op: 'succeed', dag: 'producer', run_id: 'judge', task: 'load', emit: []}])
    const twin = await cloneDatabase(world.name)
    dropped.push(twin)
    // The double registration of an HA race: a second `orders` event of the same try, a second later.
    const {rows: copies} = await world.knex.raw<{rows: Array<{id: number}>}>(
      `insert into asset_event (asset_id, extra, source_task_id, source_dag_id, source_run_id, source_map_index, "timestamp")
       select e.asset_id, e.extra, e.source_task_id, e.source_dag_id, e.source_run_id, e.source_map_index, e."timestamp" + interval '1 second'
         from asset_event e join asset a on a.id = e.asset_id where a.name = 'orders'
       returning id`,
    )
    expect(copies).toHaveLength(1)
    const fixed = await runCli([
      'audit-events',
      '--database-url',
      world.url,
      '--fix',
      '--no-dry-run',
      '--yes',
      '--json',
    ])
    // Exit 6: the report names the duplicate it found (and removed: `fix.removed`).
    expect({
      code: fixed.code,
      removed: (JSON.parse(fixed.stdout) as {result: {fix: {removed: number}}}).result.fix.removed,
    }).toEqual({code: 6, removed: 1})
    const left = await world.knex.raw<{rows: unknown[]}>('select 1 from asset_event where id = ?', [copies[0]!.id])
    expect(left.rows).toEqual([])

    const predicted = await willRun(world)
    expect(predicted).toEqual(['on_both', 'on_either', 'on_nested', 'on_orders'])
    const runs = await schedule(release, world.url)
    expect(runs.map((run) => run.dag_id).sort()).toEqual(predicted)
    // Each run took the same events as the twin that never had the duplicate.
    const takes = (created: ScheduledRun[]) => created.map((run) => `${run.dag_id}: ${run.event_ids.join(',')}`).sort()
    expect(takes(runs)).toEqual(takes(await schedule(release, twin.url)))
  })

  it('undo of a completion before the scheduler saw it: explain and the scheduler agree nothing runs', async () => {
    const world = await producerWorld()
    const {rows} = await world.knex.raw<{rows: Array<{id: string}>}>(
      "select id from task_instance where dag_id = 'producer' and task_id = 'load'",
    )
    const done = await runCli(['complete', '--database-url', world.url, '--ti-id', rows[0]!.id, '--yes', '--json'])
    const logId = /"log_id":(\d+)/.exec(done.stdout)?.[1]
    expect({code: done.code, logId}).toEqual({code: 0, logId: expect.stringMatching(/^\d+$/)})
    expect(await willRun(world)).toEqual(['on_both', 'on_either', 'on_nested', 'on_orders'])

    const undone = await runCli(['undo', '--database-url', world.url, '--log-id', logId!, '--yes', '--json'])
    expect({code: undone.code, stderr: undone.stderr}).toEqual({code: 0, stderr: expect.any(String)})
    expect(await willRun(world)).toEqual([])
    expect(await scheduled(release, world, dagsFolder)).toEqual([])
  })
})
