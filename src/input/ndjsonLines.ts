import fs from 'node:fs'
import readline from 'node:readline'

/**
 * The non-blank lines of an NDJSON file (or of stdin for "-"), with their 1-based line numbers so
 * every message can name the line at fault. Streamed: one line in memory at a time.
 */
export async function* ndjsonLines(path: string): AsyncGenerator<{text: string; line: number}> {
  const input = path === '-' ? process.stdin : fs.createReadStream(path, {encoding: 'utf8'})
  const lines = readline.createInterface({input, crlfDelay: Number.POSITIVE_INFINITY})
  let line = 0
  for await (const text of lines) {
    line++
    if (text.trim() !== '') yield {text, line}
  }
}
