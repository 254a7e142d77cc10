import {Writable} from 'node:stream'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {exportEvents} from '../../src/export/exportEvents.js'
import {airflowOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * export-events keeps flat memory through a slow reader: every backpressure wait removes what it
 * listens with. The world: 12,000 events (three pages of 5,000) written set-based.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0', 2)
  const world = await scenario(db.knex).producer('etl', {outlets: 1}).build()
  const asset = world.asset('etl.produce.out_1')
  const ti = world.ti('etl')
  await db.knex.raw(
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
     select ?, '{}', ?, ?, ?, -1, now() - make_interval(secs => n) from generate_series(1, 12000) n`,
    [asset.id, ti.dag_id, ti.run_id, ti.task_id],
  )
})
afterAll(async () => db?.drop())

/** A reader that takes one small chunk at a time, so nearly every line waits for 'drain'. */
function slowReader(): Writable & {lines: number; waits: number; maxErrorListeners: number; maxDrainListeners: number} {
  const reader = new Writable({
    highWaterMark: 16,
    write(chunk: Buffer, _encoding, done) {
      reader.lines += chunk.toString().split('\n').length - 1
      reader.maxErrorListeners = Math.max(reader.maxErrorListeners, reader.listenerCount('error'))
      reader.maxDrainListeners = Math.max(reader.maxDrainListeners, reader.listenerCount('drain'))
      setImmediate(done)
    },
  }) as Writable & {lines: number; waits: number; maxErrorListeners: number; maxDrainListeners: number}
  Object.assign(reader, {lines: 0, waits: 0, maxErrorListeners: 0, maxDrainListeners: 0})
  reader.on('drain', () => reader.waits++)
  return reader
}

describe('export-events through a slow reader', () => {
  it('every event arrives, and the listeners on the output stay bounded however many times it waits', async () => {
    const reader = slowReader()
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      const result = await exportEvents(await airflowOf(db.knex), {assets: []}, reader)
      expect(result.exported).toBe(12000)
    } finally {
      process.off('warning', onWarning)
    }

    await new Promise<void>((resolve) => reader.end(resolve))
    expect(reader.lines).toBe(12000)
    // It really waited, write after write (the export writes about 64 KB at a time): the case
    // that leaked one listener per wait.
    expect(reader.waits).toBeGreaterThan(20)
    // Its own 'error' listener, the reader's 'drain' counter, and one of each while a wait is on.
    expect(reader.maxErrorListeners).toBeLessThanOrEqual(2)
    expect(reader.maxDrainListeners).toBeLessThanOrEqual(2)
    expect(reader.listenerCount('error')).toBeLessThanOrEqual(1)
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
  })
})
