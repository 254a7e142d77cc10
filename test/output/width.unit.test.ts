import {describe, expect, it} from 'vitest'

import {tableWidth} from '../../src/output/width.js'

describe('the width human tables fit', () => {
  const piped = {isTTY: false}
  const terminal = {isTTY: true, columns: 120}

  it('COLUMNS, when set to a width, piped or not', () => {
    expect(tableWidth({COLUMNS: '80'}, piped, piped)).toBe(80)
    expect(tableWidth({COLUMNS: '80'}, terminal, terminal)).toBe(80)
  })

  it("else the terminal's, stdout's first, then stderr's", () => {
    expect(tableWidth({}, terminal, piped)).toBe(120)
    expect(tableWidth({}, piped, {isTTY: true, columns: 100})).toBe(100)
  })

  it('else none: piped output keeps every value whole; a COLUMNS that is not a width is ignored', () => {
    expect(tableWidth({}, piped, piped)).toBeUndefined()
    for (const COLUMNS of ['', '0', 'wide', '-5', '80px', '999999'])
      expect(tableWidth({COLUMNS}, piped, piped)).toBeUndefined()
    expect(tableWidth({}, {isTTY: true, columns: 0}, piped)).toBeUndefined()
  })
})
