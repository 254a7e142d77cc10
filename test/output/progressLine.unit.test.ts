import {Writable} from 'node:stream'

import {describe, expect, it, vi} from 'vitest'

import {createProgress, formatSeconds} from '../../src/output/progress.js'

/** A plain (non-terminal) stream, as stderr is under cron or CI, keeping what was written. */
function logStream(): NodeJS.WriteStream & {lines: () => string[]} {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString())
      callback()
    },
  }) as unknown as NodeJS.WriteStream & {lines: () => string[]}
  Object.assign(stream, {isTTY: false, lines: () => chunks.join('').split('\n').filter(Boolean)})
  return stream
}

describe('the progress line', () => {
  it('gives a rate and an ETA counted from the first item done, not from the start', () => {
    vi.useFakeTimers({now: 0})
    try {
      const stream = logStream()
      const progress = createProgress({
        label: 'audit-events: classified',
        total: 1000,
        stream,
        intervalMs: 0,
        enabled: true,
      })
      // A minute waiting for the server's sort, then 100 items in the first batch: no rate yet.
      vi.setSystemTime(60_000)
      progress.update(100, '')
      // 200 more in 2 s: 100/s, so 700 left take 7 s (from the start it would read 5/s and 140 s).
      vi.setSystemTime(62_000)
      progress.update(300, '')
      progress.update(1000, '')
      expect(stream.lines()).toEqual([
        'audit-events: classified: 100/1000',
        'audit-events: classified: 300/1000 · 100/s · ETA 7s',
        'audit-events: classified: 1000/1000 · 450/s',
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('formats an ETA as seconds, minutes or hours', () => {
    expect(formatSeconds(0.4)).toBe('0s')
    expect(formatSeconds(42)).toBe('42s')
    expect(formatSeconds(185)).toBe('3m05s')
    expect(formatSeconds(3720)).toBe('1h02m')
  })
})
