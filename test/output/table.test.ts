import {describe, expect, it} from 'vitest'

import {keyColumn, renderTable} from '../../src/output/table.js'

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
    expect(row).toMatch(/^dotodo_daily_/)
    expect(row).toContain('…')
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
