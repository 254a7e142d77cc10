/**
 * The hard wrap oclif's help applies to every paragraph (wrap-ansi 7 with `{hard: true}`, trimming
 * and word wrap on), for text of printable ASCII only: there every character is one column wide and
 * there is no escape code to carry across lines. Anything else returns undefined and goes to
 * wrap-ansi itself.
 *
 * Why: wrap-ansi measures every word and every partial row with string-width, which runs its emoji
 * regex on each; its 81 calls took 9-20 ms of the ~170 ms of `airlock complete --help` (most of a
 * help page's own time). This is the same algorithm with the widths known, and gives the same text:
 * test/cli/wrapPlainText.unit.test.ts compares it with oclif's own wrap on generated text, and
 * test/cli/helpText.test.ts every help page with oclif's own.
 */
export function wrapPlainText(text: string, columns: number): string | undefined {
  if (columns < 1 || !/^[\x20-\x7e\n]*$/.test(text)) return undefined
  return text
    .split('\n')
    .map((line) => wrapLine(line, columns))
    .join('\n')
}

function wrapLine(line: string, columns: number): string {
  if (line.trim() === '') return ''
  const rows: string[] = []
  let row = ''
  for (const [index, word] of line.split(' ').entries()) {
    row = row.trimStart()
    // Runs of spaces inside a row are kept: each empty word adds one.
    if (index !== 0 && row.length > 0) row += ' '
    if (word.length > columns) {
      // A word longer than a row is cut into rows of `columns` characters, starting on the current
      // row only when that does not take more rows than starting on a new one.
      const startingHere = 1 + Math.floor((word.length - (columns - row.length) - 1) / columns)
      const startingOnNext = Math.floor((word.length - 1) / columns)
      if (startingOnNext < startingHere) {
        rows.push(row)
        row = ''
      }
      row = cutWord(rows, row, word, columns)
      continue
    }
    if (row.length + word.length > columns && row.length > 0 && word.length > 0) {
      rows.push(row)
      row = ''
    }
    row += word
  }
  rows.push(row)
  return rows.map((wrapped) => wrapped.replace(/ +$/, '')).join('\n')
}

/** Appends `word` to `row` a character at a time, closing rows at `columns`; returns the open row. */
function cutWord(rows: string[], row: string, word: string, columns: number): string {
  let current = row
  // Plain ASCII: one UTF-16 unit is one character and one column.
  for (let index = 0; index < word.length; index++) {
    if (current.length + 1 > columns) {
      rows.push(current)
      current = ''
    }
    current += word.charAt(index)
    if (current.length === columns && index < word.length - 1) {
      rows.push(current)
      current = ''
    }
  }
  return current
}
