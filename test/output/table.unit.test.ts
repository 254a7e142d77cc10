import {describe, expect, it} from 'vitest'

import {cutKey, keyColumn, renderTable} from '../../src/output/table.js'

describe('renderTable', () => {
  const rows = [
    ['etl_daily', 'scheduled__2026-12-01T00:00:00+00:00', 'completed'],
    [
      'a_dag_with_a_very_long_name_that_goes_on_and_on',
      'manual__2026-12-01T03:14:15.926535+00:00',
      'conflict (was failed)',
    ],
  ]

  it('without a width, every cell is whole', () => {
    const text = renderTable(['dag', 'run', 'outcome'], rows)
    expect(text).toContain('a_dag_with_a_very_long_name_that_goes_on_and_on')
    expect(text).toContain('manual__2026-12-01T03:14:15.926535+00:00')
  })

  it('fits a terminal width: no line longer than it, the widest cells cut with an ellipsis, short ones whole', () => {
    const text = renderTable(['dag', 'run', 'outcome'], rows, {width: 60})
    const lines = text.split('\n')
    expect(lines).toHaveLength(4)
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60)
    expect(text).toContain('…')
    expect(text).toContain('completed')
    expect(text).not.toContain('a_dag_with_a_very_long_name_that_goes_on_and_on')
  })

  it('a newline inside a cell never breaks the row', () => {
    const text = renderTable(['outcome'], [['failed: first line\nsecond line']])
    expect(text.split('\n')).toHaveLength(3)
  })
})

describe('renderTable keeps the part that names the row', () => {
  const key = 'dotodo_daily_analytics_rollup/scheduled__2024-06-01T00:30:00+00:00/analytics_task_7[3]'
  const rows = [[key, 'completed', 4, 2, '1.92', '14.3']]
  const columns = [
    keyColumn('task instance'),
    {header: 'outcome', keep: true},
    'events',
    'queued',
    {header: 'lock hold ms', optional: true},
    {header: 'total ms', optional: true},
  ]

  it('at 120 columns the whole key shows: timing columns go first', () => {
    const text = renderTable(columns, rows, {width: 120})
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(120)
    expect(text).toContain(key)
    expect(text).toContain('completed')
  })

  it('at 80 columns the key is cut in the middle: the DAG starts it, the task and map index end it', () => {
    const text = renderTable(columns, rows, {width: 80})
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
    expect(text).not.toContain('lock hold ms')
    const row = text.split('\n')[2]!
    expect(row).toMatch(/^dotodo_da/)
    expect(row).toContain('…')
    expect(row).toContain('2024-06-01')
    expect(row).toContain('/analytics_task_7[3]')
    expect(row).toContain('completed')
  })

  it('the rule under the header is as wide as the columns shown, never cut', () => {
    const text = renderTable(columns, rows, {width: 80})
    const rule = text.split('\n')[1]!
    expect(rule).toMatch(/^[─ ]+$/)
    expect(rule.length).toBeLessThanOrEqual(80)
  })
})

describe('a dag/run/task[map] key cut to a width', () => {
  const dag = 'sales_pipeline_daily_with_a_long_name'
  const key = (day: string) => `${dag}/scheduled__2026-12-${day}T00:00:00+00:00/extract[12]`

  it('two runs of one long DAG never read alike: the DAG id is cut first, then the run type, never the date', () => {
    for (const width of [30, 40, 50, 60, 80]) {
      const [first, second] = [cutKey(key('03'), width), cutKey(key('04'), width)]
      expect(first.length).toBeLessThanOrEqual(width)
      expect(first.endsWith('/extract[12]')).toBe(true)
      expect(first).not.toBe(second)
      expect(first).toContain('2026-12-03')
    }
    // Room to spare: the run whole, only the DAG id's end cut.
    expect(cutKey(key('03'), 70)).toBe('sales_pipeline_daily…/scheduled__2026-12-03T00:00:00+00:00/extract[12]')
  })

  it('in a table at 80 columns, the rows of two runs differ', () => {
    const text = renderTable(
      [keyColumn('task instance'), {header: 'outcome', keep: true}, 'events', 'queued'],
      [
        [key('03'), 'completed (was running)', 3, 1],
        [key('04'), 'completed (was running)', 3, 1],
      ],
      {width: 80},
    )
    const [, , first, second] = text.split('\n')
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
    expect(first).toContain('2026-12-03')
    expect(second).toContain('2026-12-04')
  })

  it('what is not a three-part key is cut in the middle, as before', () => {
    expect(cutKey('a'.repeat(30) + 'z'.repeat(30), 21)).toBe('a'.repeat(6) + '…' + 'z'.repeat(14))
    expect(cutKey('short', 10)).toBe('short')
  })
})
