import {peakRssOf} from './memory.js'

/** One command of `bench --scale`, run as an operator runs it: a child process, timed whole. */
export interface ScaleCommandRow {
  what: string
  /** The same command at every world size (`bench --scale --sizes`): what the growth table lines up. */
  key?: string
  args: string[]
  seconds: number
  rows: number
  rowsPerSecond: number
  peakRssMb: number
  exitCode: number | null
}

/** Runs `args` as airlock in a child process and records its time, rows/s and peak RSS into `rows`. */
export async function timeCommand(
  rows: ScaleCommandRow[],
  what: string,
  args: string[],
  rowsRead: number,
  options: {accepted?: number[]; stdoutFile?: string; key?: string; progress: (line: string) => void},
): Promise<void> {
  options.progress(`scale: ${what}…`)
  const result = await peakRssOf(args, options.accepted ?? [0], options.stdoutFile)
  rows.push({
    what,
    ...(options.key ? {key: options.key} : {}),
    args: result.args,
    seconds: result.seconds,
    rows: rowsRead,
    rowsPerSecond: rowsRead / result.seconds,
    peakRssMb: result.peakRssMb,
    exitCode: result.exitCode,
  })
}
