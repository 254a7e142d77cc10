import {constants} from 'node:fs'
import {access, mkdir, readdir, readFile, rename, rm, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {usageError} from '../errors.js'

/**
 * The durable outbox of COMPLETE events: one file per event, named by its run id (deterministic,
 * so the same try's event written twice is one file), written before the first attempt to send
 * it and removed once the backend confirmed it. Whatever is in it was never confirmed;
 * `airlock lineage resend` sends it. Written by rename, so a reader never sees half a file.
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

  /** Writes the event's file and returns its body, as sent. */
  async put(runId: string, event: unknown): Promise<string> {
    const body = JSON.stringify(event)
    const file = this.fileOf(runId)
    const partial = `${file}.${process.pid}.partial`
    await writeFile(partial, body, {mode: 0o600})
    await rename(partial, file)
    return body
  }

  async remove(runId: string): Promise<void> {
    await rm(this.fileOf(runId), {force: true})
  }

  /** The run ids of the events it holds, oldest name first. */
  async runIds(): Promise<string[]> {
    const names = await readdir(this.dir).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    })
    return names
      .filter((name) => spooledName.test(name))
      .map((name) => name.slice(0, -'.json'.length))
      .sort()
  }

  /** An event's body as spooled; undefined once another run confirmed and removed it. */
  async read(runId: string): Promise<string | undefined> {
    return readFile(this.fileOf(runId), 'utf8').catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    })
  }

  fileOf(runId: string): string {
    return path.join(this.dir, `${runId}.json`)
  }
}

const spooledName = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json$/
