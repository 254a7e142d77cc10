import net from 'node:net'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {startCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * The server goes away in the middle of a batch: airlock reaches the database through a TCP
 * proxy on 127.0.0.1 that the test closes once some items are done. A lost server is one event,
 * not a failure per item left: no new item is started, exit 7, every item accounted for.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

/** A proxy to the test database that can be cut: its listener closed and every socket destroyed. */
async function cuttableProxy(target: URL): Promise<{url: string; cut: () => void}> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => undefined)
      socket.on('close', () => sockets.delete(socket))
    }
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    cut() {
      server.close()
      for (const socket of sockets) socket.destroy()
    },
  }
}

describe('the server goes away mid-run', () => {
  it('complete stops taking items: exit 7, only the item in flight fails, each line named by its key, the rest never reached', async () => {
    const tasks = 120
    await scenario(db.knex).producer('etl', {tasks, outlets: 1}).build()
    const proxy = await cuttableProxy(new URL(db.url))
    const {child, finished} = startCli([
      'complete',
      '--database-url',
      proxy.url,
      '--dag-id',
      'etl',
      '--yes',
      '--concurrency',
      '1',
      '--ndjson',
    ])
    let out = ''
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (out.split('"type":"item"').length > 10) resolve()
      })
    })
    proxy.cut()
    const result = await finished

    expect(result.code).toBe(7)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            type: string
            outcome?: string
            dag_id?: string | null
            status?: number
            error?: {code: string; message: string}
          },
      )
    const items = lines.filter((l) => l.type === 'item')
    // The stream ends as a batch the database cut short: one error line, saying what became of the rest.
    const last = lines.at(-1)!
    expect(last).toMatchObject({type: 'error', status: 7, error: {code: 'DATABASE_UNREACHABLE'}})
    expect(last.error!.message).toContain(`${items.length} items taken`)
    expect(last.error!.message).toContain(`${tasks - items.length} never reached`)
    // Every item taken has its line and is named by its key; one failure, not one per item left.
    expect(items.length).toBeLessThan(tasks)
    expect(items.every((item) => item.dag_id === 'etl')).toBe(true)
    const failed = items.filter((item) => item.outcome === 'failed')
    expect(failed.length).toBeLessThanOrEqual(1)
    // What the lines say committed is what the database holds (the failed one may have
    // committed before its connection was cut: "unknown" until read again).
    const completed = items.filter((item) => item.outcome === 'completed').length
    const success = Number(
      (await db.knex('task_instance').where({dag_id: 'etl', state: 'success'}).count({n: '*'}))[0]!.n,
    )
    expect(success).toBeGreaterThanOrEqual(completed)
    expect(success).toBeLessThanOrEqual(completed + failed.length)
  })
})
