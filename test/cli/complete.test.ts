import fs from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli, startCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {eventsOf, scenario, writeFootprint} from '../support/scenario.js'

/**
 * `airlock complete` as an operator runs it: flags, exit codes, envelopes, refusals. Each test
 * builds its world (test/support/scenario.ts); most use `threeRunningTasks`.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

const complete = (...args: string[]) => runCli(['complete', '--database-url', db.url, ...args])

/** DAG etl, one run, task_1…task_3 running, two active outlets each, no consumers. */
const threeRunningTasks = () => scenario(db.knex).producer('etl', {tasks: 3, outlets: 2}).build()

/**
 * Runs the CLI and, from the moment its stdout shows `summaryText` until the process is gone,
 * sends it a SIGINT every millisecond: what a late Ctrl-C or a supervisor's SIGTERM meets.
 */
async function signalledAfter(args: string[], summaryText: string) {
  const {child, finished} = startCli(args)
  let ended = false
  void finished.then(() => (ended = true))
  let out = ''
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes(summaryText)) resolve()
    })
  })
  let sent = 0
  while (!ended) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT')
      sent++
    }
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return {result: await finished, sent}
}

describe('airlock complete', () => {
  it('a dag run with --json: its task instances in a --from-state state are the selection; the others are not selected, counted by state', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {
        tasks: ['load', 'done', 'retry'],
        outlets: 1,
        inactive: 1,
        state: {done: 'success', retry: 'up_for_retry'},
      })
      .consumer('report', {on: ['etl']})
      .consumer('audit', {on: ['etl'], by: 'name'})
      .build()
    const run = world.run('etl').run_id
    const result = await complete('--dag-id', 'etl', '--run-id', run, '--yes', '--json')
    const out = envelope(result) as {
      status: number
      result: {
        summary: Record<string, unknown>
        not_selected_states: Record<string, number>
        items: Array<Record<string, unknown>>
      }
      warnings: string[]
    }
    // A filter selection is not a list of conflicts: done (success) and retry (up_for_retry) are
    // not running, so not selected, and nothing changed under airlock's feet: exit 0.
    expect(result.code).toBe(0)
    expect(out.status).toBe(0)
    // load: completed, one event (its second outlet is inactive) queuing report and audit.
    expect(out.result.summary).toEqual({
      selected: 1,
      completed: 1,
      already_success: 0,
      conflict: 0,
      inactive_outlet: 0,
      unsupported_consumer: 0,
      invalid_end_date: 0,
      mapped_downstream: 0,
      downstream_changed: 0,
      unsupported_downstream: 0,
      not_found: 0,
      failed: 0,
      events_created: 1,
      runs_queued: 2,
      dry_run: false,
      not_selected: 2,
    })
    expect(out.result.not_selected_states).toEqual({success: 1, up_for_retry: 1})
    expect(out.result.items.map((i) => [i.task_id, i.outcome])).toEqual([['load', 'completed']])
    const item = out.result.items[0]!
    expect(Object.keys(item.timings as object).sort()).toEqual([
      'lock_hold_ms',
      'lock_wait_ms',
      'register_ms',
      'stamp_to_commit_ms',
      'total_ms',
    ])
    expect(out.warnings.join()).toContain('not active')
  })

  it('a backfill over a DAG with history: never-run task instances of other runs are not selected, not conflicts; --from-state none takes them', async () => {
    const world = await scenario(db.knex).producer('etl', {tasks: 3, outlets: 1, runs: 3}).build()
    // Runs 2 and 3 were created but never ran: their task instances have no state yet (NULL).
    const idle = [world.run('etl', 2).run_id, world.run('etl', 3).run_id]
    await db.knex('task_instance').where({dag_id: 'etl'}).whereIn('run_id', idle).update({state: null})
    const result = await complete('--dag-id', 'etl', '--from-state', 'running', '--yes', '--json')
    const out = envelope(result) as {
      result: {summary: Record<string, unknown>; not_selected_states: Record<string, number>}
    }
    expect(result.code, result.stderr).toBe(0)
    expect(out.result.summary).toMatchObject({selected: 3, completed: 3, conflict: 0, not_selected: 6})
    expect(out.result.not_selected_states).toEqual({none: 6})
    const human = await complete('--dag-id', 'etl', '--yes')
    expect(human.code).toBe(0)
    expect(human.stdout).toContain(
      'Not selected: 9 task instances the filter matched in other states (6 none, 3 success): --from-state leaves them out, untouched.',
    )
    // Named as a state, "none" selects exactly the task instances with no state (SQL NULL).
    const idleToo = envelope(await complete('--dag-id', 'etl', '--from-state', 'none', '--dry-run', '--json')) as {
      result: {summary: Record<string, unknown>; items: Array<{run_id: string}>}
    }
    expect(idleToo.result.summary).toMatchObject({selected: 6, not_selected: 3})
    expect(new Set(idleToo.result.items.map((i) => i.run_id))).toEqual(new Set(idle))
  })

  it("a filter selection whose task instance changes state under airlock's feet (between the selection and the row lock): a conflict, exit 3", async () => {
    const world = await threeRunningTasks()
    const moved = world.ti('etl', 'task_2')
    const footprint = await writeFootprint(db.knex)
    const result = await whileRowLocked(db.knex, moved.id, async (holder) => {
      const {finished} = startCli(['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--json'])
      // Selected as running; the scheduler fails it while airlock waits for its row.
      await waitUntilAppBlocked(db.knex, `airlock:complete:${moved.id}`)
      await holder.raw(`update task_instance set state = 'failed' where id = ?`, [moved.id])
      await holder.commit()
      return finished
    })
    expect(result.code, result.stderr).toBe(3)
    const out = envelope(result) as {
      result: {
        summary: Record<string, unknown>
        items: Array<{task_id: string; outcome: string; previous_state: string}>
      }
    }
    expect(out.result.summary).toMatchObject({selected: 3, completed: 2, conflict: 1, not_selected: 0})
    expect(out.result.items.find((i) => i.outcome === 'conflict')).toMatchObject({
      task_id: 'task_2',
      previous_state: 'failed',
    })
    expect((await eventsOf(db.knex, moved)).length).toBe(0)
    expect((await writeFootprint(db.knex)).asset_event).toBe((footprint.asset_event ?? 0) + 4)
  })

  it('task instances named one by one are taken whatever their state: one not in a --from-state state is a conflict, exit 3', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: ['load', 'done', 'retry'], outlets: 1, state: {done: 'success', retry: 'up_for_retry'}})
      .build()
    const run = world.run('etl').run_id
    const ids = ['load', 'done', 'retry'].flatMap((task) => ['--ti-id', world.ti('etl', task).id])
    const result = await complete(...ids, '--yes', '--json')
    const out = envelope(result) as {
      status: number
      result: {summary: Record<string, unknown>; items: Array<Record<string, unknown>>}
    }
    expect(result.code).toBe(3)
    expect(out.result.summary).toMatchObject({selected: 3, completed: 1, already_success: 1, conflict: 1})
    expect(out.result.summary).not.toHaveProperty('not_selected')
    expect(out.result.items.find((i) => i.outcome === 'conflict')).toMatchObject({
      dag_id: 'etl',
      run_id: run,
      task_id: 'retry',
      map_index: -1,
      previous_state: 'up_for_retry',
      events: 0,
      queued: 0,
    })
  })

  it('--ndjson streams one item per line and ends with the summary', async () => {
    await threeRunningTasks()
    const result = await complete('--dag-id', 'etl', '--yes', '--ndjson')
    expect(result.code).toBe(0)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.slice(0, -1).every((l) => l.type === 'item' && l.outcome === 'completed')).toBe(true)
    expect(lines.at(-1)).toMatchObject({type: 'summary', selected: 3, completed: 3, events_created: 6})
  })

  it('--dry-run reports what would happen and writes nothing', async () => {
    await threeRunningTasks()
    const footprint = await writeFootprint(db.knex)
    const result = await complete('--dag-id', 'etl', '--dry-run')
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('DRY RUN')
    expect(result.stdout).toContain('3 task instances selected: 3 would complete')
    expect(result.stdout).toContain('would_complete')
    const json = envelope(await complete('--dag-id', 'etl', '--dry-run', '--json')) as {
      result: {items: Array<{outcome: string; previous_state: string}>}
    }
    expect(json.result.items.map((i) => i.outcome)).toEqual(['would_complete', 'would_complete', 'would_complete'])
    expect(json.result.items.map((i) => i.previous_state)).toEqual(['running', 'running', 'running'])
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('an explicit --ti-id that does not exist: not_found, exit 4', async () => {
    await threeRunningTasks()
    const result = await complete('--ti-id', '00000000-0000-4000-8000-000000000000', '--json')
    expect(result.code).toBe(4)
    expect(envelope(result)).toMatchObject({status: 4, result: {summary: {not_found: 1}}})
  })

  it('--strict-outlets: a task instance with an inactive outlet is refused (exit 3, the assets named), nothing written', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1, inactive: 1}).build()
    const target = world.ti('etl')
    const before = await writeFootprint(db.knex)
    const result = await complete('--ti-id', target.id, '--strict-outlets', '--json')
    const out = envelope(result) as {
      status: number
      result: {summary: Record<string, unknown>; items: Array<Record<string, unknown>>}
    }
    expect(result.code).toBe(3)
    expect(out.result.summary).toMatchObject({selected: 1, inactive_outlet: 1, completed: 0})
    expect(out.result.items[0]).toMatchObject({
      outcome: 'inactive_outlet',
      detail: expect.stringContaining('etl.produce.out_2') as string,
    })
    expect(await writeFootprint(db.knex)).toEqual(before)
  })

  it('a bulk write without --yes and without a terminal is refused: exit 2 naming --yes, nothing written', async () => {
    await threeRunningTasks()
    const footprint = await writeFootprint(db.knex)
    const result = await complete('--dag-id', 'etl')
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--yes')
    const json = await complete('--dag-id', 'etl', '--json')
    expect(envelope(json)).toMatchObject({status: 2, error: {code: 'USAGE'}})
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('the refusal counts the task instances in a --from-state state; the others are not selected; none left is no question', async () => {
    await scenario(db.knex).producer('etl', {tasks: 5, outlets: 1}).build()
    const run = await db.knex('task_instance').where({dag_id: 'etl'}).first('run_id')
    const ids = await db.knex('task_instance').where({dag_id: 'etl'}).orderBy('task_id').pluck('id')
    await db.knex('task_instance').whereIn('id', ids.slice(0, 3)).update({state: 'success'})
    const footprint = await writeFootprint(db.knex)
    const refused = await complete('--dag-id', 'etl', '--run-id', run!.run_id as string)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('Refusing to mark 2 task instances as success without confirmation.')
    expect(refused.stderr).toContain('Not selected: 3 task instances the filter matched in other states (3 success).')
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    // All already success: nothing is selected, so nothing is asked; the warning and the summary say why, exit 0.
    await db.knex('task_instance').whereIn('id', ids).update({state: 'success'})
    const settledFootprint = await writeFootprint(db.knex)
    const settled = await complete('--dag-id', 'etl', '--run-id', run!.run_id as string, '--json')
    expect(settled.code, settled.stderr).toBe(0)
    const out = envelope(settled) as {result: {summary: Record<string, number>}; warnings: string[]}
    expect(out.result.summary).toMatchObject({selected: 0, completed: 0, not_selected: 5})
    expect(out.warnings.join()).toContain(
      'is in a state --from-state takes (running): 5 task instances in other states (5 success) not selected',
    )
    expect(await writeFootprint(db.knex)).toEqual(settledFootprint)
  })

  it('piped output honours COLUMNS when set, and keeps every value whole when not', async () => {
    const dagId = `etl_${'long_name_'.repeat(8)}`
    await scenario(db.knex).producer(dagId, {tasks: 2, outlets: 1}).build()
    const args = ['complete', '--database-url', db.url, '--dag-id', dagId, '--yes', '--dry-run']
    const narrow = await runCli(args, {env: {COLUMNS: '80'}})
    expect(narrow.code, narrow.stderr).toBe(0)
    const lines = narrow.stdout.split('\n').filter((line) => line.includes('task_1'))
    expect(lines).toHaveLength(1)
    expect(lines[0]!.length).toBeLessThanOrEqual(80)
    expect(lines[0]).toContain('…')
    const whole = await runCli(args)
    expect(whole.stdout.split('\n').find((line) => line.includes('task_1'))).toContain(dagId)
  })

  it('a lock held past --lock-timeout: the item fails after retries, exit 5, nothing written', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    await whileRowLocked(db.knex, target.id, async (holder) => {
      const result = await complete('--ti-id', target.id, '--lock-timeout', '50ms', '--json')
      const out = envelope(result) as {
        result: {items: Array<{outcome: string; error: {sqlstate: string}; timings: Record<string, number | null>}>}
      }
      expect(result.code).toBe(5)
      // The failed item keeps its cause, names its task instance, and says where its time went.
      expect(out.result.items[0]).toMatchObject({
        outcome: 'failed',
        error: {sqlstate: '55P03'},
        ti_id: target.id,
        dag_id: 'etl',
        run_id: target.run_id,
        task_id: 'produce',
        map_index: -1,
        events: 0,
      })
      expect(out.result.items[0]!.timings.lock_wait_ms).toBeGreaterThan(0)
      // …and who held the row, for the operator's next step.
      const holderPid = (await holder.raw<{rows: Array<{pid: number}>}>('select pg_backend_pid() as pid')).rows[0]!.pid
      expect((out.result.items[0] as unknown as {error: {message: string}}).error.message).toContain(
        `the row is held by pid ${holderPid}`,
      )
      expect(out.result.items[0]!.timings.stamp_to_commit_ms).toBeNull()
    })
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('--from-file: keys and ids with per-asset extras; a malformed line names its number, exit 2, nothing written', async () => {
    const world = await threeRunningTasks()
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-input-'))
    const a = world.ti('etl', 'task_1')
    const b = world.ti('etl', 'task_2')
    const good = [
      JSON.stringify({ti_id: a.id}),
      '',
      JSON.stringify({
        dag_id: b.dag_id,
        run_id: b.run_id,
        task_id: b.task_id,
        map_index: -1,
        outlet_events: [{asset: 'etl.task_2.out_1', extra: {rows: 5}}],
      }),
    ]
    const footprint = await writeFootprint(db.knex)
    await fs.writeFile(path.join(dir, 'bad.ndjson'), [...good, '{"dag_id": "etl", "run_id": 1}'].join('\n'))
    const bad = await complete('--from-file', path.join(dir, 'bad.ndjson'), '--yes')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('line 4')
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    await fs.writeFile(path.join(dir, 'good.ndjson'), good.join('\n') + '\n')
    const ok = await complete('--from-file', path.join(dir, 'good.ndjson'), '--yes', '--json')
    expect(ok.code).toBe(0)
    expect(envelope(ok)).toMatchObject({result: {summary: {completed: 2, events_created: 4}}})
    const event = (await eventsOf(db.knex, b)).find((e) => e.asset_name === 'etl.task_2.out_1')
    expect(event?.extra).toEqual({rows: 5})

    const viaStdin = await runCli(['complete', '--database-url', db.url, '--from-file', '-', '--json'], {
      stdin: JSON.stringify({ti_id: a.id}) + '\n',
    })
    expect(envelope(viaStdin)).toMatchObject({status: 0, result: {summary: {already_success: 1}}})
    await fs.rm(dir, {recursive: true, force: true})
  })

  it('--from-file: outlet_events naming no asset is exit 2 naming the line and the asset, before any item is written', async () => {
    const world = await threeRunningTasks()
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-typo-asset-'))
    try {
      const a = world.ti('etl', 'task_1')
      const b = world.ti('etl', 'task_2')
      const key = (ti: typeof a) => ({dag_id: ti.dag_id, run_id: ti.run_id, task_id: ti.task_id})
      const lines = [
        // A good line first: validating up front means it is not written either.
        JSON.stringify(key(a)),
        JSON.stringify({...key(b), outlet_events: [{asset: 'nope.asset'}]}),
      ]
      const file = path.join(dir, 'typo.ndjson')
      await fs.writeFile(file, lines.join('\n') + '\n')
      const footprint = await writeFootprint(db.knex)
      for (const mode of [['--yes'], ['--dry-run'], ['--plan']]) {
        const refused = await complete('--from-file', file, ...mode, '--json')
        expect(refused.code).toBe(2)
        const message = (envelope(refused) as {error: {message: string}}).error.message
        expect(message).toContain(`${file} line 2`)
        expect(message).toContain('"nope.asset"')
        expect(message).toContain('nothing written')
      }
      expect(await writeFootprint(db.knex)).toEqual(footprint)

      // {name, uri} naming no asset is refused the same way; an existing asset that is not an
      // outlet of the task stays a warning (Airflow ignores the extra given for it).
      await fs.writeFile(
        file,
        JSON.stringify({...key(b), outlet_events: [{asset: {name: 'etl.task_2.out_1', uri: 'wrong://uri'}}]}) + '\n',
      )
      expect((await complete('--from-file', file, '--yes')).code).toBe(2)
      await fs.writeFile(file, JSON.stringify({...key(b), outlet_events: [{asset: 'etl.task_1.out_1'}]}) + '\n')
      const other = await complete('--from-file', file, '--yes', '--json')
      expect(other.code).toBe(0)
      expect(envelope(other).warnings).toEqual(
        expect.arrayContaining([expect.stringContaining('etl.task_1.out_1, which is not an active outlet')]),
      )
    } finally {
      await fs.rm(dir, {recursive: true, force: true})
    }
  })

  it('an empty --from-file (0 bytes, blank lines, empty stdin) is exit 0 with a warning naming the file', async () => {
    await threeRunningTasks()
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-empty-input-'))
    try {
      const empty = path.join(dir, 'findings.ndjson')
      await fs.writeFile(empty, '\n  \n\n')
      const human = await complete('--from-file', empty, '--yes')
      expect(human.code).toBe(0)
      expect(human.stderr).toContain(`warning: ${empty} holds no task instance`)
      const json = await runCli(['complete', '--database-url', db.url, '--from-file', '-', '--yes', '--json'], {
        stdin: '',
      })
      expect(json.code).toBe(0)
      expect(envelope(json).warnings).toEqual([expect.stringContaining('standard input holds no task instance')])
    } finally {
      await fs.rm(dir, {recursive: true, force: true})
    }
  })

  it.each([
    [['--extra', '{not json'], '--extra'],
    [['--extra', '[1,2]'], '--extra'],
    [['--ti-id', 'not-a-uuid'], '--ti-id'],
    [['--dag-id', 'etl', '--since', 'yesterday'], '--since'],
    [['--dag-id', 'etl', '--shard', '5/4'], '--shard'],
    [['--dag-id', 'etl', '--frobnicate'], 'frobnicate'],
    [['--dag-id', 'etl', '--from-state', 'success'], 'from-state'],
    [[], 'Nothing selected'],
    [['--ti-id', '0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a', '--shard', '1/2'], '--shard'],
  ])('bad input %j: exit 2 with a message naming %s, nothing written', async (args, named) => {
    await threeRunningTasks()
    const footprint = await writeFootprint(db.knex)
    const result = await complete(...args, '--yes')
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(named)
    expect(result.stdout).toBe('')
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('refuses a database that is not Airflow: exit 8', async () => {
    const plain = await createTestDatabase('empty', 1)
    try {
      const result = await runCli(['complete', '--database-url', plain.url, '--dag-id', 'x', '--yes'])
      expect(result.code).toBe(8)
      expect(result.stderr).toContain('not an Airflow metadata database')
    } finally {
      await plain.drop()
    }
  })

  it('--shard K/N partitions a selection without overlap', async () => {
    await threeRunningTasks()
    const seen = new Set<string>()
    let total = 0
    for (const shard of ['1/3', '2/3', '3/3']) {
      const out = envelope(await complete('--dag-id', 'etl', '--shard', shard, '--dry-run', '--json')) as {
        result: {items: Array<{ti_id: string}>}
      }
      for (const item of out.result.items) seen.add(item.ti_id)
      total += out.result.items.length
    }

    expect(total).toBe(3)
    expect(seen.size).toBe(3)
  })

  it('a run_after range is read run page by run page, oldest run first: every task instance once, --limit takes the oldest runs', async () => {
    // 250 runs: more than one page of runs (200), with two task instances each.
    const world = await scenario(db.knex).producer('etl', {tasks: 2, outlets: 0, runs: 250}).build()
    const all = envelope(await complete('--dag-id', 'etl', '--since', '2026-12-01', '--dry-run', '--json')) as {
      result: {items: Array<{ti_id: string; run_id: string}>}
    }
    const ids = all.result.items.map((i) => i.ti_id)
    expect(new Set(ids).size).toBe(500)
    expect([...ids].sort()).toEqual(
      world
        .tis('etl')
        .map((t) => t.id)
        .sort(),
    )

    const limited = envelope(
      await complete(
        '--dag-id',
        'etl',
        '--since',
        '2026-12-01',
        '--limit',
        '5',
        '--concurrency',
        '1',
        '--dry-run',
        '--json',
      ),
    ) as {
      result: {items: Array<{run_id: string}>; breakdown: {runs: Array<{run_id: string; task_instances: number}>}}
    }
    const oldest = [1, 2, 3].map((r) => world.run('etl', r).run_id)
    expect([...new Set(limited.result.items.map((i) => i.run_id))].sort()).toEqual(oldest)
    // The breakdown counts what the pages take.
    expect(limited.result.breakdown.runs.map((r) => [r.run_id, r.task_instances])).toEqual([
      [oldest[0], 2],
      [oldest[1], 2],
      [oldest[2], 1],
    ])
  })

  it('N shards as N processes at once (a Kubernetes Indexed Job): their union is exactly the selection, each task instance completed once', async () => {
    const world = await scenario(db.knex).producer('etl', {tasks: 10, outlets: 1, runs: 4}).build()
    const shards = 4
    const results = await Promise.all(
      Array.from({length: shards}, (_, k) =>
        runCli([
          'complete',
          '--database-url',
          db.url,
          '--dag-id',
          'etl',
          '--since',
          '2026-12-01',
          '--shard',
          `${k + 1}/${shards}`,
          '--yes',
          '--ndjson',
        ]),
      ),
    )
    const byShard = results.map((result) => {
      expect(result.code).toBe(0)
      return result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as {type: string; ti_id?: string; outcome?: string})
        .filter((line) => line.type === 'item')
    })
    const completed = byShard.flat().map((item) => item.ti_id!)
    expect(byShard.flat().every((item) => item.outcome === 'completed')).toBe(true)
    expect(new Set(completed).size).toBe(completed.length)
    expect([...completed].sort()).toEqual(
      world
        .tis('etl')
        .map((t) => t.id)
        .sort(),
    )
    // Every shard got some of the work, and the database holds exactly one event per task instance.
    expect(byShard.every((items) => items.length > 0)).toBe(true)
    const {rows} = await db.knex.raw<{rows: Array<{n: number}>}>(`select count(*)::int as n from asset_event`)
    expect(rows[0]!.n).toBe(40)
  })

  it('SIGINT: the item waiting for its row lock is given up (interrupted, nothing written), the summary is printed, exit 130', async () => {
    const world = await threeRunningTasks()
    const blocked = world.ti('etl', 'task_1')
    await whileRowLocked(db.knex, blocked.id, async () => {
      const {child, finished} = startCli([
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--concurrency',
        '1',
        '--yes',
        '--json',
        '--lock-timeout',
        '30s',
      ])
      // Wait until the CLI is stuck on the held row (some other TIs may have completed first).
      await waitUntilAppBlocked(db.knex, `airlock:complete:${blocked.id}`)
      child.kill('SIGINT')
      // The holder keeps the row until the CLI has ended: it must not wait for it.
      const {code, stdout} = await finished
      expect(code).toBe(130)
      const out = JSON.parse(stdout) as {
        status: number
        result: {
          interrupted: boolean
          summary: {selected: number; failed: number; not_reached: number}
          items: Array<{ti_id: string; outcome: string; error?: {interrupted?: boolean}}>
        }
      }
      expect(out.status).toBe(130)
      expect(out.result.interrupted).toBe(true)
      expect(out.result.summary.failed).toBe(1)
      expect(out.result.items.find((item) => item.ti_id === blocked.id)).toMatchObject({
        outcome: 'failed',
        error: {interrupted: true},
      })
      // What was never taken is counted: the summary accounts for the whole selection.
      expect(out.result.summary.selected + out.result.summary.not_reached).toBe(3)
      expect(await db.knex('task_instance').where({id: blocked.id}).first('state')).toEqual({state: 'running'})
    })
  })

  it('an id lost to a second clear within one try is not_found, saying why; its key finds the current try', async () => {
    const world = await threeRunningTasks()
    const first = world.ti('etl', 'task_1')
    // Airflow's clear: archive the try under the old id (once per try), give the row a new id.
    await db.knex.raw(
      `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, state, pool, pool_slots, dag_version_id)
       select id, task_id, dag_id, run_id, map_index, try_number, 'failed', pool, pool_slots, dag_version_id from task_instance where id = ?`,
      [first.id],
    )
    const second = '0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e61'
    await db.knex('task_instance').where({id: first.id}).update({id: second, state: 'running'})
    // A second clear within the same try: already archived, so the intermediate id is kept nowhere.
    const third = '0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e62'
    await db.knex('task_instance').where({id: second}).update({id: third, state: 'running'})

    const lost = envelope(await complete('--ti-id', second, '--json')) as {
      status: number
      result: {items: Array<{outcome: string; detail?: string}>}
    }
    expect(lost.status).toBe(4)
    expect(lost.result.items[0]!.outcome).toBe('not_found')
    expect(lost.result.items[0]!.detail).toContain('cleared twice within one try keeps neither earlier id')
    expect(lost.result.items[0]!.detail).toContain('--ti-id dag_id/run_id/task_id[map_index]')
    // The first id is still archived: it is followed to the current try.
    const followed = envelope(await complete('--ti-id', first.id, '--dry-run', '--json')) as {
      result: {items: Array<{outcome: string; ti_id: string}>}
    }
    expect(followed.result.items[0]).toMatchObject({outcome: 'would_complete', ti_id: third})
    // The key form names the current try, whatever its id became; as the tables print it.
    const byKey = envelope(await complete('--ti-id', `etl/${first.run_id}/task_1`, '--json')) as {
      status: number
      result: {items: Array<{outcome: string; ti_id: string}>}
    }
    expect(byKey.status).toBe(0)
    expect(byKey.result.items[0]).toMatchObject({outcome: 'completed', ti_id: third})
    // A value that is neither an id nor a key is refused, with both forms.
    const bad = await complete('--ti-id', 'etl/task_1')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('dag_id/run_id/task_id[map_index]')
  })

  it('a signal that lands after the summary, while the command cleans up, keeps the exit it decided, never death by the signal', async () => {
    await threeRunningTasks()
    const {result, sent} = await signalledAfter(
      ['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--dry-run'],
      'selected:',
    )
    expect(sent).toBeGreaterThan(0)
    expect(result.signal).toBeNull()
    // The dry run had finished, exit 0 decided: a late SIGINT does not turn it into 130 (an
    // audit's exit 6 would be lost the same way).
    expect(result.code).toBe(0)
  })

  it.each([
    ['human', [] as string[], 'selected:'],
    ['ndjson', ['--ndjson'], '"type":"summary"'],
    [
      'ndjson and --output, whose file closes after the summary',
      ['--ndjson', '--output', 'OUTPUT'],
      '"type":"summary"',
    ],
  ])(
    'signals after the summary of a run with a failed item keep its exit 5, never 130 or death by the signal (%s)',
    async (_, mode, summaryText) => {
      const world = await threeRunningTasks()
      const blocked = world.ti('etl', 'task_2')
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-late-signal-'))
      const flags = mode.map((flag) => (flag === 'OUTPUT' ? path.join(dir, 'items.ndjson') : flag))
      try {
        await whileRowLocked(db.knex, blocked.id, async () => {
          const args = ['complete', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--lock-timeout', '50ms']
          const {result, sent} = await signalledAfter([...args, ...flags], summaryText)
          expect(sent).toBeGreaterThan(0)
          expect(result.signal).toBeNull()
          expect(result.code).toBe(5)
        })
      } finally {
        await fs.rm(dir, {recursive: true, force: true})
      }
    },
  )

  it('SIGINT before the batch (the selection waits behind a table lock): exit 130, an INTERRUPTED envelope, nothing written', async () => {
    await threeRunningTasks()
    const footprint = await writeFootprint(db.knex)
    const holder = await db.knex.transaction()
    try {
      await holder.raw('lock table task_instance in access exclusive mode')
      const {child, finished} = startCli([
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--yes',
        '--json',
        '--lock-timeout',
        '30s',
      ])
      await waitUntilAppBlocked(db.knex, 'airlock:complete')
      child.kill('SIGINT')
      const {code, stdout} = await finished
      expect(code).toBe(130)
      expect(JSON.parse(stdout)).toMatchObject({status: 130, error: {code: 'INTERRUPTED'}})
    } finally {
      await holder.rollback()
    }
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('SIGINT while connecting (before any item): the INTERRUPTED envelope and exit 130 at once', async () => {
    // A server that accepts and never answers: the signal is sent when the CLI's connection
    // arrives, so it lands while the command is still setting up, however loaded the machine is.
    let running: ReturnType<typeof startCli> | undefined
    const connected = new Promise<void>((resolve) => {
      const silent = net.createServer(() => {
        running!.child.kill('SIGINT')
        resolve()
      })
      silent.listen(0, '127.0.0.1', () => {
        const port = (silent.address() as net.AddressInfo).port
        running = startCli(['doctor', '--database-url', `postgresql://airflow@127.0.0.1:${port}/airflow`, '--json'])
        void running.finished.finally(() => silent.close())
      })
    })
    await connected
    const {code, stdout} = await running!.finished
    expect(code).toBe(130)
    expect(JSON.parse(stdout)).toMatchObject({status: 130, error: {code: 'INTERRUPTED'}})
  })

  it('two SIGINTs 20 ms apart during a batch: exit 130 at once with an envelope of what had finished', async () => {
    const world = await threeRunningTasks()
    const blocked = world.ti('etl', 'task_2')
    await whileRowLocked(db.knex, blocked.id, async () => {
      const {child, finished} = startCli([
        'complete',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--concurrency',
        '1',
        '--yes',
        '--json',
        '--lock-timeout',
        '30s',
      ])
      await waitUntilAppBlocked(db.knex, `airlock:complete:${blocked.id}`)
      child.kill('SIGINT')
      await new Promise((resolve) => setTimeout(resolve, 20))
      child.kill('SIGINT')
      const {code, stdout} = await finished
      expect(code).toBe(130)
      const out = JSON.parse(stdout) as {
        status: number
        result: {interrupted: boolean; items: Array<{outcome: string}>} | null
      }
      expect(out.status).toBe(130)
      // Whatever had finished before the blocked one is reported; the blocked one is not.
      const completed = await db.knex('task_instance').where({dag_id: 'etl', state: 'success'}).count({n: '*'}).first()
      expect(out.result?.items.filter((i) => i.outcome === 'completed').length ?? 0).toBe(Number(completed!.n))
    })
  })

  it('guard rails: a filter without --dag-id needs --all-dags; a reversed range is exit 2; nothing written', async () => {
    await threeRunningTasks()
    const footprint = await writeFootprint(db.knex)
    const unbounded = await complete('--since', '2000-01-01', '--yes')
    expect(unbounded.code).toBe(2)
    expect(unbounded.stderr).toContain('--all-dags')
    const meant = envelope(await complete('--since', '2000-01-01', '--all-dags', '--dry-run', '--json')) as {
      result: {summary: {selected: number}}
    }
    expect(meant.result.summary.selected).toBe(3)
    const reversed = await complete('--dag-id', 'etl', '--since', '2026-12-02', '--until', '2026-12-01', '--yes')
    expect(reversed.code).toBe(2)
    expect(reversed.stderr).toContain('is not before --until')
    const exported = await runCli([
      'export-events',
      '--database-url',
      db.url,
      '--since',
      '2026-12-02',
      '--until',
      '2026-12-01',
    ])
    expect(exported.code).toBe(2)
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('--end-date: refused in the future (exit 2) and before a start_date (invalid_end_date, exit 3); --force-end-date records it with duration 0', async () => {
    const world = await threeRunningTasks()
    const target = world.ti('etl', 'task_1')
    const future = new Date(Date.now() + 3_600_000).toISOString()
    const ahead = await complete('--ti-id', target.id, '--end-date', future)
    expect(ahead.code).toBe(2)
    expect(ahead.stderr).toContain('is in the future')

    const early = '2000-01-01T00:00:00Z'
    const before = await complete('--ti-id', target.id, '--end-date', early, '--json')
    expect(before.code).toBe(3)
    expect(envelope(before)).toMatchObject({
      result: {items: [{outcome: 'invalid_end_date', detail: expect.stringContaining('--force-end-date')}]},
    })
    expect((await db.knex('task_instance').where({id: target.id}).first()).state).toBe('running')

    const forced = await complete('--ti-id', target.id, '--end-date', early, '--force-end-date', '--json')
    expect(forced.code).toBe(0)
    const row = await db.knex('task_instance').where({id: target.id}).first()
    expect(row.state).toBe('success')
    expect(row.duration).toBe(0)
  })

  it('numbers are range-checked before any query (no SQL in the message); --from-state none selects a task instance with no state', async () => {
    const world = await threeRunningTasks()
    const huge = await complete('--dag-id', 'etl', '--map-index', '99999999999', '--yes')
    expect(huge.code).toBe(2)
    expect(huge.stderr).toContain('--map-index')
    expect(huge.stderr).not.toMatch(/out of range for type|SELECT|select /)

    const target = world.ti('etl', 'task_1')
    await db.knex('task_instance').where({id: target.id}).update({state: null})
    const refused = envelope(await complete('--ti-id', target.id, '--json')) as {
      result: {items: Array<{outcome: string; previous_state: string | null}>}
    }
    expect(refused.result.items[0]).toMatchObject({outcome: 'conflict', previous_state: null})
    // A person reads the missing state as "none", the value --from-state takes for it.
    expect((await complete('--ti-id', target.id)).stdout).toContain('conflict (was none)')
    const done = envelope(await complete('--ti-id', target.id, '--from-state', 'none', '--json')) as {
      result: {items: Array<{outcome: string}>}
    }
    expect(done.result.items[0]!.outcome).toBe('completed')
  })

  it('an unknown --dag-id, --run-id or --task-id is exit 4 naming close matches, whatever else narrows it', async () => {
    const world = await threeRunningTasks()
    const footprint = await writeFootprint(db.knex)
    const typo = await complete('--dag-id', 'elt', '--yes')
    expect(typo.code).toBe(4)
    expect(typo.stderr).toContain('no DAG is named "elt" (did you mean etl?)')
    // With other filters too: a DAG that does not exist cannot be narrowed to something.
    const narrowed = await complete('--dag-id', 'elt', '--task-id', 'task_1', '--yes', '--json')
    expect(narrowed.code).toBe(4)
    expect(JSON.stringify(envelope(narrowed))).toContain('did you mean etl?')
    // The DAG exists but a task id is mistyped: exit 4, not "nothing to do".
    const mistyped = await complete('--dag-id', 'etl', '--task-id', 'taks_1', '--yes')
    expect(mistyped.code).toBe(4)
    expect(mistyped.stderr).toContain('no task is named "taks_1" in DAG "etl" (did you mean task_1?)')
    // One typo beside a good id still refuses the whole selection: nothing half-done.
    const run = world.ti('etl', 'task_1').run_id
    const halfTypo = await complete('--dag-id', 'etl', '--run-id', run, '--run-id', `${run}x`, '--yes')
    expect(halfTypo.code).toBe(4)
    expect(halfTypo.stderr).toContain(`no run is named "${run}x" in DAG "etl" (did you mean ${run}?)`)
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    // Every id exists, the window holds nothing: an empty selection, exit 0, said so.
    const empty = await complete('--dag-id', 'etl', '--task-id', 'task_1', '--since', '2099-01-01', '--yes')
    expect(empty.code).toBe(0)
    expect(empty.stderr).toContain('no task instance matches --dag-id etl --task-id task_1 --since 2099-01-01')
  })

  it('a filter selection shows its runs and states before asking and in a dry run (stderr for people, breakdown in --json)', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 1, runs: 2, state: {task_3: 'failed'}})
      .build()
    const runs = [world.run('etl', 1).run_id, world.run('etl', 2).run_id].sort()
    const footprint = await writeFootprint(db.knex)

    // No terminal to answer: refused, but the operator still sees what was refused, and what the
    // filter matched that --from-state leaves out.
    const refused = await complete('--dag-id', 'etl')
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('Selected 4 task instances in 2 runs of 1 DAG:')
    expect(refused.stderr).toMatch(new RegExp(`etl\\s+${escape(runs[0]!)}\\s+2\\s+2 running`))
    expect(refused.stderr).toContain('Not selected: 2 task instances the filter matched in other states (2 failed).')

    const dry = await complete('--dag-id', 'etl', '--dry-run')
    expect(dry.code).toBe(0)
    expect(dry.stderr).toContain('Selected 4 task instances in 2 runs of 1 DAG:')
    expect(dry.stdout).toContain('Not selected: 2 task instances the filter matched in other states (2 failed)')
    const json = envelope(await complete('--dag-id', 'etl', '--dry-run', '--json')) as {
      result: {
        summary: Record<string, unknown>
        not_selected_states: Record<string, number>
        breakdown: {
          dags: number
          truncated: boolean
          runs: Array<{run_id: string; task_instances: number; states: Record<string, number>}>
        }
      }
    }
    expect(json.result.breakdown).toEqual({
      dags: 1,
      truncated: false,
      runs: runs.map((run_id) => ({dag_id: 'etl', run_id, task_instances: 2, states: {running: 2}})),
    })
    expect(json.result.summary).toMatchObject({selected: 4, completed: 4, not_selected: 2})
    expect(json.result.not_selected_states).toEqual({failed: 2})
    // --from-state failed too: all six are selected, none left out.
    const both = envelope(
      await complete('--dag-id', 'etl', '--from-state', 'running', '--from-state', 'failed', '--dry-run', '--json'),
    ) as {result: {summary: Record<string, unknown>; not_selected_states: Record<string, number>}}
    expect(both.result.summary).toMatchObject({selected: 6, not_selected: 0})
    expect(both.result.not_selected_states).toEqual({})
    // --limit: the breakdown counts what the pages will take, not the whole filter.
    const limited = envelope(await complete('--dag-id', 'etl', '--limit', '2', '--dry-run', '--json')) as {
      result: {breakdown: {runs: Array<{task_instances: number}>}}
    }
    expect(limited.result.breakdown.runs.reduce((sum, run) => sum + run.task_instances, 0)).toBe(2)
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('--output FILE gets every item as a JSON line and a summary; an existing file or a missing directory is exit 2 with nothing written', async () => {
    await threeRunningTasks()
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-output-'))
    const file = path.join(dir, 'items.ndjson')
    const footprint = await writeFootprint(db.knex)
    // A directory, a missing directory, and one that refuses new files (/proc: passes the check, fails the open).
    for (const taken of [dir, path.join(dir, 'missing', 'items.ndjson'), '/proc/airlock-items.ndjson']) {
      const refused = await complete('--dag-id', 'etl', '--yes', '--output', taken)
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain('--output')
      expect(await writeFootprint(db.knex)).toEqual(footprint)
    }

    const result = await complete('--dag-id', 'etl', '--yes', '-o', file)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`Every item is in ${file}`)
    const lines = (await fs.readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {type: string; outcome?: string})
    expect(lines.map((line) => line.type)).toEqual(['item', 'item', 'item', 'summary'])
    expect(lines.filter((line) => line.outcome === 'completed')).toHaveLength(3)

    const again = await complete('--dag-id', 'etl', '--yes', '-o', file)
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('already exists')
    expect((await fs.readFile(file, 'utf8')).trim().split('\n')).toHaveLength(4)
    await fs.rm(dir, {recursive: true})
  })

  it('waiting longer than a second for a row lock says who holds it (pid, application name, audit-locks), then completes', async () => {
    const world = await threeRunningTasks()
    const target = world.ti('etl', 'task_1')
    const result = await whileRowLocked(db.knex, target.id, async (holder) => {
      await holder.raw(`set local application_name = 'scheduler-under-test'`)
      const running = startCli(['complete', '--database-url', db.url, '--ti-id', target.id, '--lock-timeout', '20s'])
      await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      // Past the one-second threshold and a watcher tick.
      await new Promise((resolve) => setTimeout(resolve, 1800))
      const {pid} = (await holder.raw<{rows: Array<{pid: number}>}>('select pg_backend_pid() as pid')).rows[0]!
      await holder.commit()
      return {...(await running.finished), holderPid: pid}
    })
    expect(result.code).toBe(0)
    const line = result.stderr.split('\n').find((l) => l.includes('for the row lock of'))
    expect(line).toBeDefined()
    expect(line).toContain(`etl/${world.run('etl').run_id}/task_1`)
    expect(line).toContain(`held by pid ${result.holderPid} "scheduler-under-test"`)
    expect(line).toContain('airlock audit-locks')
    // Said once per holder, not every tick.
    expect(result.stderr.split('\n').filter((l) => l.includes('for the row lock of'))).toHaveLength(1)
  })

  it('-h, --help, help, -v, --version and version all work (exit 0)', async () => {
    for (const args of [['-h'], ['--help'], ['help'], ['help', 'complete']]) {
      const result = await runCli(args)
      expect(result.code, args.join(' ')).toBe(0)
      expect(result.stdout).toContain('USAGE')
    }
    for (const args of [['-v'], ['--version'], ['version']]) {
      const result = await runCli(args)
      expect(result.code, args.join(' ')).toBe(0)
      expect(result.stdout).toMatch(/^airflow-airlock\/\d+\.\d+\.\d+ /)
    }
  })
})

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
