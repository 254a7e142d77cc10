import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import {schemaOf} from '../support/complete.js'
import type {TestDatabase} from '../support/database.js'
import {snapshot, type Snapshot} from '../conformance/snapshot.js'
import type {CreatedRun} from '../conformance/scheduler.js'
import {
  harness,
  installedReleases,
  schedule,
  type Emission,
  type Release,
  type ScheduledRun,
} from './support/airflow.js'
import {airflowDatabase, cloneDatabase} from './support/databases.js'
import {airlockEvents, willRun} from './support/airlock.js'
import {deliberate, inactiveOutletOn30} from './support/differences.js'

/**
 * The success path, differentially: one world (the DAG files of test/judge/dags, serialized by the
 * release's own DAG processor, a run triggered and its task instance started by Airflow's code),
 * cloned twice. In one twin the release's execution API marks the task instance SUCCESS with
 * what the task SDK sends (ti_update_state → register_asset_changes_in_db → AssetManager); in the
 * other `airlock complete` marks it, with the same outlet events. Every row either wrote is read
 * back (test/conformance/snapshot.ts) and then the release's scheduler creates runs on each twin:
 * the two must agree, except where support/differences.ts lists a deliberate difference.
 */

interface Case {
  task: string
  emit: Emission[]
  /** SQL run on the world before either twin's success. */
  before?: string
  /** Passed through a deliberate difference of its own (support/differences.ts). */
  departs?: (release: Release, side: Snapshot) => Snapshot
}

const cases: Record<string, Case> = {
  'two outlets, one with the extra the task set': {
    task: 'load',
    emit: [{asset: 'orders', uri: 's3://judge/orders', extra: {rows: 3}}],
  },
  'two outlets and no extras': {task: 'load', emit: []},
  'outlets declared by Asset.ref(name=…) and Asset.ref(uri=…)': {task: 'by_ref', emit: []},
  'an asset declared directly and by reference': {task: 'twice', emit: []},
  'an alias emission to an existing asset, with its extra': {
    task: 'via_alias',
    emit: [{alias: 'dynamic', asset: 'orders', uri: 's3://judge/orders', extra: {source: 'alias'}}],
  },
  'an alias emission to an asset no DAG declares (created by the success)': {
    task: 'via_alias',
    emit: [{alias: 'dynamic', asset: 'refunds', uri: 's3://judge/refunds', extra: {}}],
  },
  'an outlet whose asset is no longer active (no DAG file declares it)': {
    task: 'load',
    emit: [],
    before: `delete from asset_active where name = 'customers'`,
    departs: inactiveOutletOn30,
  },
  'an extra for an asset that is not an outlet is dropped': {
    task: 'load',
    emit: [{asset: 'invoices', uri: 's3://judge/invoices', extra: {ignored: true}}],
  },
}

const toCreated = (runs: ScheduledRun[]): CreatedRun[] =>
  runs.map((run) => ({
    dagId: run.dag_id,
    runId: run.run_id,
    runAfter: new Date(run.run_after!),
    eventIds: run.event_ids,
  }))

const dropped: TestDatabase[] = []
const compared = new Map<string, number>()
afterAll(async () => {
  for (const database of dropped) await database.drop()
  for (const [version, cases] of compared)
    process.stderr.write(`airlock judge lane: Airflow ${version} success path: ${cases} worlds compared row by row\n`)
})

const producerTasks = [...new Set(Object.values(cases).map((test) => test.task))]

/** The world, once per release: the DAG files serialized, a producer run, each task instance running. */
async function world(release: Release): Promise<TestDatabase> {
  const database = await airflowDatabase(release.version)
  dropped.push(database)
  await harness(release, database.url, [
    {op: 'reserialize'},
    {op: 'trigger', dag: 'producer', run_id: 'judge'},
    ...producerTasks.map((task) => ({op: 'start' as const, dag: 'producer', run_id: 'judge', task})),
  ])
  await database.knex.destroy()
  return database
}

interface Side {
  rows: Snapshot
  /** What explain said before the scheduler ran, and the DAGs the scheduler then created runs for. */
  explained: string[]
  scheduled: string[]
}

async function sideBySide(release: Release, base: TestDatabase, test: Case): Promise<{airflow: Side; airlock: Side}> {
  const airflow = await cloneDatabase(base.name)
  const airlock = await cloneDatabase(base.name)
  dropped.push(airflow, airlock)
  const tiKey = {dag_id: 'producer', run_id: 'judge', task_id: test.task, map_index: -1}
  if (test.before) for (const twin of [airflow, airlock]) await twin.knex.raw(test.before)
  const since = new Date(Date.now() - 1000)

  await harness(release, airflow.url, [
    {op: 'succeed', dag: 'producer', run_id: 'judge', task: test.task, emit: test.emit},
  ])

  const {rows} = await airlock.knex.raw<{rows: Array<{id: string}>}>(
    'select id from task_instance where dag_id = ? and run_id = ? and task_id = ?',
    ['producer', 'judge', test.task],
  )
  const input = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-judge-')), 'tis.ndjson')
  await fs.writeFile(input, JSON.stringify({ti_id: rows[0]!.id, outlet_events: airlockEvents(test.emit)}) + '\n')
  const done = await runCli(['complete', '--database-url', airlock.url, '--from-file', input, '--yes', '--json'])
  expect({code: done.code, stderr: done.stderr}).toEqual({code: 0, stderr: expect.any(String)})

  const side = async (database: TestDatabase): Promise<Side> => {
    const explained = await willRun(database)
    let scheduled: string[] = []
    const snap = await snapshot(database.knex, await schemaOf(database.knex), since, tiKey, async () => {
      const runs = await schedule(release, database.url)
      scheduled = runs.map((run) => run.dag_id).sort()
      return toCreated(runs)
    })
    return {rows: snap, explained, scheduled}
  }
  return {airflow: await side(airflow), airlock: await side(airlock)}
}

describe.each(installedReleases())('Airflow $version: its success path beside airlock complete', (release) => {
  let base: TestDatabase
  beforeAll(async () => {
    base = await world(release)
  })

  it.concurrent.each(Object.entries(cases))('%s', async (_name, test) => {
    const {airflow, airlock} = await sideBySide(release, base, test)
    const departs = test.departs ?? ((_release: Release, side: Snapshot) => side)
    expect(deliberate(release, departs(release, airlock.rows))).toEqual(
      deliberate(release, departs(release, airflow.rows)),
    )
    // explain, on either twin, named exactly the DAGs the release's scheduler then ran.
    expect(airflow.explained).toEqual(airflow.scheduled)
    expect(airlock.explained).toEqual(airlock.scheduled)
    compared.set(release.version, (compared.get(release.version) ?? 0) + 1)
  })
})
