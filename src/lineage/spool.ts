import {constants} from 'node:fs'
import {access, mkdir, readdir, readFile, rename, rm, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {usageError} from '../errors.js'

/**
 * What the spool knows of an event: `not_delivered` (nothing can have reached the backend, or it
 * refused it, or it was never tried) or `maybe_delivered` (a request went out whole and no answer
 * came: the backend may hold it, so it is not sent again unless the operator says so).
 */
export type SpoolState = 'not_delivered' | 'maybe_delivered'

/**
 * The durable outbox of COMPLETE events: one file per event, named by its run id (deterministic,
 * so the same try's event written twice is one file), written before the first attempt to send
 * it and removed once the backend confirmed it. Whatever is in it was never confirmed;
 * `airlock lineage resend` sends it. The state is in the name: `{run id}.json` not delivered,
 * `{run id}.maybe-delivered.json` maybe delivered (renamed so, never back). Written by rename,
 * so a reader never sees half a file.
 */
export class LineageSpool {
  private constructor(readonly dir: string) {}

  /** The spool at `dir`, made if missing; a path that cannot be one (a file, no permission) is exit 2. */
  static async open(dir: string): Promise<LineageSpool> {
    try {
      await mkdir(dir, {recursive: true, mode: 0o700})
      await access(dir, constants.R_OK | constants.W_OK | constants.X_OK)
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error))
      throw usageError(`The lineage spool ${dir} cannot be used (${why}).`, [
        'Name a directory airlock may write with --lineage-spool (default: lineage-spool under AIRLOCK_HOME).',
      ])
    }
    return new LineageSpool(dir)
  }

  /**
   * Writes the event's file, not delivered, and returns its body, as sent. A maybe-delivered file
   * of the same run id goes: the event is being sent again on purpose (`lineage resend --since`).
   */
  async put(runId: string, event: unknown): Promise<string> {
    const body = JSON.stringify(event)
    const file = this.fileOf(runId, 'not_delivered')
    const partial = `${file}.${process.pid}.partial`
    await writeFile(partial, body, {mode: 0o600})
    await rename(partial, file)
    await rm(this.fileOf(runId, 'maybe_delivered'), {force: true})
    return body
  }

  /** The event was sent whole and no answer came: kept apart, as maybe delivered. */
  async markMaybeDelivered(runId: string): Promise<void> {
    await rename(this.fileOf(runId, 'not_delivered'), this.fileOf(runId, 'maybe_delivered')).catch((error: unknown) => {
      // Already maybe delivered (a resend of one), or confirmed and removed by another run.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    })
  }

  /** The backend confirmed it: gone, whatever its state. */
  async remove(runId: string): Promise<void> {
    await rm(this.fileOf(runId, 'not_delivered'), {force: true})
    await rm(this.fileOf(runId, 'maybe_delivered'), {force: true})
  }

  /** The events it holds, by run id (oldest name first), each with its state. */
  async entries(): Promise<Array<{runId: string; state: SpoolState}>> {
    const names = await readdir(this.dir).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    })
    const states = new Map<string, SpoolState>()
    for (const name of names) {
      const match = spooledName.exec(name)
      if (!match) continue
      const state: SpoolState = match[2] ? 'maybe_delivered' : 'not_delivered'
      // Both files (a put racing a rename): maybe delivered wins, the safer of the two.
      if (states.get(match[1]!) !== 'maybe_delivered') states.set(match[1]!, state)
    }
    return [...states].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([runId, state]) => ({runId, state}))
  }

  /** An event's body as spooled, in either state; undefined once another run confirmed and removed it. */
  async read(runId: string): Promise<string | undefined> {
    for (const state of ['not_delivered', 'maybe_delivered'] as const) {
      const body = await readFile(this.fileOf(runId, state), 'utf8').catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
        throw error
      })
      if (body !== undefined) return body
    }
    return undefined
  }

  fileOf(runId: string, state: SpoolState): string {
    return path.join(this.dir, state === 'maybe_delivered' ? `${runId}.maybe-delivered.json` : `${runId}.json`)
  }
}

const spooledName = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\.maybe-delivered)?\.json$/
