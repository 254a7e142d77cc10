import fs from 'node:fs'
import readline from 'node:readline'

import {usageError} from '../errors.js'

/** The longest line airlock reads from an NDJSON input (a task instance or an event is a few KiB). */
export const maxLineBytes = 1024 * 1024

/**
 * The non-blank lines of an NDJSON file (or of stdin for "-"), with their 1-based line numbers so
 * every message can name the line at fault. Streamed: one line in memory at a time. A UTF-8 byte
 * order mark (editors on Windows write one) is dropped; a line longer than maxLineBytes is refused.
 */
export async function* ndjsonLines(path: string): AsyncGenerator<{text: string; line: number}> {
  const input = path === '-' ? process.stdin : fs.createReadStream(path, {encoding: 'utf8'})
  const lines = readline.createInterface({input, crlfDelay: Number.POSITIVE_INFINITY})
  let line = 0
  for await (const raw of lines) {
    line++
    const text = line === 1 ? raw.replace(/^\uFEFF/, '') : raw
    if (Buffer.byteLength(text, 'utf8') > maxLineBytes) {
      throw usageError(
        `${path === '-' ? 'stdin' : path} line ${line} is longer than ${maxLineBytes / 1024 / 1024} MiB; each line is one small JSON object.`,
      )
    }

    if (text.trim() !== '') yield {text, line}
  }
}

/** Why an input file cannot be read, in words (exit 2), or nothing when it can. */
export async function checkReadable(path: string, flag: string): Promise<void> {
  if (path === '-') return
  const stat = await fs.promises.stat(path).catch((error: unknown) => error as NodeJS.ErrnoException)
  if (stat instanceof Error) {
    const why =
      stat.code === 'ENOENT'
        ? 'does not exist'
        : stat.code === 'EACCES'
          ? 'cannot be read (permission denied)'
          : `cannot be read (${stat.code ?? stat.message})`
    throw usageError(`${flag} ${path} ${why}.`)
  }
  if (stat.isDirectory()) throw usageError(`${flag} ${path} is a directory; give the NDJSON file inside it.`)
  await fs.promises.access(path, fs.constants.R_OK).catch(() => {
    throw usageError(`${flag} ${path} cannot be read (permission denied).`)
  })
}

/** JSON.parse's complaint without the text it quotes: an input line may be binary or a secret. */
export function jsonErrorWithoutInput(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const position = /position (\d+)/.exec(message)?.[1]
  if (/Unexpected end of JSON input/.test(message)) return 'it ends before the JSON object does'
  return position === undefined ? 'it is not JSON' : `not JSON at character ${Number(position) + 1}`
}
