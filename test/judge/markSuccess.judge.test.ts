import {afterAll, describe, expect, it} from 'vitest'

import {runCli} from '../support/cli.js'
import type {TestDatabase} from '../support/database.js'
import {harness, installedReleases, type Release} from './support/airflow.js'
import {airflowDatabase, cloneDatabase} from './support/databases.js'

/**
 * `complete --continue-run` beside the UI's mark-success, differentially. The world: DAG `chain`
 * (extract >> transform >> load, extract >> audit; test/judge/dags/chain.py) serialized by the
 * release, a run in which extract failed, its downstream upstream_failed, the run failed. In one
 * twin the release's REST mark-success (`patch_task_instance`, new_state=success, which calls
 * `set_task_instance_state`) marks extract; in the other `airlock complete --from-state failed
 * --continue-run --no-events` does. Every task instance of the run (state, try, whether it was
 * archived and given a new id), its history rows and the run itself must come out the same.
 * (`--no-events`: the REST mark-success registers no asset events; writing them is what airlock
 * adds, compared in successPath.judge.test.ts.)
 */

const dropped: TestDatabase[] = []
afterAll(async () => {
  for (const database of dropped) await database.drop()
})

interface RunRows {
  taskInstances: string[]
  history: string[]
  run: string
}

async function rowsOf(database: TestDatabase, idsBefore: Map<string, string>, since: Date): Promise<RunRows> {
  const {rows: tis} = await database.knex.raw<{
    rows: Array<{
      id: string
      task_id: string
      state: string | null
      try_number: number
      max_tries: number
      end_date: Date | null
    }>
  }>(
    "select id, task_id, state, try_number, max_tries, end_date from task_instance where dag_id = 'chain' and run_id = 'judge' order by task_id",
  )
  const {rows: history} = await database.knex.raw<{rows: Array<{task_id: string; try_number: number; state: string}>}>(
    "select task_id, try_number, state from task_instance_history where dag_id = 'chain' and run_id = 'judge' order by task_id, try_number",
  )
  const {rows: runs} = await database.knex.raw<{
    rows: Array<{state: string; queued_at: Date | null; end_date: Date | null; clear_number: number}>
  }>("select state, queued_at, end_date, clear_number from dag_run where dag_id = 'chain' and run_id = 'judge'")
  const run = runs[0]!
  return {
    taskInstances: tis.map(
      (ti) =>
        `${ti.task_id} state=${ti.state} try=${ti.try_number} max_tries=${ti.max_tries} ` +
        `new_id=${ti.id !== idsBefore.get(ti.task_id)} ended=${ti.end_date === null ? 'no' : ti.end_date >= since ? 'now' : 'before'}`,
    ),
    history: history.map((h) => `${h.task_id} try=${h.try_number} state=${h.state}`),
    run:
      `state=${run.state} clear_number=${run.clear_number} queued_at=${run.queued_at === null ? 'null' : run.queued_at >= since ? 'new' : 'old'} ` +
      `end_date=${run.end_date === null ? 'null' : 'set'}`,
  }
}

describe.each(installedReleases())(
  'Airflow $version: the UI mark-success beside complete --continue-run',
  (release: Release) => {
    it('marks the failed task, clears its failed and upstream_failed downstream, queues the run: the same rows', async () => {
      const world = await airflowDatabase(release.version)
      dropped.push(world)
      await harness(release, world.url, [
        {op: 'reserialize'},
        {op: 'trigger', dag: 'chain', run_id: 'judge'},
        {
          op: 'states',
          dag: 'chain',
          run_id: 'judge',
          states: {extract: 'failed', transform: 'upstream_failed', load: 'upstream_failed', audit: 'upstream_failed'},
          run_state: 'failed',
        },
      ])
      const {rows} = await world.knex.raw<{rows: Array<{id: string; task_id: string}>}>(
        "select id, task_id from task_instance where dag_id = 'chain' and run_id = 'judge'",
      )
      const idsBefore = new Map(rows.map((row) => [row.task_id, row.id]))
      await world.knex.destroy()
      const airflow = await cloneDatabase(world.name)
      const airlock = await cloneDatabase(world.name)
      dropped.push(airflow, airlock)
      const since = new Date(Date.now() - 1000)

      await harness(release, airflow.url, [{op: 'mark_success', dag: 'chain', run_id: 'judge', task: 'extract'}])
      const done = await runCli([
        'complete',
        '--database-url',
        airlock.url,
        '--ti-id',
        idsBefore.get('extract')!,
        '--from-state',
        'failed',
        '--continue-run',
        '--no-events',
        '--yes',
        '--json',
      ])
      expect({code: done.code, stdout: done.stdout}).toEqual({
        code: 0,
        stdout: expect.stringContaining('"outcome":"completed"'),
      })

      const expected = await rowsOf(airflow, idsBefore, since)
      expect(await rowsOf(airlock, idsBefore, since)).toEqual(expected)
      // The world is not trivial: the downstream was cleared and the run put back.
      expect(expected.taskInstances.filter((line) => line.includes('state=null'))).toHaveLength(3)
    })
  },
)
