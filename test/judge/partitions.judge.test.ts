import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {compareVersions} from '../../src/airflow/revisions.js'
import {runCli} from '../support/cli.js'
import {schemaOf} from '../support/complete.js'
import type {TestDatabase} from '../support/database.js'
import {snapshot, type Snapshot} from '../conformance/snapshot.js'
import {
  harness,
  installedReleases,
  partitionedDagsFolder,
  schedule,
  type Release,
  type ScheduledRun,
} from './support/airflow.js'
import {airflowDatabase, cloneDatabase} from './support/databases.js'
import {willRunRuns} from './support/airlock.js'
import {deliberate} from './support/differences.js'

/**
 * Partition keys (3.2+), differentially. The DAG files of test/judge/dags-partitioned, serialized
 * by the release; a producer run with a partition key and one without. In one twin the release's
 * execution API marks a producer task SUCCESS, in the other `airlock complete` does; the rows are
 * compared (asset_partition_dag_run and partitioned_asset_key_log included), then the release's
 * scheduler runs on both: `explain` must have named exactly the runs it creates, partition runs
 * by key. A partitioned consumer of a keyed event is queued through its partition mapper, which
 * airlock refuses to guess: that case checks the refusal (nothing written), and its
 * --allow-unqueued-consumers twin checks that everything but the partition rows matches.
 */

const KEY = '2026-03-01T06:00:00'
const partitionReleases = installedReleases().filter((release) => compareVersions(release.version, '3.2.0') >= 0)

type Airlock = 'writes' | 'refuses' | 'unqueued'
interface Case {
  run: 'keyed' | 'unkeyed'
  task: string
  airlock: Airlock
}

const cases: Record<string, Case> = {
  'a keyed event queues no consumer without a partitioned timetable': {
    run: 'keyed',
    task: 'make_plain',
    airlock: 'writes',
  },
  'a key-less event for partitioned consumers: the missing-partition-key log row': {
    run: 'unkeyed',
    task: 'make_a',
    airlock: 'writes',
  },
  'a keyed event for partitioned consumers: airlock refuses and writes nothing': {
    run: 'keyed',
    task: 'make_a',
    airlock: 'refuses',
  },
  'a keyed event with --allow-unqueued-consumers: all but the partition runs': {
    run: 'keyed',
    task: 'make_a',
    airlock: 'unqueued',
  },
}

const dropped: TestDatabase[] = []
const compared = new Map<string, number>()
afterAll(async () => {
  for (const database of dropped) await database.drop()
  for (const [version, count] of compared)
    process.stderr.write(`airlock judge lane: Airflow ${version} partition keys: ${count} cases compared\n`)
})

const tasks = ['make_a', 'make_b', 'make_plain']

async function world(release: Release): Promise<TestDatabase> {
  const database = await airflowDatabase(release.version)
  dropped.push(database)
  await harness(
    release,
    database.url,
    [
      {op: 'reserialize'},
      {op: 'trigger', dag: 'keyed_producer', run_id: 'keyed', partition_key: KEY},
      {op: 'trigger', dag: 'keyed_producer', run_id: 'unkeyed'},
      ...['keyed', 'unkeyed'].flatMap((run) =>
        tasks.map((task) => ({op: 'start' as const, dag: 'keyed_producer', run_id: run, task})),
      ),
    ],
    partitionedDagsFolder,
  )
  await database.knex.destroy()
  return database
}

/** A scheduled run as explain names it: the DAG, and a partition run's key. */
const named = (runs: ScheduledRun[]) =>
  runs.map((run) => (run.partition_key === null ? run.dag_id : `${run.dag_id} key=${run.partition_key}`)).sort()

interface Side {
  rows: Snapshot
  explained: string[]
  scheduled: string[]
}

async function side(release: Release, database: TestDatabase, test: Case, since: Date): Promise<Side> {
  const explained = await willRunRuns(database)
  let scheduled: string[] = []
  const tiKey = {dag_id: 'keyed_producer', run_id: test.run, task_id: test.task, map_index: -1}
  const rows = await snapshot(database.knex, await schemaOf(database.knex), since, tiKey, async () => {
    const runs = await schedule(release, database.url, partitionedDagsFolder)
    scheduled = named(runs)
    return runs.map((run) => ({
      dagId: run.dag_id,
      runId: run.run_id,
      runAfter: new Date(run.run_after!),
      eventIds: run.event_ids,
    }))
  })
  return {rows, explained, scheduled}
}

async function airlockComplete(database: TestDatabase, test: Case) {
  const {rows} = await database.knex.raw<{rows: Array<{id: string}>}>(
    'select id from task_instance where dag_id = ? and run_id = ? and task_id = ?',
    ['keyed_producer', test.run, test.task],
  )
  const input = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-judge-')), 'tis.ndjson')
  await fs.writeFile(input, JSON.stringify({ti_id: rows[0]!.id}) + '\n')
  const extra = test.airlock === 'unqueued' ? ['--allow-unqueued-consumers'] : []
  return runCli(['complete', '--database-url', database.url, '--from-file', input, '--yes', '--json', ...extra])
}

/** The rows besides the partition runs, and runs the scheduler made from them. */
const withoutPartitionRuns = (rows: Snapshot): Snapshot => ({
  ...rows,
  partitionRuns: [],
  keyLog: [],
  runs: rows.runs.filter((run) => !run.startsWith('on_a_')),
})

describe.each(partitionReleases)('Airflow $version: partition keys beside airlock complete', (release) => {
  let base: TestDatabase
  beforeAll(async () => {
    base = await world(release)
  })

  it.concurrent.each(Object.entries(cases))('%s', async (_name, test) => {
    const airflow = await cloneDatabase(base.name)
    const airlock = await cloneDatabase(base.name)
    dropped.push(airflow, airlock)
    const since = new Date(Date.now() - 1000)
    await harness(
      release,
      airflow.url,
      [{op: 'succeed', dag: 'keyed_producer', run_id: test.run, task: test.task}],
      partitionedDagsFolder,
    )
    const done = await airlockComplete(airlock, test)
    const theirs = await side(release, airflow, test, since)
    const ours = await side(release, airlock, test, since)

    // explain, on either twin, named exactly the runs the release's scheduler then created.
    expect(theirs.explained).toEqual(theirs.scheduled)
    expect(ours.explained).toEqual(ours.scheduled)

    if (test.airlock === 'refuses') {
      const item = (JSON.parse(done.stdout) as {result: {items: Array<{outcome: string; detail?: string}>}}).result
        .items[0]!
      expect({code: done.code, outcome: item.outcome}).toEqual({code: 3, outcome: 'unsupported_consumer'})
      expect(item.detail).toMatch(/on_a_and_b/)
      // Nothing written: the task instance still running, no event, queue row, partition run or log row.
      expect(ours.rows.taskInstance.state).toBe('running')
      expect([ours.rows.events, ours.rows.queue, ours.rows.partitionRuns, ours.rows.logs]).toEqual([[], [], [], []])
      // What airlock declined to guess: Airflow mapped the key per consumer.
      expect(theirs.rows.partitionRuns!.map((run) => run.split(' created_at')[0])).toEqual([
        `on_a_and_b key=${KEY}`,
        'on_a_daily key=2026-03-01',
      ])
    } else {
      expect({code: done.code, stderr: done.stderr}).toEqual({code: 0, stderr: expect.any(String)})
      if (test.airlock === 'unqueued') {
        expect(ours.rows.partitionRuns).toEqual([])
        expect(deliberate(release, withoutPartitionRuns(ours.rows))).toEqual(
          deliberate(release, withoutPartitionRuns(theirs.rows)),
        )
      } else {
        expect(deliberate(release, ours.rows)).toEqual(deliberate(release, theirs.rows))
      }
    }
    compared.set(release.version, (compared.get(release.version) ?? 0) + 1)
  })
})

/**
 * The partition step beside `explain`: Airflow's own success path queues both producer tasks'
 * events for the keyed run, then the database is changed the way operators and the DAG processor
 * change it, and the release's scheduler runs. `explain` must name exactly the partition runs it
 * creates. `since` names the first release a case applies to.
 */
const stepCases: Record<string, {since?: string; change?: string}> = {
  'both assets received': {},
  'the consumer DAG is paused': {change: `update dag set is_paused = true where dag_id = 'on_a_and_b'`},
  'the consumer DAG is stale (its file is gone)': {
    change: `update dag set is_stale = true where dag_id = 'on_a_and_b'`,
  },
  'an asset it received went inactive': {
    change: `delete from asset_active where name = 'daily_b'`,
  },
  'a pending row without a rollup fingerprint (written before 3.3)': {
    since: '3.3.0',
    change: `update asset_partition_dag_run set rollup_fingerprint = null where target_dag_id = 'on_a_and_b'`,
  },
  'a pending row queued under another mapper definition': {
    since: '3.3.0',
    change: `update asset_partition_dag_run set rollup_fingerprint = '{"daily_a|s3://judge/daily_a": {}}' where target_dag_id = 'on_a_daily'`,
  },
}

describe.each(partitionReleases)('Airflow $version: the partition step beside explain', (release) => {
  let base: TestDatabase
  beforeAll(async () => {
    const world = await airflowDatabase(release.version)
    dropped.push(world)
    await harness(
      release,
      world.url,
      [
        {op: 'reserialize'},
        {op: 'trigger', dag: 'keyed_producer', run_id: 'keyed', partition_key: KEY},
        ...['make_a', 'make_b'].flatMap((task) => [
          {op: 'start' as const, dag: 'keyed_producer', run_id: 'keyed', task},
          {op: 'succeed' as const, dag: 'keyed_producer', run_id: 'keyed', task},
        ]),
      ],
      partitionedDagsFolder,
    )
    await world.knex.destroy()
    base = world
  })

  const applicable = Object.entries(stepCases).filter(
    ([, test]) => !test.since || compareVersions(release.version, test.since) >= 0,
  )
  it.concurrent.each(applicable)('%s', async (_name, test) => {
    const database = await cloneDatabase(base.name)
    dropped.push(database)
    if (test.change) await database.knex.raw(test.change)
    const explained = await willRunRuns(database)
    const scheduled = named(await schedule(release, database.url, partitionedDagsFolder))
    expect(explained).toEqual(scheduled)
    compared.set(release.version, (compared.get(release.version) ?? 0) + 1)
  })
})
