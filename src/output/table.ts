/**
 * Plain-text tables and key/value blocks for terminals. No colours: output is often pasted into
 * incident channels and tickets.
 */
export function renderTable(headers: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const cells = rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))))
  const widths = headers.map((header, column) => Math.max(header.length, ...cells.map((row) => row[column]?.length ?? 0)))
  const line = (values: string[]) =>
    values
      .map((value, column) => value.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(headers), line(widths.map((width) => '─'.repeat(width))), ...cells.map(line)].join('\n')
}

export function renderKeyValues(pairs: Array<[string, string | number | boolean | null | undefined]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length))
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value === null || value === undefined ? '-' : String(value)}`).join('\n')
}
