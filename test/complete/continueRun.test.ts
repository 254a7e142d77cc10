import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {clearSubset, taskGraph} from '../../src/airflow/serializedDag.js'
import {compareVersions} from '../../src/airflow/revisions.js'
import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {airflowMarksSuccess, runSnapshot} from '../conformance/airflowMarkSuccess.js'
import {envelope, runCli} from '../support/cli.js'
import {completeOne, schemaOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {addDagVersion, scenario, type ProducerOptions, type World} from '../support/scenario.js'

/**
 * `complete --continue-run`: a failed task whose work is done is marked success and its run
 * carries on, as Airflow's REST mark-success (`PATCH …/taskInstances/{task_id}`,
 * `new_state=success`) leaves it. The world mirrors Airflow's
 * tests/unit/models/test_dag.py::test_set_task_instance_state: `load` failed; downstream
 * `report` (mapped, upstream_failed), `notify` (failed, with a reschedule and a note), `archive`
 * (success: stays), `audit` (skipped: stays); `side` failed but not downstream (stays); the run
 * failed.
 */
const world = (knex: Knex, options: Partial<ProducerOptions> = {}) =>
  scenario(knex)
    .producer('etl', {
      tasks: ['extract', 'load', 'report', 'notify', 'archive', 'audit', 'side'],
      outlets: 1,
      state: {
        extract: 'success',
        load: 'failed',
        report: 'upstream_failed',
        notify: 'failed',
        archive: 'success',
        audit: 'skipped',
        side: 'failed',
      },
      downstream: {extract: ['load', 'side'], load: ['report', 'notify', 'archive', 'audit'], notify: ['audit']},
      mappedTasks: {report: [0, 1]},
      retries: {notify: 2, report: 1},
      runState: 'failed',
      ...options,
    })
    .build()

/** Rows Airflow keeps beside a task instance: a reschedule of `notify` (deleted by the clear) and its note (follows the new id). */
async function extras(knex: Knex, w: World): Promise<void> {
  const notify = w.ti('etl', 'notify')
  const now = new Date()
  await knex('task_reschedule').insert({
    ti_id: notify.id,
    start_date: now,
    end_date: now,
    duration: 1,
    reschedule_date: now,
  })
  await knex('task_instance_note').insert({
    ti_id: notify.id,
    user_id: 'ops',
    content: 'paged',
    created_at: now,
    updated_at: now,
  })
}

const originalIds = (w: World) => new Map(w.tis('etl').map((t) => [`${t.task_id}[${t.map_index}]`, t.id]))

const versions: Array<(typeof fixtureVersions)[number] | 'dump'> = [...fixtureVersions]
if (await dumpAvailable()) versions.push('dump')

/** A fixture database, or the restored Airflow 3.0.0 dump (its real tables, keys and cascades). */
async function databaseFor(version: (typeof versions)[number], pool: number): Promise<TestDatabase> {
  if (version !== 'dump') return createTestDatabase(version, pool)
  const db = await createTestDatabase('empty', pool)
  await restoreDump(db.knex)
  return db
}

describe.each(versions)('complete --continue-run on %s', (version) => {
  let airlock: TestDatabase
  let airflow: TestDatabase
  const behaviourVersion = version === 'dump' ? '3.0' : version
  beforeAll(async () => {
    ;[airlock, airflow] = await Promise.all([databaseFor(version, 4), databaseFor(version, 2)])
  })
  afterAll(async () => {
    await airlock?.drop()
    await airflow?.drop()
  })

  it("writes what Airflow's mark-success writes: failed downstream cleared (archived, new id, state NULL), the rest untouched, the run queued", async () => {
    const [ours, theirs] = await Promise.all([world(airlock.knex), world(airflow.knex)])
    await Promise.all([extras(airlock.knex, ours), extras(airflow.knex, theirs)])
    const since = new Date(Date.now() - 1000)

    const result = await completeOne(airlock.knex, ours.ti('etl', 'load').id, {
      fromStates: ['failed'],
      continueRun: {behaviourVersion},
    })
    await airflowMarksSuccess(airflow.knex, await schemaOf(airflow.knex), theirs.ti('etl', 'load').id)

    expect(result.result).toEqual({outcome: 'completed'})
    const mine = await runSnapshot(airlock.knex, ours.run('etl').run_id, originalIds(ours), since)
    const airflows = await runSnapshot(airflow.knex, theirs.run('etl').run_id, originalIds(theirs), since)
    expect(mine).toEqual(airflows)
    // What test_set_task_instance_state asserts, on both sides.
    expect(mine.taskInstances).toEqual([
      'archive[-1] success try=1 max_tries=1 executor_id=- next=- id=kept',
      'audit[-1] skipped try=1 max_tries=1 executor_id=- next=- id=kept',
      'extract[-1] success try=1 max_tries=1 executor_id=- next=- id=kept',
      'load[-1] success try=1 max_tries=1 executor_id=- next=- id=kept',
      'notify[-1] none try=1 max_tries=3 executor_id=- next=- id=new',
      'report[0] none try=1 max_tries=2 executor_id=- next=- id=new',
      'report[1] none try=1 max_tries=2 executor_id=- next=- id=new',
      'side[-1] failed try=1 max_tries=1 executor_id=- next=- id=kept',
    ])
    expect(mine.history).toEqual([
      'notify[-1] try=1 failed archived_as=old id',
      'report[0] try=1 upstream_failed archived_as=old id',
      'report[1] try=1 upstream_failed archived_as=old id',
    ])
    expect(mine.run).toEqual(['queued clear_number=1 queued_at=now start=null end=null decided=null'])
    expect(mine.notes).toEqual(['notify: paged'])
    expect(mine.reschedules).toBe(0)

    // The item and the audit row name what was cleared.
    const report = (
      result as unknown as {
        report: {
          continue_run: {cleared: Array<{task_id: string; map_index: number; previous_state: string}>; dag_run: unknown}
        }
      }
    ).report.continue_run
    expect(report.cleared.map((c) => `${c.task_id}[${c.map_index}] ${c.previous_state}`)).toEqual([
      'notify[-1] failed',
      'report[0] upstream_failed',
      'report[1] upstream_failed',
    ])
    expect(report.dag_run).toMatchObject({previous_state: 'failed', state: 'queued'})
    const [log] = await airlock.knex('log').where({dag_id: 'etl', task_id: 'load', event: 'success'})
    const extra = JSON.parse(log.extra as string) as {
      airlock: {command: string; continue_run: {cleared: unknown[]; dag_run_previous_state: string}}
    }
    expect(extra.airlock.command).toBe('complete --continue-run')
    expect(extra.airlock.continue_run.cleared).toHaveLength(3)
    expect(extra.airlock.continue_run.dag_run_previous_state).toBe('failed')
  })

  /** Both sides on the same world: airlock's --continue-run and the transcription of Airflow's mark-success. */
  async function bothSides(options: Partial<ProducerOptions>, setup?: (knex: Knex, w: World) => Promise<void>) {
    const [ours, theirs] = await Promise.all([world(airlock.knex, options), world(airflow.knex, options)])
    await setup?.(airlock.knex, ours)
    await setup?.(airflow.knex, theirs)
    const since = new Date(Date.now() - 1000)
    const result = await completeOne(airlock.knex, ours.ti('etl', 'load').id, {
      fromStates: ['failed'],
      continueRun: {behaviourVersion},
    })
    await airflowMarksSuccess(airflow.knex, await schemaOf(airflow.knex), theirs.ti('etl', 'load').id)
    expect(result.result).toEqual({outcome: 'completed'})
    const mine = await runSnapshot(airlock.knex, ours.run('etl').run_id, originalIds(ours), since)
    expect(mine).toEqual(await runSnapshot(airflow.knex, theirs.run('etl').run_id, originalIds(theirs), since))
    return mine
  }

  it('a run still running: from 3.2 (apache/airflow #60848) its queued_at and clear_number move, its state kept', async () => {
    const mine = await bothSides({runState: 'running'})
    const reanchored = compareVersions(behaviourVersion, '3.2.0') >= 0 && version !== 'dump'
    expect(mine.run).toEqual([
      reanchored
        ? 'running clear_number=1 queued_at=now start=kept end=null decided=null'
        : 'running clear_number=0 queued_at=kept start=kept end=null decided=null',
    ])
  })

  it("retries from the run's own DAG version when the run has a bundle version, not the newer one", async () => {
    const mine = await bothSides({}, async (knex) => {
      await addDagVersion(knex, 'etl', (data) => {
        for (const task of data.dag.tasks) if (task.__var.task_id === 'notify') task.__var.retries = 7
      })
      await knex('dag_run').update({bundle_version: 'abc123'})
    })
    expect(mine.taskInstances).toContain('notify[-1] none try=1 max_tries=3 executor_id=- next=- id=new')
  })

  it("a task that leaves retries out takes the document's client_defaults (format 3, 3.1+)", async () => {
    const mine = await bothSides({retries: {report: 1}, clientDefaults: {retries: 4}})
    expect(mine.taskInstances).toContain('notify[-1] none try=1 max_tries=5 executor_id=- next=- id=new')
  })
})

describe('complete --continue-run, as an operator runs it', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.0', 4)
  })
  afterAll(async () => db?.drop())

  const states = async () =>
    (await db.knex('task_instance').where({dag_id: 'etl'}).orderBy(['task_id', 'map_index'])).map(
      (t: {task_id: string; map_index: number; state: string | null}) =>
        `${t.task_id}[${t.map_index}]=${t.state ?? 'none'}`,
    )

  it('--dry-run lists what would be cleared and writes nothing; the run then does it (exit 0)', async () => {
    const w = await world(db.knex)
    const before = await states()
    const dry = envelope(
      await runCli([
        'complete',
        '--database-url',
        db.url,
        '--ti-id',
        w.ti('etl', 'load').id,
        '--from-state',
        'failed',
        '--continue-run',
        '--dry-run',
        '--json',
      ]),
    ) as {
      result: {
        items: Array<{outcome: string; continue_run: {cleared: Array<{task_id: string}>; dag_run: {state: string}}}>
      }
    }
    expect(dry.result.items[0]!.outcome).toBe('would_complete')
    expect(dry.result.items[0]!.continue_run.cleared.map((c) => c.task_id)).toEqual(['notify', 'report', 'report'])
    expect(dry.result.items[0]!.continue_run.dag_run.state).toBe('queued')
    expect(await states()).toEqual(before)
    expect(await db.knex('task_instance_history').count({n: '*'}).first()).toEqual({n: '0'})

    const human = await runCli([
      'complete',
      '--database-url',
      db.url,
      '--ti-id',
      w.ti('etl', 'load').id,
      '--from-state',
      'failed',
      '--continue-run',
    ])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain('completed (was failed), cleared 3, run queued')
    expect((await db.knex('dag_run').where({dag_id: 'etl'}).first()).state).toBe('queued')
  })

  it('a clear airlock cannot reproduce is refused (exit 3, nothing written) and the table says why under it', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {
        tasks: ['load', 'report'],
        outlets: 1,
        state: {load: 'failed', report: 'upstream_failed'},
        serialized: 'none',
        runState: 'failed',
      })
      .build()
    const result = await runCli([
      'complete',
      '--database-url',
      db.url,
      '--ti-id',
      w.ti('etl', 'load').id,
      '--from-state',
      'failed',
      '--continue-run',
    ])
    expect(result.code).toBe(3)
    expect(result.stdout).toContain('unsupported_downstream (was failed)')
    expect(result.stdout).toMatch(/Why:\n {2}etl\/.+\/load: unsupported_downstream: DAG etl has no serialized DAG/)
    expect(
      (
        await db
          .knex('task_instance')
          .where({id: w.ti('etl', 'load').id})
          .first()
      ).state,
    ).toBe('failed')
  })

  it('a task with nothing failed downstream: marked success, the run left as it is (Airflow clears nothing, so it does not re-queue)', async () => {
    const w = await world(db.knex)
    const result = await completeOne(db.knex, w.ti('etl', 'side').id, {
      fromStates: ['failed'],
      continueRun: {behaviourVersion: '3.0'},
    })
    expect(result.result).toEqual({outcome: 'completed'})
    expect((await db.knex('dag_run').where({dag_id: 'etl'}).first()).state).toBe('failed')
    expect(await db.knex('task_instance_history').count({n: '*'}).first()).toEqual({n: '0'})
  })

  /** A scheduler-like writer holds `notify`'s row, and sets it scheduled while airlock waits for it after locking `load`. */
  async function raceOnNotify(w: World, retry?: {maxAttempts: number; baseDelayMs: number; maxDelayMs: number}) {
    const notify = w.ti('etl', 'notify')
    return whileRowLocked(db.knex, notify.id, async (holder) => {
      const completion = completeOne(db.knex, w.ti('etl', 'load').id, {
        fromStates: ['failed'],
        continueRun: {behaviourVersion: '3.0'},
        retry,
      })
      // airlock holds load's row and queues on notify's, in key order after it.
      await waitUntilAppBlocked(db.knex, `airlock:complete:${w.ti('etl', 'load').id}`)
      await holder.raw(`update task_instance set state = 'scheduled' where id = ?`, [notify.id])
      await holder.commit()
      return completion
    })
  }

  it('race: a scheduler-like writer moves a downstream row while airlock waits for it: the item starts again on a fresh plan and never clears what the scheduler took', async () => {
    const w = await world(db.knex)
    const result = await raceOnNotify(w)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.attempts).toBe(2)
    const after = await states()
    expect(after).toContain('notify[-1]=scheduled')
    expect(after).toContain('report[0]=none')
    const archived = await db
      .knex('task_instance_history')
      .orderBy(['task_id', 'map_index'])
      .select('task_id', 'map_index', 'state')
    expect(archived).toEqual([
      {task_id: 'report', map_index: 0, state: 'upstream_failed'},
      {task_id: 'report', map_index: 1, state: 'upstream_failed'},
    ])
  })

  it('race, on every attempt: downstream_changed (exit 3), and nothing at all written: no success, no clear, no audit row', async () => {
    const w = await world(db.knex)
    const before = await states()
    const result = await raceOnNotify(w, {maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1})
    expect(result.result).toMatchObject({outcome: 'downstream_changed'})
    expect((result.result as {detail: string}).detail).toContain('notify[-1]=failed')
    expect(await states()).toEqual(before.map((s) => (s === 'notify[-1]=failed' ? 'notify[-1]=scheduled' : s)))
    expect(await db.knex('task_instance_history').count({n: '*'}).first()).toEqual({n: '0'})
    expect((await db.knex('dag_run').where({dag_id: 'etl'}).first()).state).toBe('failed')
    expect(await db.knex('log').where({event: 'success'})).toEqual([])
  })

  it('race: the scheduler holds the run longer than the lock timeout: the item fails on the lock, nothing written, the scheduler commits', async () => {
    const w = await world(db.knex)
    const before = await states()
    const run = w.run('etl')
    const holder = await db.knex.transaction()
    await holder.raw('select 1 from dag_run where id = ? for update', [run.id])
    const result = await completeOne(db.knex, w.ti('etl', 'load').id, {
      fromStates: ['failed'],
      continueRun: {behaviourVersion: '3.0'},
      lockTimeoutMs: 600,
      retry: {maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1},
    })
    // The scheduler's own transaction was never blocked into an error: it updates and commits.
    await holder.raw(`update dag_run set last_scheduling_decision = now() where id = ?`, [run.id])
    await holder.commit()
    expect(result.result).toMatchObject({outcome: 'failed', kind: 'lock_timeout'})
    expect(await states()).toEqual(before)
    expect(await db.knex('task_instance_history').count({n: '*'}).first()).toEqual({n: '0'})
  })
})

describe('complete --continue-run, several items and several releases', () => {
  let dbs: Record<string, TestDatabase>
  beforeAll(async () => {
    const [v30, v32] = await Promise.all([createTestDatabase('3.0', 6), createTestDatabase('3.2', 2)])
    dbs = {'3.0': v30, '3.2': v32}
  })
  afterAll(async () => {
    for (const db of Object.values(dbs ?? {})) await db.drop()
  })

  it('every failed index of a mapped task at once (concurrency 4): each completed, the downstream cleared once, the run queued once', async () => {
    const db = dbs['3.0']!
    await scenario(db.knex)
      .producer('etl', {
        tasks: ['load', 'report'],
        outlets: 1,
        state: {load: 'failed', report: 'upstream_failed'},
        downstream: {load: ['report']},
        mappedTasks: {load: [0, 1, 2, 3]},
        runState: 'failed',
      })
      .build()
    const result = await runCli([
      'complete',
      '--database-url',
      db.url,
      '--dag-id',
      'etl',
      '--task-id',
      'load',
      '--from-state',
      'failed',
      '--continue-run',
      '--yes',
      '--json',
    ])
    expect(result.code).toBe(0)
    const out = envelope(result) as {
      result: {items: Array<{outcome: string; continue_run: {cleared: unknown[]}}>}
      warnings: string[]
    }
    expect(out.result.items.map((i) => i.outcome)).toEqual(['completed', 'completed', 'completed', 'completed'])
    // Whichever item came first cleared report; the others found nothing left to clear.
    expect(out.result.items.map((i) => i.continue_run.cleared.length).sort()).toEqual([0, 0, 0, 1])
    expect(await db.knex('task_instance_history').count({n: '*'}).first()).toEqual({n: '1'})
    expect(await db.knex('dag_run').where({dag_id: 'etl'}).first('state', 'clear_number')).toEqual({
      state: 'queued',
      clear_number: 1,
    })
    // 3.0's serialized DAG leaves out retries equal to [core] default_task_retries: said, not guessed silently.
    expect(out.warnings.join(' ')).toContain('max_tries of the cleared report counts 0 retries')
  })

  it.each(['3.0', '3.2'] as const)(
    'a run still running on %s: 3.0 leaves it as it is; from 3.2 its queued_at and clear_number move (apache/airflow #60848)',
    async (version) => {
      const db = dbs[version]!
      const w = await scenario(db.knex)
        .producer('etl', {
          tasks: ['load', 'report', 'other'],
          outlets: 1,
          state: {load: 'failed', report: 'upstream_failed'},
          downstream: {load: ['report']},
        })
        .build()
      const before = await db.knex('dag_run').where({dag_id: 'etl'}).first('queued_at', 'clear_number', 'start_date')
      const result = await completeOne(db.knex, w.ti('etl', 'load').id, {
        fromStates: ['failed'],
        continueRun: {behaviourVersion: version},
      })
      expect(result.result).toEqual({outcome: 'completed'})
      const after = await db
        .knex('dag_run')
        .where({dag_id: 'etl'})
        .first('state', 'queued_at', 'clear_number', 'start_date')
      expect(after.state).toBe('running')
      expect(after.start_date).toEqual(before.start_date)
      if (version === '3.0') expect(after).toMatchObject({clear_number: 0, queued_at: before.queued_at})
      else {
        expect(after.clear_number).toBe(1)
        expect(after.queued_at.getTime()).toBeGreaterThan(before.queued_at.getTime())
      }
    },
  )
})

describe('the clear set (partial_subset with include_downstream, setups and teardowns)', () => {
  const graph = (tasks: Record<string, {down?: string[]; setup?: boolean; teardown?: boolean}>) =>
    taskGraph({
      dag: {
        tasks: Object.entries(tasks).map(([task_id, t]) => ({
          __type: 'operator',
          __var: {task_id, downstream_task_ids: t.down ?? [], is_setup: t.setup, is_teardown: t.teardown},
        })),
      },
    })!

  it('a task and its transitive downstream; partial while other tasks exist', () => {
    const g = graph({a: {down: ['b']}, b: {down: ['c']}, c: {}, x: {}})
    expect([...clearSubset(g, 'b').taskIds].sort()).toEqual(['b', 'c'])
    expect(clearSubset(g, 'b').partial).toBe(true)
    expect(clearSubset(graph({a: {down: ['b']}, b: {}}), 'a').partial).toBe(false)
  })

  it("a downstream task's upstream setup comes along with its teardown (get_upstreams_only_setups_and_teardowns)", () => {
    const g = graph({
      s: {setup: true, down: ['w', 't']},
      w: {down: ['t', 'after']},
      t: {teardown: true},
      after: {},
      other: {},
    })
    expect([...clearSubset(g, 'w').taskIds].sort()).toEqual(['after', 's', 't', 'w'])
  })

  it('format 3 keeps default retries in client_defaults; a task that states its own wins', () => {
    const g = taskGraph({
      __version: 3,
      client_defaults: {tasks: {retries: 2}},
      dag: {tasks: [{__var: {task_id: 'a'}}, {__var: {task_id: 'b', retries: 5}}]},
    })!
    expect([g.tasks.get('a')!.retries, g.tasks.get('b')!.retries]).toEqual([2, 5])
  })
})
