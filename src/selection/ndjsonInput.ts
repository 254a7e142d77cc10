import fs from 'node:fs'

import {usageError} from '../errors.js'
import {jsonErrorWithoutInput, maxLineBytes, ndjsonLines} from '../input/ndjsonLines.js'
import {plainSelectorNames} from './selectorNames.js'

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

/**
 * The lines of an NDJSON input, a line over the size limit refused with its number (exit 2). A
 * read that fails part-way (a directory given where checkReadable was not asked first, a disk
 * error, a file removed under it) is the input's fault, not airlock's: exit 2 naming the file.
 */
export async function* checkedLines(
  path: string,
  /** How the caller names the file's source, for messages (the command line: its flag). */
  flag = plainSelectorNames.fromFile,
  /** The longest line taken (a result file's item line can carry the preview's long lists). */
  maxBytes = maxLineBytes,
): AsyncGenerator<{text: string; line: number}> {
  const name = path === '-' ? 'stdin' : path
  const lines = ndjsonLines(path, maxBytes)
  try {
    for (;;) {
      let next: IteratorResult<{text: string; line: number; tooLong: boolean}>
      try {
        next = await lines.next()
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'EISDIR') throw usageError(`${flag} ${name} is a directory; give the NDJSON file inside it.`)
        throw usageError(`${flag} ${name} could not be read to its end (${code ?? (error as Error).message}).`)
      }

      if (next.done) return
      const {text, line, tooLong} = next.value
      if (tooLong) {
        throw usageError(
          `${name} line ${line} is longer than ${maxBytes / 1024 / 1024} MiB; each line is one small JSON object.`,
        )
      }

      yield {text, line}
    }
  } finally {
    // A caller that stops early (a bad line) closes the file with it.
    await lines.return(undefined)
  }
}

/**
 * One NDJSON line parsed, or exit 2 naming it: not JSON (the text never quoted), or a string
 * holding a NUL character, which PostgreSQL's text cannot store (the server would refuse it
 * mid-run).
 */
export function parseJsonLine(text: string, where: string, actions: string[] = []): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw usageError(`${where} is not valid JSON (${jsonErrorWithoutInput(error)}).`, actions)
  }

  if (holdsNul(value))
    throw usageError(`${where} holds a NUL character (\\u0000) in a string; PostgreSQL cannot store it.`)
  return value
}

function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  if (Array.isArray(value)) return value.some(holdsNul)
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).some(([key, inner]) => key.includes('\u0000') || holdsNul(inner))
  return false
}
