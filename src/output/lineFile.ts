import {createWriteStream, promises as fs, type WriteStream} from 'node:fs'
import path from 'node:path'
import type {Writable} from 'node:stream'

/**
 * A new file written one line at a time (a batch's --output): created, never overwritten, so a
 * rerun cannot destroy the record of the run before it. Lines are buffered by the stream; `close`
 * waits until they are on disk.
 */
export interface LineFile {
  path: string
  write(line: string): void
  close(): Promise<void>
  /** The file's stream itself, for a writer that waits on its backpressure (export-events) instead of `write`. */
  stream: Writable
}

/** Why `target` cannot be created as a new file, in words; undefined when it can. */
export async function whyNotWritable(target: string): Promise<string | undefined> {
  const existing = await fs.stat(target).catch(() => undefined)
  if (existing?.isDirectory()) return `${target} is a directory`
  if (existing) return `${target} already exists (airlock never overwrites a file; choose a new name)`
  const parent = await fs.stat(path.dirname(path.resolve(target))).catch(() => undefined)
  if (!parent?.isDirectory()) return `the directory of ${target} does not exist`
  return undefined
}

export async function createLineFile(target: string): Promise<LineFile> {
  const stream: WriteStream = createWriteStream(target, {flags: 'wx'})
  let failure: Error | undefined
  await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject))
  stream.on('error', (error) => (failure ??= error))
  let closed: Promise<void> | undefined
  return {
    path: target,
    stream,
    write(line) {
      if (!failure) stream.write(line.endsWith('\n') ? line : `${line}\n`)
    },
    // Once: the batch closes it when it ends, the command's cleanup again after a failure. The
    // end callback gets the write's error (a full disk) before the 'error' event is emitted, so
    // both are asked: a failed write is never reported as a file written.
    close: () =>
      (closed ??= new Promise<void>((resolve, reject) =>
        stream.end((error?: Error | null) => {
          const why = error ?? failure
          if (why) reject(why)
          else resolve()
        }),
      )),
  }
}
