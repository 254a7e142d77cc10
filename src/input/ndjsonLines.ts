import fs from 'node:fs'
import readline from 'node:readline'

/** The longest line airlock reads from an NDJSON input (a task instance or an event is a few KiB). */
export const maxLineBytes = 1024 * 1024

/**
 * The non-blank lines of an NDJSON file (or of stdin for "-"), with their 1-based line numbers so
 * every message can name the line at fault. Streamed: one line in memory at a time. A UTF-8 byte
 * order mark (editors on Windows write one) is dropped; a line longer than `maxBytes` (default
 * maxLineBytes) comes back empty with `tooLong` set.
 */
export async function* ndjsonLines(
  path: string,
  maxBytes = maxLineBytes,
): AsyncGenerator<{text: string; line: number; tooLong: boolean}> {
  const input = path === '-' ? process.stdin : fs.createReadStream(path, {encoding: 'utf8'})
  const lines = readline.createInterface({input, crlfDelay: Number.POSITIVE_INFINITY})
  let line = 0
  for await (const raw of lines) {
    line++
    const text = line === 1 ? raw.replace(/^\uFEFF/, '') : raw
    // Said, not thrown: this module is a leaf; the readers turn it into their usage error.
    if (Buffer.byteLength(text, 'utf8') > maxBytes) yield {text: '', line, tooLong: true}
    else if (text.trim() !== '') yield {text, line, tooLong: false}
  }
}

/** JSON.parse's complaint without the text it quotes: an input line may be binary or a secret. */
export function jsonErrorWithoutInput(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const position = /position (\d+)/.exec(message)?.[1]
  if (/Unexpected end of JSON input/.test(message)) return 'it ends before the JSON object does'
  return position === undefined ? 'it is not JSON' : `not JSON at character ${Number(position) + 1}`
}
