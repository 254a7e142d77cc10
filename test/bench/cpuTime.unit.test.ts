import {describe, expect, it} from 'vitest'

import {isLocalServer, postgresCpuMs, postmasterOf, withCpuPerItem} from '../../src/bench/cpuTime.js'

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

  it("reads a server's CPU from /proc: its postmaster and the postmaster's children, never less than before", async () => {
    // This process stands in for a postmaster: its parent is found the way a backend's is.
    const parent = await postmasterOf(process.pid)
    if (process.platform !== 'linux') {
      expect(parent).toBeNull()
      return
    }
    expect(parent).toBe(process.ppid)
    const first = await postgresCpuMs(process.pid)
    // 30 ms of CPU, however busy the machine (/proc counts in 10 ms ticks).
    const spent = process.cpuUsage()
    while (process.cpuUsage(spent).user < 30_000) Math.sqrt(Math.random())
    const second = await postgresCpuMs(process.pid)
    expect(first).toBeGreaterThanOrEqual(0)
    expect(second).toBeGreaterThan(first!)
    expect(await postgresCpuMs(2 ** 22 + 1)).toBeNull()
  })

  it("divides the client's CPU by the items done, and leaves the server's out when it is elsewhere", async () => {
    const result = await withCpuPerItem(null, () => {
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
