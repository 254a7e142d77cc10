import {describe, expect, it} from 'vitest'

import {isLocalServer, postgresCpuMs, withCpuPerItem} from '../../src/bench/cpuTime.js'

describe("the benchmark's CPU accounting", () => {
  it('counts a server as local only on loopback, localhost or a Unix socket', () => {
    expect(isLocalServer('postgresql://u@127.0.0.1:5432/db')).toBe(true)
    expect(isLocalServer('postgresql://u@localhost/db')).toBe(true)
    expect(isLocalServer('postgresql://u@[::1]:5432/db')).toBe(true)
    expect(isLocalServer('postgresql://u@localhost/db?host=%2Fvar%2Frun%2Fpostgresql')).toBe(true)
    expect(isLocalServer('postgresql://u@localhost/db?host=db.internal')).toBe(false)
    expect(isLocalServer('postgresql:///db')).toBe(true)
    expect(isLocalServer('not a url')).toBe(false)
    expect(isLocalServer('postgresql://u@db.internal:5432/db')).toBe(false)
    expect(isLocalServer('postgresql://u@10.0.0.5/db')).toBe(false)
  })

  it('reads PostgreSQL CPU from /proc as milliseconds, never less than before', async () => {
    const first = await postgresCpuMs()
    const second = await postgresCpuMs()
    if (process.platform !== 'linux') {
      expect(first).toBeNull()
      return
    }
    expect(first).toBeGreaterThanOrEqual(0)
    expect(second).toBeGreaterThanOrEqual(first!)
  })

  it("divides the client's CPU by the items done, and leaves the server's out when it is elsewhere", async () => {
    const result = await withCpuPerItem(false, () => {
      const until = Date.now() + 30
      while (Date.now() < until) Math.sqrt(Math.random())
      return Promise.resolve({done: 2})
    })
    expect(result.done).toBe(2)
    expect(result.cpu.serverMs).toBeNull()
    // About 30 ms of CPU spent, over 2 items.
    expect(result.cpu.clientMs).toBeGreaterThan(5)
    expect(result.cpu.clientMs).toBeLessThan(1000)
  })
})
