import {mkdtemp} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {performance} from 'node:perf_hooks'

import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {runCli, startCli, type CliResult, type RunningCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {startFreezingProxy, type FreezingProxy} from '../support/freezingProxy.js'
import {scenario} from '../support/scenario.js'

/**
 * The network path to the server freezes in the middle of a run: no answer, no FIN, no RST (a
 * stopped proxy, a firewall that drops, a failover that leaves the old address silent). airlock
 * must notice on its own, report every item in flight honestly and exit 7, within the freeze
 * bound of docs/connection.md; a signal must end it within a few seconds even though the statement
 * in flight never returns.
 *
 * The time assertions are liveness bounds ("does not hang"), not performance figures: each is
 * three times the documented bound for the --connect-timeout the test passes, generous on purpose
 * for a shared 2-core machine; the measured figures are in docs/connection.md.
 */
let db: TestDatabase
let proxy: FreezingProxy | undefined
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterEach(async () => {
  await proxy?.close()
  proxy = undefined
})
afterAll(async () => db?.drop())

/** The test's --connect-timeout, and the freeze bound docs/connection.md gives for it (about twice it). */
const connectTimeoutS = 2
const freezeBoundMs = 2 * connectTimeoutS * 1000
/**
 * Three times the bound: what the assertions allow, so a loaded machine never fails them (it also
 * covers the documented worst case, 4 × --connect-timeout + 2 s). Measured: 4.0-4.1 s.
 */
const generousBoundMs = 3 * freezeBoundMs

/** The process's result, or a failure naming how long it ran (it is killed then, so the test ends). */
async function finishedWithin(running: RunningCli, ms: number): Promise<CliResult & {afterMs: number}> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      running.child.kill('SIGKILL')
      reject(new Error(`airlock was still running ${ms} ms after the freeze: it hangs`))
    }, ms)
  })
  try {
    const result = await Promise.race([running.finished, limit])
    return {...result, afterMs: performance.now() - started}
  } finally {
    clearTimeout(timer)
  }
}

interface Item {
  ti_id: string
  outcome: string
  error?: {message: string; commit_unknown?: true; interrupted?: true}
}
interface Envelope {
  status: number
  error?: {code: string; message: string; actions: string[]}
  result?: {summary: {selected: number; not_reached?: number}; items: Item[]; interrupted?: boolean}
}

const successIds = async (dagId: string): Promise<Set<string>> =>
  new Set(await db.knex('task_instance').where({dag_id: dagId, state: 'success'}).pluck('id'))

describe('a frozen network path', () => {
  it('complete notices on its own: exit 7 within the freeze bound, the COMMIT in flight commit_unknown, every item accounted for', async () => {
    const tasks = 300
    await scenario(db.knex).producer('frozen', {tasks, outlets: 1}).build()
    proxy = await startFreezingProxy(new URL(db.url))
    const args = ['complete', '--dag-id', 'frozen', '--yes', '--concurrency', '4', '--json']
    const running = startCli([...args, '--database-url', proxy.url, '--connect-timeout', `${connectTimeoutS}s`])
    // The 40th COMMIT reaches the server, which commits; its answer, and everything after, is lost.
    await proxy.freezeAt('commit\u0000', {nth: 40, how: 'deliver'})
    const result = await finishedWithin(running, generousBoundMs)

    expect(result.code, result.stderr).toBe(7)
    const out = JSON.parse(result.stdout) as Envelope
    expect(out.error?.code).toBe('DATABASE_UNREACHABLE')
    const {summary, items} = out.result!
    // Every item of the selection is accounted for: taken (with its line) or never reached.
    expect(summary.selected).toBe(items.length)
    expect(summary.selected + summary.not_reached!).toBe(tasks)
    expect(summary.not_reached).toBeGreaterThan(tasks / 2)
    const failed = items.filter((item) => item.outcome === 'failed')
    const unknown = failed.filter((item) => item.error?.commit_unknown)
    expect(out.error!.message).toContain(
      `of ${tasks} selected, ${items.length - failed.length} done, ${failed.length} failed (${unknown.length} unknown`,
    )
    expect(out.error!.message).toContain(`${summary.not_reached} never reached`)
    // Only the items in flight failed: at most one per connection.
    expect(failed.length).toBeGreaterThanOrEqual(1)
    expect(failed.length).toBeLessThanOrEqual(4)
    expect(items.every((item) => item.outcome === 'completed' || item.outcome === 'failed')).toBe(true)

    // The lines are true to the database: every completed item committed; the COMMIT that reached
    // the server committed, and its line says unknown rather than failed; an item that failed
    // before its COMMIT was sent left nothing.
    const committed = await successIds('frozen')
    for (const item of items.filter((i) => i.outcome === 'completed')) expect(committed.has(item.ti_id)).toBe(true)
    expect(unknown.length).toBeGreaterThanOrEqual(1)
    expect(unknown.some((item) => committed.has(item.ti_id))).toBe(true)
    for (const item of failed.filter((i) => !i.error?.commit_unknown)) expect(committed.has(item.ti_id)).toBe(false)
    expect(committed.size).toBeLessThanOrEqual(items.length - failed.length + unknown.length)

    // Once the path is back, the same command finishes the rest.
    await proxy.close()
    proxy = undefined
    const resumed = await runCli([...args, '--database-url', db.url])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect((await successIds('frozen')).size).toBe(tasks)
  })

  it('replay-events notices too: exit 7, the events never reached not tried', async () => {
    const tasks = 200
    await scenario(db.knex).producer('again', {tasks, outlets: 1}).build()
    expect((await runCli(['complete', '--database-url', db.url, '--dag-id', 'again', '--yes'])).code).toBe(0)
    const ids = await db.knex('asset_event').where({source_dag_id: 'again'}).orderBy('id').pluck('id')
    expect(ids).toHaveLength(tasks)
    proxy = await startFreezingProxy(new URL(db.url))
    const running = startCli([
      'replay-events',
      '--database-url',
      proxy.url,
      ...ids.flatMap((id) => ['--event-id', String(id)]),
      '--yes',
      '--concurrency',
      '2',
      '--connect-timeout',
      `${connectTimeoutS}s`,
      '--json',
    ])
    // This time the COMMIT never reaches the server: nothing of it is kept.
    await proxy.freezeAt('commit\u0000', {nth: 25, how: 'drop'})
    const result = await finishedWithin(running, generousBoundMs)

    expect(result.code, result.stderr).toBe(7)
    const out = JSON.parse(result.stdout) as Envelope
    expect(out.error?.code).toBe('DATABASE_UNREACHABLE')
    const {summary, items} = out.result!
    expect(summary.selected).toBe(items.length)
    expect(summary.selected + summary.not_reached!).toBe(tasks)
    const failed = items.filter((item) => item.outcome === 'failed')
    expect(failed.length).toBeGreaterThanOrEqual(1)
    expect(failed.length).toBeLessThanOrEqual(2)
    // What the lines say was replayed is what the database holds: one new event per replayed
    // item, and at most one more per item left unknown (another connection's COMMIT may have
    // reached the server just before the freeze).
    const replayed = items.filter((item) => item.outcome === 'replayed').length
    const unknown = failed.filter((item) => item.error?.commit_unknown).length
    const [events] = await db.knex('asset_event').where({source_dag_id: 'again'}).count({n: '*'})
    expect(Number(events!.n)).toBeGreaterThanOrEqual(tasks + replayed)
    expect(Number(events!.n)).toBeLessThanOrEqual(tasks + replayed + unknown)
  })

  it('export-events notices a page read that never returns: exit 7 within the freeze bound', async () => {
    await scenario(db.knex).producer('export', {tasks: 50, outlets: 1}).build()
    expect((await runCli(['complete', '--database-url', db.url, '--dag-id', 'export', '--yes'])).code).toBe(0)
    proxy = await startFreezingProxy(new URL(db.url))
    const output = path.join(await mkdtemp(path.join(os.tmpdir(), 'airlock-frozen-')), 'events.ndjson')
    const running = startCli([
      'export-events',
      '--database-url',
      proxy.url,
      '--dag-id',
      'export',
      '--connect-timeout',
      `${connectTimeoutS}s`,
      '--output',
      output,
      '--json',
    ])
    // The page read reaches the server; its rows never come back.
    await proxy.freezeAt('row_to_json(h)', {how: 'deliver'})
    const result = await finishedWithin(running, generousBoundMs)

    expect(result.code, result.stderr).toBe(7)
    const out = JSON.parse(result.stdout) as Envelope
    expect(out.error?.code).toBe('DATABASE_UNREACHABLE')
    expect(out.error?.message).toContain('the network path to it is silent')
  })

  it('explain notices a read that never returns: exit 7 within the freeze bound', async () => {
    await scenario(db.knex)
      .producer('upstream', {tasks: 2, outlets: 1})
      .consumer('downstream', {on: ['upstream']})
      .build()
    proxy = await startFreezingProxy(new URL(db.url))
    const running = startCli([
      'explain',
      '--database-url',
      proxy.url,
      '--all',
      '--connect-timeout',
      `${connectTimeoutS}s`,
      '--json',
    ])
    // The read of the DAGs' facts reaches the server; its answer never comes back.
    await proxy.freezeAt('airlock_explain_dags', {how: 'deliver'})
    const result = await finishedWithin(running, generousBoundMs)

    expect(result.code, result.stderr).toBe(7)
    expect((JSON.parse(result.stdout) as Envelope).error?.code).toBe('DATABASE_UNREACHABLE')
  })

  it('the first SIGINT ends a run whose statement never returns within a few seconds: exit 130, the items in flight reported', async () => {
    const tasks = 200
    await scenario(db.knex).producer('stopped', {tasks, outlets: 1}).build()
    proxy = await startFreezingProxy(new URL(db.url))
    // A connect timeout far longer than the wait allowed below: only the signal can end this run in time.
    const running = startCli([
      'complete',
      '--database-url',
      proxy.url,
      '--dag-id',
      'stopped',
      '--yes',
      '--concurrency',
      '4',
      '--connect-timeout',
      '60s',
      '--json',
    ])
    await proxy.freezeAt('commit\u0000', {nth: 20, how: 'deliver'})
    running.child.kill('SIGINT')
    // The 3 s the first signal gives the items in flight, then closing (at most 2 s), three times
    // over (docs/connection.md). Measured: 3.0-4.1 s.
    const result = await finishedWithin(running, 3 * 5000)

    expect(result.code, result.stderr).toBe(130)
    const out = JSON.parse(result.stdout) as Envelope
    const {summary, items} = out.result!
    expect(out.result!.interrupted).toBe(true)
    expect(summary.selected).toBe(items.length)
    expect(summary.selected + summary.not_reached!).toBe(tasks)
    const failed = items.filter((item) => item.outcome === 'failed')
    expect(failed.length).toBeGreaterThanOrEqual(1)
    expect(failed.length).toBeLessThanOrEqual(4)
    // The COMMIT that reached the server is unknown to airlock, and said so; the others were given
    // up before their COMMIT: interrupted, nothing kept.
    const committed = await successIds('stopped')
    const unknown = failed.filter((item) => item.error?.commit_unknown)
    expect(unknown.length).toBeGreaterThanOrEqual(1)
    expect(unknown.some((item) => committed.has(item.ti_id))).toBe(true)
    for (const item of failed.filter((i) => !i.error?.commit_unknown)) {
      expect(item.error?.interrupted).toBe(true)
      expect(committed.has(item.ti_id)).toBe(false)
    }
  })
})
