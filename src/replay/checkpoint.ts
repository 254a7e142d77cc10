import {createHash} from 'node:crypto'
import fs from 'node:fs/promises'

import {usageError} from '../errors.js'

/**
 * --checkpoint FILE: where a replay got to, so a re-run after an interruption resumes there.
 * Items are numbered in stream order and finish out of order (several run at once); the file
 * records the cursor of the last item before which EVERY item finished (a low-water mark), written
 * atomically (temp file + rename). The fingerprint ties it to one selection: resuming a different
 * replay from it is refused. Correctness never depends on it (the recheck prevents doubles); it
 * only makes a resumed run skip work already done.
 */
export interface CheckpointState {
  fingerprint: string
  cursor: string | null
  done: number
  updatedAt: string
}

export function fingerprintOf(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16)
}

export class Checkpoint {
  private readonly pending = new Map<number, string>()
  private readonly finished = new Set<number>()
  /** A failed item holds the mark back: a resumed run retries it (the recheck prevents doubles). */
  private stopAt = Number.POSITIVE_INFINITY
  private next = 0
  private taken = 0
  private state: CheckpointState
  private lastWrite = 0
  private writing: Promise<void> = Promise.resolve()

  private constructor(
    private readonly file: string | null,
    state: CheckpointState,
  ) {
    this.state = state
  }

  static async open(file: string | undefined, fingerprint: string): Promise<Checkpoint> {
    const empty: CheckpointState = {fingerprint, cursor: null, done: 0, updatedAt: new Date().toISOString()}
    if (!file) return new Checkpoint(null, empty)
    const text = await fs
      .readFile(file, 'utf8')
      .catch((error: unknown) =>
        (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : Promise.reject(error as Error),
      )
    if (text === null) {
      // Written now, so an unwritable path is a usage error before anything else happens.
      const checkpoint = new Checkpoint(file, empty)
      await checkpoint
        .save()
        .catch((error: unknown) =>
          Promise.reject(usageError(`--checkpoint ${file} cannot be written (${(error as Error).message}).`)),
        )
      checkpoint.lastWrite = 0
      return checkpoint
    }
    let saved: CheckpointState
    try {
      saved = JSON.parse(text) as CheckpointState
    } catch {
      throw usageError(`--checkpoint ${file} is not a checkpoint written by airlock (not JSON).`)
    }

    if (saved.fingerprint !== fingerprint) {
      throw usageError(`--checkpoint ${file} belongs to a different replay (other mode or selection).`, [
        'Use a new checkpoint file, or delete this one to start over.',
      ])
    }

    return new Checkpoint(file, saved)
  }

  /** Where the previous run got to (null: from the start). */
  get resumeFrom(): string | null {
    return this.state.cursor
  }

  get resumedDone(): number {
    return this.state.done
  }

  /** An item was taken from the stream; returns its sequence number. */
  take(cursor: string): number {
    const sequence = this.taken++
    this.pending.set(sequence, cursor)
    return sequence
  }

  /** An item finished; the low-water mark advances over every finished prefix, never past a failure. */
  async finish(sequence: number, succeeded = true): Promise<void> {
    this.finished.add(sequence)
    if (!succeeded) this.stopAt = Math.min(this.stopAt, sequence)
    let advanced = false
    while (this.finished.has(this.next) && this.next < this.stopAt) {
      this.state = {...this.state, cursor: this.pending.get(this.next) ?? this.state.cursor, done: this.state.done + 1}
      this.pending.delete(this.next)
      this.finished.delete(this.next)
      this.next++
      advanced = true
    }

    if (advanced && Date.now() - this.lastWrite > 250) await this.save()
  }

  async save(): Promise<void> {
    if (!this.file) return
    const file = this.file
    this.lastWrite = Date.now()
    const state = {...this.state, updatedAt: new Date().toISOString()}
    this.writing = this.writing.then(async () => {
      await fs.writeFile(`${file}.tmp`, JSON.stringify(state) + '\n')
      await fs.rename(`${file}.tmp`, file)
    })
    await this.writing
  }
}
