import {describe, expect, it} from 'vitest'

import {
  parseDuration,
  parseJsonObject,
  parseShard,
  parseTaskInstanceId,
  parseTaskInstanceRef,
  parseTimestamp,
  parseWindowBound,
} from '../../src/cli/parseInput.js'
import {usageMessage} from '../support/usage.js'

const usage = usageMessage

describe('flag parsing', () => {
  it('timestamps: dates, UTC by default, explicit offsets kept', () => {
    expect(parseTimestamp('2026-12-01', '--since').toISOString()).toBe('2026-12-01T00:00:00.000Z')
    expect(parseTimestamp('2026-12-01T03:04:05', '--since').toISOString()).toBe('2026-12-01T03:04:05.000Z')
    expect(parseTimestamp('2026-12-01T03:00:00+02:00', '--since').toISOString()).toBe('2026-12-01T01:00:00.000Z')
    expect(usage(() => parseTimestamp('last tuesday', '--until'))).toContain('--until')
    expect(usage(() => parseTimestamp('2026-13-45', '--until'))).toContain('ISO-8601')
  })

  it('a date or time that does not exist is refused as written, never rolled over', () => {
    expect(usage(() => parseTimestamp('2025-02-30', '--since'))).toBe(
      '--since 2025-02-30: February 2025 has 28 days; nothing was done.',
    )
    expect(usage(() => parseTimestamp('2025-04-31', '--until'))).toContain('April 2025 has 30 days')
    expect(usage(() => parseTimestamp('2025-02-29T00:00:00Z', '--end-date'))).toContain('February 2025 has 28 days')
    expect(usage(() => parseTimestamp('2025-01-01T24:00:00', '--since'))).toContain('no hour 24')
    expect(parseTimestamp('2024-02-29', '--since').toISOString()).toBe('2024-02-29T00:00:00.000Z')
    expect(parseTimestamp('2025-12-31T23:59:59+01:00', '--since').toISOString()).toBe('2025-12-31T22:59:59.000Z')
  })

  it('a window bound is a time, or a whole duration back from now for a cron job (90m, 26h, 7d)', () => {
    const now = new Date('2026-12-04T03:00:00Z')
    expect(parseWindowBound('26h', '--since', now).toISOString()).toBe('2026-12-03T01:00:00.000Z')
    expect(parseWindowBound('7d', '--since', now).toISOString()).toBe('2026-11-27T03:00:00.000Z')
    expect(parseWindowBound('90m', '--until', now).toISOString()).toBe('2026-12-04T01:30:00.000Z')
    expect(parseWindowBound('2026-12-01', '--since', now).toISOString()).toBe('2026-12-01T00:00:00.000Z')
    // A number without a unit, or a unit a window does not take, is refused with the forms.
    for (const bad of ['26', '1.5h', '30s', '2w'])
      expect(usage(() => parseWindowBound(bad, '--since', now))).toContain('90m, 26h or 7d')
    // Anything else it cannot read names both forms too, not only the time.
    for (const bad of ['yesterday', 'last tuesday', '2026-13-45', '12/01/2026', 'now']) {
      const message = usage(() => parseWindowBound(bad, '--until', now))
      expect(message, bad).toBe(
        `--until must be an ISO-8601 time (2026-12-01, 2026-12-01T03:00:00Z) or a whole duration back from now: 90m, 26h or 7d (got "${bad}").`,
      )
    }
    expect(usage(() => parseWindowBound('2025-02-30', '--since', now))).toContain('February 2025 has 28 days')
    expect(usage(() => parseWindowBound('999999999d', '--since', now))).toContain('before the year 1')
  })

  it('--ti-id takes an id or a key as the tables print it, a run id with "/" kept whole', () => {
    expect(parseTaskInstanceRef('0190B4D2-7A4C-7CC1-9E0A-5B8A3F2D4E61')).toEqual({
      tiId: '0190b4d2-7a4c-7cc1-9e0a-5b8a3f2d4e61',
    })
    expect(parseTaskInstanceRef('etl/scheduled__2026-12-01T00:00:00+00:00/load')).toEqual({
      key: {dagId: 'etl', runId: 'scheduled__2026-12-01T00:00:00+00:00', taskId: 'load', mapIndex: -1},
    })
    expect(parseTaskInstanceRef('etl/manual/2026/12/group.load[3]')).toEqual({
      key: {dagId: 'etl', runId: 'manual/2026/12', taskId: 'group.load', mapIndex: 3},
    })
    for (const bad of ['etl/load', 'etl//load', 'not-a-uuid'])
      expect(usage(() => parseTaskInstanceRef(bad))).toContain('dag_id/run_id/task_id[map_index]')
  })

  it('shards are K/N with 1 ≤ K ≤ N', () => {
    expect(parseShard('2/4')).toEqual({index: 2, count: 4})
    for (const bad of ['0/4', '5/4', '1/0', '1-4', 'x']) expect(usage(() => parseShard(bad))).toContain('K/N')
  })

  it('--extra must be a JSON object and is normalised', () => {
    expect(parseJsonObject(' {"a": 1} ', '--extra')).toBe('{"a":1}')
    expect(usage(() => parseJsonObject('[1]', '--extra'))).toContain('JSON object')
    expect(usage(() => parseJsonObject('{', '--extra'))).toContain('not valid JSON')
  })

  it('durations in one vocabulary (ms, s, m or min, h) within bounds', () => {
    expect(parseDuration('5m', '--lock-timeout')).toBe(300_000)
    expect(parseDuration('1h', '--lock-timeout')).toBe(3_600_000)
    expect(usage(() => parseDuration('2h', '--lock-timeout'))).toContain('between 1ms and 1h')
    expect(parseDuration('2h', '--duplicate-window', 7 * 24 * 3_600_000)).toBe(7_200_000)
    expect(parseDuration('5s', '--lock-timeout')).toBe(5000)
    expect(parseDuration('250ms', '--lock-timeout')).toBe(250)
    // A bare number meant seconds to whoever typed it: refused, naming the forms.
    expect(usage(() => parseDuration('5', '--lock-timeout'))).toBe(
      '--lock-timeout must be a duration with its unit: 500ms, 5s, 5m or 1h (got "5", a number without a unit).',
    )
    expect(parseDuration('1.5min', '--lock-timeout')).toBe(90_000)
    expect(usage(() => parseDuration('0s', '--lock-timeout'))).toContain('between')
    expect(usage(() => parseDuration('soon', '--statement-timeout'))).toContain('--statement-timeout')
  })

  it('task instance ids are UUIDs', () => {
    expect(parseTaskInstanceId('0193E3B2-5F7E-7C1A-9A59-3F1D2E4C5B6A')).toBe('0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a')
    expect(usage(() => parseTaskInstanceId('42'))).toContain('UUID')
  })
})
