/**
 * Plain-text tables and key/value blocks for terminals. No colours: output is often pasted into
 * incident channels and tickets.
 */
export interface TableOptions {
  /** Fit this many columns (a terminal's width): the widest cells are cut with an ellipsis, never wrapped. */
  width?: number | undefined
}

/** Narrowest a column is cut to while fitting a width (its header may be cut too). */
const minColumn = 6

export function renderTable(
  headers: string[],
  rows: Array<Array<string | number | null | undefined>>,
  options: TableOptions = {},
): string {
  const cells = rows.map((row) =>
    row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell).replace(/\s*\n\s*/g, ' '))),
  )
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...cells.map((row) => row[column]?.length ?? 0)),
  )
  if (options.width) fit(widths, options.width)
  const line = (values: string[]) =>
    values
      .map((value, column) => cut(value, widths[column] ?? 0).padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(headers), line(widths.map((width) => '─'.repeat(width))), ...cells.map(line)].join('\n')
}

/** Narrows the widest columns, one character at a time, until the row fits `width` or none can give more. */
function fit(widths: number[], width: number): void {
  const total = () => widths.reduce((sum, w) => sum + w, 0) + 2 * Math.max(0, widths.length - 1)
  while (total() > width) {
    let widest = -1
    for (let column = 0; column < widths.length; column++) {
      if (widths[column]! > minColumn && (widest < 0 || widths[column]! > widths[widest]!)) widest = column
    }
    if (widest < 0) return
    widths[widest]!--
  }
}

const cut = (value: string, width: number) =>
  value.length <= width ? value : `${value.slice(0, Math.max(0, width - 1))}…`

export function renderKeyValues(pairs: Array<[string, string | number | boolean | null | undefined]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length))
  return pairs
    .map(([key, value]) => `${key.padEnd(width)}  ${value === null || value === undefined ? '-' : String(value)}`)
    .join('\n')
}
