import {describe, expect, it} from 'vitest'

import {renderTable} from '../../src/output/table.js'

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
