import net from 'node:net'
import {performance} from 'node:perf_hooks'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCli, startCli, type RunningCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * The server goes away in the middle of a batch: airlock reaches the database through a TCP
 * proxy on 127.0.0.1 that the test cuts once some items are done. A lost server is one event,
 * not a failure per item left: no new item is started, exit 7, every item accounted for, and the
 * run ends in a time bounded by the connect timeout, not by the items left.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

/**
 * A proxy to the test database that can be cut: every socket destroyed, and new connections
 * refused (the listener closed) or, `silent`, accepted and never answered (a server that stopped
 * answering: only the connect timeout ends a wait on it).
 */
async function cuttableProxy(target: URL): Promise<{url: string; cut: (how?: 'refuse' | 'silent') => void}> {
  const sockets = new Set<net.Socket>()
  let silent = false
  const server = net.createServer((client) => {
    sockets.add(client)
    client.on('error', () => undefined)
    client.on('close', () => sockets.delete(client))
    if (silent) return
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(upstream)
    upstream.on('error', () => undefined)
    upstream.on('close', () => sockets.delete(upstream))
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    cut(how = 'refuse') {
      if (how === 'refuse') server.close()
      else silent = true
      for (const socket of sockets) socket.destroy()
    },
  }
}

/** Resolves once the run has printed `count` item lines (--ndjson). */
function afterItems(running: RunningCli, count: number): Promise<void> {
  let out = ''
  return new Promise<void>((resolve) => {
    running.child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.split('"type":"item"').length > count) resolve()
    })
  })
}

interface Line {
  type: string
  outcome?: string
  dag_id?: string | null
  event_id?: number | null
  status?: number
  error?: {code: string; message: string; actions: string[]}
}
const linesOf = (stdout: string): Line[] =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line)

async function successes(dagId: string): Promise<number> {
  const [row] = await db.knex('task_instance').where({dag_id: dagId, state: 'success'}).count({n: '*'})
  return Number(row!.n)
}

describe('the server goes away mid-run', () => {
  it('complete stops taking items: exit 7, only the item in flight fails, each line named by its key, the rest never reached, and the command that resumes', async () => {
    const tasks = 120
    await scenario(db.knex).producer('etl', {tasks, outlets: 1}).build()
    const proxy = await cuttableProxy(new URL(db.url))
    const args = ['complete', '--database-url', proxy.url, '--dag-id', 'etl', '--yes', '--concurrency', '1', '--ndjson']
    const running = startCli(args)
    await afterItems(running, 10)
    proxy.cut()
    const result = await running.finished

    expect(result.code).toBe(7)
    const lines = linesOf(result.stdout)
    const items = lines.filter((l) => l.type === 'item')
    // The stream ends as a batch the database cut short: one error line, saying what became of each item.
    const last = lines.at(-1)!
    expect(last).toMatchObject({type: 'error', status: 7, error: {code: 'DATABASE_UNREACHABLE'}})
    const failed = items.filter((item) => item.outcome === 'failed')
    expect(last.error!.message).toContain(
      `of ${tasks} selected, ${items.length - failed.length} done, ${failed.length} failed`,
    )
    expect(last.error!.message).toContain(`${tasks - items.length} never reached`)
    // The command that takes it up is the operator's own, word for word, its password scrubbed.
    const resume = last.error!.actions.find((action) =>
      action.startsWith('Resume with: airlock complete --database-url '),
    )
    expect(resume).toMatch(/ --dag-id etl --yes --concurrency 1 --ndjson$/)
    const password = new URL(db.url).password
    if (password) expect(resume).not.toContain(password)
    else expect(resume).toBe(`Resume with: airlock ${args.join(' ')}`)
    // Every item taken has its line and is named by its key; one failure at most, not one per item left.
    expect(items.length).toBeLessThan(tasks)
    expect(items.every((item) => item.dag_id === 'etl')).toBe(true)
    expect(failed.length).toBeLessThanOrEqual(1)
    // What the lines say committed is what the database holds (the failed one may have
    // committed before its connection was cut: "unknown" until read again).
    const completed = items.filter((item) => item.outcome === 'completed').length
    expect(await successes('etl')).toBeGreaterThanOrEqual(completed)
    expect(await successes('etl')).toBeLessThanOrEqual(completed + failed.length)

    // The same command, once the server is back, finishes the rest.
    const resumed = await runCli(args.map((arg) => (arg === proxy.url ? db.url : arg)))
    expect(resumed.code).toBe(0)
    expect(await successes('etl')).toBe(tasks)
  })

  it('a server that stops answering ends the run within the connect timeout and the retries, not one wait per item left', async () => {
    const tasks = 150
    await scenario(db.knex).producer('silent', {tasks, outlets: 1}).build()
    const proxy = await cuttableProxy(new URL(db.url))
    const running = startCli([
      'complete',
      '--database-url',
      proxy.url,
      '--dag-id',
      'silent',
      '--yes',
      '--concurrency',
      '2',
      '--connect-timeout',
      '1s',
      '--ndjson',
    ])
    await afterItems(running, 10)
    proxy.cut('silent')
    const cutAt = performance.now()
    const result = await running.finished
    const afterCutMs = performance.now() - cutAt

    expect(result.code).toBe(7)
    const items = linesOf(result.stdout).filter((l) => l.type === 'item')
    // A wait per item left would be over 100 s (each connect waits 1 s); the bound is one
    // connect timeout per item in flight, plus the retries' back-off and the process's exit.
    expect(tasks - items.length).toBeGreaterThan(100)
    expect(afterCutMs).toBeLessThan(20_000)
  })

  it('replay-events by event id stops at the loss too: exit 7, the events never reached are not tried', async () => {
    const tasks = 40
    await scenario(db.knex).producer('again', {tasks, outlets: 1}).build()
    expect((await runCli(['complete', '--database-url', db.url, '--dag-id', 'again', '--yes'])).code).toBe(0)
    const ids = await db.knex('asset_event').where({source_dag_id: 'again'}).orderBy('id').pluck('id')
    expect(ids).toHaveLength(tasks)
    const proxy = await cuttableProxy(new URL(db.url))
    const running = startCli([
      'replay-events',
      '--database-url',
      proxy.url,
      ...ids.flatMap((id) => ['--event-id', String(id)]),
      '--yes',
      '--concurrency',
      '1',
      '--ndjson',
    ])
    await afterItems(running, 5)
    proxy.cut()
    const result = await running.finished

    expect(result.code).toBe(7)
    const lines = linesOf(result.stdout)
    const items = lines.filter((l) => l.type === 'item')
    expect(items.length).toBeLessThan(tasks)
    expect(items.filter((item) => item.outcome === 'failed').length).toBeLessThanOrEqual(1)
    expect(lines.at(-1)).toMatchObject({type: 'error', status: 7, error: {code: 'DATABASE_UNREACHABLE'}})
    expect(lines.at(-1)!.error!.message).toContain(`${tasks - items.length} never reached`)
  })

  it('audit-events --fix stops at the loss: exit 7, the groups never reached keep their duplicates', async () => {
    const tasks = 40
    await scenario(db.knex).producer('dups', {tasks, outlets: 1}).build()
    expect((await runCli(['complete', '--database-url', db.url, '--dag-id', 'dups', '--yes'])).code).toBe(0)
    // A retried request's second copy of every event: one duplicate group per task instance.
    const originals = await db.knex('asset_event').where({source_dag_id: 'dups'}).orderBy('id')
    for (const original of originals) {
      await db.knex('asset_event').insert({
        ...original,
        id: undefined,
        timestamp: db.knex.raw(`?::timestamptz + interval '1 second'`, [original.timestamp]),
      })
    }
    const fixes = async () =>
      Number((await db.knex('log').where({event: 'airlock.audit-events.fix'}).count({n: '*'}))[0]!.n)
    const proxy = await cuttableProxy(new URL(db.url))
    const running = startCli([
      'audit-events',
      '--database-url',
      proxy.url,
      '--dag-id',
      'dups',
      '--fix',
      '--no-dry-run',
      '--yes',
      '--json',
    ])
    while ((await fixes()) < 3 && running.child.exitCode === null) await new Promise((r) => setTimeout(r, 20))
    proxy.cut()
    const result = await running.finished

    expect(result.code, result.stdout.slice(0, 400) + result.stderr).toBe(7)
    expect(JSON.parse(result.stdout)).toMatchObject({status: 7, error: {code: 'DATABASE_UNREACHABLE'}})
    const done = await fixes()
    expect(done).toBeGreaterThanOrEqual(3)
    expect(done).toBeLessThan(tasks)
    const [left] = await db.knex('asset_event').where({source_dag_id: 'dups'}).count({n: '*'})
    expect(Number(left!.n)).toBe(2 * tasks - done)
  })
})
