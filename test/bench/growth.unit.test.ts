import {describe, expect, it} from 'vitest'

import {growthChart, growthMarkdown, growthOf, parseEventSizes} from '../../src/bench/growth.js'
import type {ScaleReport} from '../../src/bench/scale.js'

/** A scale report with only what the growth reads: the world's size and each command's time, rows and RSS. */
function report(
  events: number,
  commands: Array<[key: string | undefined, seconds: number, rows: number, rss: number]>,
) {
  return {
    world: {events, taskInstances: events / 10},
    commands: commands.map(([key, seconds, rows, peakRssMb]) => ({
      what: `${key ?? 'unkeyed'} over ${rows}`,
      ...(key ? {key} : {}),
      args: [],
      seconds,
      rows,
      rowsPerSecond: rows / seconds,
      peakRssMb,
      exitCode: 0,
    })),
  } as unknown as ScaleReport
}

describe('bench --scale --sizes: the growth across worlds', () => {
  const reports = [
    report(100_000, [
      ['audit-events', 1, 100_000, 120],
      ['export-events', 0.5, 100_000, 110],
      [undefined, 9, 10, 100],
    ]),
    report(1_000_000, [
      ['audit-events', 12, 1_000_000, 130],
      ['export-events', 5, 1_000_000, 111],
    ]),
  ]

  it('lines each keyed command up across the worlds as microseconds per row and peak RSS', () => {
    const growth = growthOf(reports)
    expect(growth.worlds).toEqual([
      {events: 100_000, taskInstances: 10_000},
      {events: 1_000_000, taskInstances: 100_000},
    ])
    expect(growth.rows).toEqual([
      {
        key: 'audit-events',
        points: [
          {microsPerRow: 10, peakRssMb: 120},
          {microsPerRow: 12, peakRssMb: 130},
        ],
      },
      {
        key: 'export-events',
        points: [
          {microsPerRow: 5, peakRssMb: 110},
          {microsPerRow: 5, peakRssMb: 111},
        ],
      },
    ])
    expect(growthMarkdown(growth)).toContain('| audit-events | 10.0 µs/row, 120 MB | 12.0 µs/row, 130 MB |')
  })

  it('draws one line per command, a point per world', () => {
    const svg = growthChart(growthOf(reports), 'caption <&>')
    expect(svg.match(/<polyline /g)).toHaveLength(2)
    expect(svg.match(/<circle /g)).toHaveLength(4)
    expect(svg).toContain('100k')
    expect(svg).toContain('1M')
    expect(svg).toContain('caption &lt;&amp;&gt;')
  })

  it('puts time per row on a log scale, a gridline per decade, so commands 100× apart both read', () => {
    const svg = growthChart(
      growthOf([
        report(100_000, [
          ['fast', 1, 100_000, 100],
          ['slow', 100, 100_000, 100],
        ]),
        report(1_000_000, [
          ['fast', 10, 1_000_000, 100],
          ['slow', 1000, 1_000_000, 100],
        ]),
      ]),
      '',
    )
    const labels = [...svg.matchAll(/text-anchor="end">([^<]+)</g)].map((m) => m[1])
    expect(labels).toEqual(['10', '100', '1000'])
    // 10 µs on the bottom gridline, 1000 µs on the top one: each line flat, a decade between them.
    const heights = [...svg.matchAll(/<circle cx="[^"]+" cy="([^"]+)"/g)].map((m) => Number(m[1]))
    expect(heights[0]).toBe(heights[1])
    expect(heights[2]).toBe(heights[3])
    expect(heights[0]! - heights[2]!).toBeGreaterThan(200)
  })

  it('draws an empty growth and rows faster than 0.1 µs inside the axes, never NaN', () => {
    const empty = growthChart({worlds: [{events: 1000, taskInstances: 100}], rows: []}, '')
    expect(empty).not.toContain('NaN')
    const fast = growthChart(
      growthOf([report(100_000, [['fast', 0.001, 100_000, 100]]), report(1_000_000, [['fast', 0.01, 1_000_000, 100]])]),
      '',
    )
    expect(fast).not.toContain('NaN')
    const heights = [...fast.matchAll(/<circle cx="[^"]+" cy="([^"]+)"/g)].map((m) => Number(m[1]))
    const gridlines = [...fast.matchAll(/<line x1="[^"]+" x2="[^"]+" y1="([^"]+)"/g)].map((m) => Number(m[1]))
    for (const h of heights) expect(h).toBeLessThanOrEqual(Math.max(...gridlines))
  })

  it('reads sizes in events with k and M, as whole task instances, and refuses what no world can be', () => {
    expect(parseEventSizes('100k,1M,10M', 10)).toEqual([10_000, 100_000, 1_000_000])
    expect(parseEventSizes('2500', 10)).toEqual([250])
    expect(() => parseEventSizes('1G', 10)).toThrow(/--sizes takes asset event counts/)
    expect(() => parseEventSizes('1k', 10)).toThrow(/100 task instances at 10 events each; a world holds 200/)
    expect(() => parseEventSizes('100M', 10)).toThrow(/a world holds 200 to 2,000,000/)
  })
})
