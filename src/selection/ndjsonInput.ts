import fs from 'node:fs'

import {usageError} from '../errors.js'
import {maxLineBytes, ndjsonLines} from '../input/ndjsonLines.js'

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

/** The lines of an NDJSON input, a line over the size limit refused with its number (exit 2). */
export async function* checkedLines(path: string): AsyncGenerator<{text: string; line: number}> {
  for await (const {text, line, tooLong} of ndjsonLines(path)) {
    if (tooLong) {
      throw usageError(
        `${path === '-' ? 'stdin' : path} line ${line} is longer than ${maxLineBytes / 1024 / 1024} MiB; each line is one small JSON object.`,
      )
    }

    yield {text, line}
  }
}
