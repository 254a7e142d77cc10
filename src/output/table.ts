/**
 * Plain-text tables and key/value blocks for terminals. No colours: output is often pasted into
 * incident channels and tickets.
 */
export interface TableOptions {
  /** Fit this many columns (a terminal's width): cells are cut with an ellipsis, never wrapped. */
  width?: number | undefined
}

/**
 * A column and what it may lose when the table must fit a width. `keep`: what the row is about
 * (its key, its outcome): cut only when every other column is as narrow as it goes. `middle`: cut
 * in the middle; a dag/run/task[map] key is cut by its parts (cutKey), so the task[map] and the
 * run's time stay and rows of two runs never read alike. `optional`: context (timings) dropped
 * whole before anything is cut.
 */
export interface Column {
  header: string
  keep?: boolean
  middle?: boolean
  optional?: boolean
}

/** The column that names a row: dag/run/task[map], kept and cut in the middle. */
export const keyColumn = (header: string): Column => ({header, keep: true, middle: true})

/** Narrowest a column is cut to while fitting a width (its header may be cut too). */
const minColumn = 6

type Cell = string | number | null | undefined

export function renderTable(columns: Array<string | Column>, rows: Cell[][], options: TableOptions = {}): string {
  const specs = columns.map((column) => (typeof column === 'string' ? {header: column} : column))
  const cells = rows.map((row) =>
    row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell).replace(/\s*\n\s*/g, ' '))),
  )
  const natural = specs.map(({header}, column) =>
    Math.max(header.length, ...cells.map((row) => row[column]?.length ?? 0)),
  )
  const shown = options.width
    ? layout(specs, natural, options.width)
    : natural.map((width, column) => ({column, width}))
  const line = (values: string[]) =>
    shown
      .map(({column, width}) => {
        const value = values[column] ?? ''
        return (specs[column]?.middle ? cutKey : cutEnd)(value, width).padEnd(width)
      })
      .join('  ')
      .trimEnd()
  const rule = shown.map(({width}) => '─'.repeat(width)).join('  ')
  return [line(specs.map((s) => s.header)), rule, ...cells.map(line)].join('\n')
}

/**
 * Which columns show, how wide, within `width`: optional columns go first (last first), then the
 * other columns narrow (widest first), and only then are the kept columns cut.
 */
function layout(specs: Column[], natural: number[], width: number): Array<{column: number; width: number}> {
  let shown = natural.map((w, column) => ({column, width: w}))
  const total = () => shown.reduce((sum, s) => sum + s.width, 0) + 2 * Math.max(0, shown.length - 1)
  for (let column = specs.length - 1; column >= 0 && total() > width; column--) {
    if (specs[column]?.optional) shown = shown.filter((s) => s.column !== column)
  }
  const narrow = (which: (column: number) => boolean) => {
    while (total() > width) {
      let widest: {column: number; width: number} | undefined
      for (const s of shown)
        if (which(s.column) && s.width > minColumn && (!widest || s.width > widest.width)) widest = s
      if (!widest) return
      widest.width--
    }
  }
  narrow((column) => !specs[column]?.keep)
  narrow(() => true)
  return shown
}

const cutEnd = (value: string, width: number) =>
  value.length <= width ? value : `${value.slice(0, Math.max(0, width - 1))}…`

/**
 * A dag/run/task[map] key cut by its parts: the task[map] whole, then the run, whose type prefix
 * (`scheduled__`, `manual__`, …) goes before its time does, and the DAG id's end goes first of
 * all (down to a third of the room, at least 8 characters, or what the run's date leaves).
 * Airflow's ids hold no `/`, so the parts are found by it; any other value is cut in the middle.
 */
export function cutKey(value: string, width: number): string {
  if (value.length <= width) return value
  const parts = value.split('/')
  const task = parts.at(-1)!
  const room = width - task.length - 2
  if (parts.length !== 3 || room < 16) return cutMiddle(value, width)
  const [dag, run] = parts as [string, string]
  const dagAtLeast = Math.min(dag.length, Math.max(8, Math.floor(room / 3)))
  const stamp = /^[a-z_]+?__(.+)$/.exec(run)?.[1]
  const runs = stamp === undefined ? [run] : [run, `…${stamp}`]
  for (const candidate of runs) {
    if (room - candidate.length >= dagAtLeast) return `${cutEnd(dag, room - candidate.length)}/${candidate}/${task}`
  }
  // Tight: the run keeps at least its date (`…2026-12-03`), the DAG id what is left.
  const runRoom = stamp === undefined ? room - dagAtLeast : Math.max(room - dagAtLeast, Math.min(12, room - 5))
  return `${cutEnd(dag, room - runRoom)}/${cutEnd(runs.at(-1)!, runRoom)}/${task}`
}

/** A third of the room for the start, the rest for the end: the end identifies the row. */
function cutMiddle(value: string, width: number): string {
  if (value.length <= width) return value
  const head = Math.floor((width - 1) / 3)
  return `${value.slice(0, head)}…${value.slice(value.length - (width - 1 - head))}`
}

export function renderKeyValues(pairs: Array<[string, string | number | boolean | null | undefined]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length))
  return pairs
    .map(([key, value]) => `${key.padEnd(width)}  ${value === null || value === undefined ? '-' : String(value)}`)
    .join('\n')
}
