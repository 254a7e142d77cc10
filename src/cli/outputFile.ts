import type {Writable} from 'node:stream'

import {AirlockError, usageError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {createLineFile, whyNotWritable, type LineFile} from '../output/lineFile.js'
import {expandOutputName} from './outputName.js'

/**
 * The one way a command writes its rows: --output's file (named, checked, opened new), the NDJSON
 * line of each row (to the file, and to stdout under --ndjson), and the rows a human table keeps.
 * The batch run, audit-events and export-events all go through it.
 */

/** Set from the parsed flags: `json` (one envelope), `ndjson` (lines streamed as rows come) or `human`. */
export type OutputMode = 'human' | 'json' | 'ndjson'

/** A file every row goes to as a JSON line (--output). */
export interface ItemSink {
  path: string
  write(line: string): void
}

/** The rows a human table shows at most; the rest are counted as omitted (--output and --ndjson have them all). */
export const humanRowCap = 200

/**
 * --output's name for this run ({timestamp} filled in: a cron job's fixed command line writes a
 * new file each night), refused before anyone is asked and before anything is written when it
 * cannot be created new.
 */
export async function newOutputName(name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined
  const expanded = expandOutputName(name, '--output')
  const unwritable = await whyNotWritable(expanded)
  if (unwritable) throw usageError(`--output: ${unwritable}. Nothing was written.`)
  return expanded
}

/**
 * Creates the --output file `newOutputName` checked (closed by `onCleanup` when the command ends,
 * whatever its outcome). Its `stream` is for a writer that honours backpressure (export-events).
 */
export async function openOutputFile(
  target: string,
  onCleanup: (cleanup: () => Promise<void>) => void,
): Promise<LineFile & {stream: Writable}> {
  const file = await createLineFile(target).catch((error: unknown) => {
    // Created between the check and now, or not writable by this user: the operator's to fix.
    throw usageError(
      `--output: ${target}: ${error instanceof Error ? error.message : String(error)}. Nothing was written.`,
    )
  })
  onCleanup(() => file.close())
  return file
}

/** Why the --output file is incomplete: its close failed (a full disk, a quota, a lost mount). */
export const writingFailed = (path: string, error: unknown) =>
  `--output ${path}: writing failed (${error instanceof Error ? error.message : String(error)}); the file is incomplete`

/**
 * Closes an --output file that is the command's product (an export, an audit's findings): a file
 * that could not be written to its end is not that product, so its failure is exit 5 with the
 * file named, never an error airlock did not expect.
 */
export async function closeOutputFile(file: LineFile): Promise<void> {
  await file.close().catch((error: unknown) => {
    throw new AirlockError(
      'OUTPUT_FAILED',
      ExitCode.partialFailure,
      `${writingFailed(file.path, error)}: delete it and run the command again`,
    )
  })
}

/**
 * Rows as they come, by output mode: each one a `{"type": …}` JSON line in the --output file and
 * (under --ndjson) on stdout, all kept for the --json envelope, or for humans those `keep` admits
 * (by default the first humanRowCap) or the line `humanLine` makes of it (a CSV row). A stream of
 * a million rows keeps flat memory in every mode but --json.
 */
export class RowStream<T extends object> {
  readonly kept: T[] = []
  omitted = 0

  constructor(
    private readonly mode: OutputMode,
    /** The JSON line's `type`: item, finding. */
    private readonly type: string,
    private readonly emit: (line: string) => void,
    private readonly sink: ItemSink | undefined,
    private readonly human: {
      keep?: (row: T, kept: number) => boolean
      line?: ((row: T) => string) | undefined
    } = {},
  ) {}

  add(row: T): void {
    // Serialised only where a line goes: a human run without --output never pays for it.
    const line = this.sink || this.mode === 'ndjson' ? JSON.stringify({type: this.type, ...row}) : ''
    this.sink?.write(line)
    if (this.mode === 'ndjson') this.emit(line)
    else if (this.mode === 'json') this.kept.push(row)
    else if (this.human.line) this.emit(this.human.line(row))
    else if ((this.human.keep ?? ((_, kept) => kept < humanRowCap))(row, this.kept.length)) this.kept.push(row)
    else this.omitted++
  }

  /**
   * The stream's last line: its summary, on stdout under --ndjson and in the file; or (`stdout`
   * false) the error a batch stopped on, in the file alone (the command's error report writes
   * stdout's).
   */
  end(line: string, stdout = true): void {
    this.sink?.write(line)
    if (stdout && this.mode === 'ndjson') this.emit(line)
  }
}
