import {once} from 'node:events'
import type {Writable} from 'node:stream'

import type {EventFilter} from '../store/airflowStore.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'

export const exportPageSize = 1000

/**
 * Streams events as NDJSON in keyset pages, honouring the output's backpressure: one page in
 * memory at a time, whatever the table's size.
 */
export async function exportEvents(
  airflow: Pick<AirflowDatabase, 'db' | 'store'>,
  filter: EventFilter,
  out: Writable,
  onPage: (exported: number) => void = () => undefined,
): Promise<{exported: number; firstId: number | null; lastId: number | null; readerClosed: boolean}> {
  // A reader that went away (`| head`) ends the export quietly, as Unix tools do on SIGPIPE; any
  // other write error (a full disk) stops it and is reported.
  const output: {closed: boolean; failed?: Error} = {closed: false}
  out.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') output.closed = true
    else output.failed = error
  })
  let afterId = 0
  let exported = 0
  let firstId: number | null = null
  for (;;) {
    const page = await airflow.store.readEventPage(airflow.db.executor, {...filter, afterId, limit: exportPageSize})
    for (const line of page) {
      if (output.failed) throw new Error(`writing the export failed: ${output.failed.message}`)
      // The reader went away: report what was handed to it, line by line, not by page.
      if (output.closed) return {exported, firstId, lastId: exported > 0 ? afterId : null, readerClosed: true}
      if (!out.write(JSON.stringify(line) + '\n')) await drained(out)
      exported++
      firstId ??= line.id
      afterId = line.id!
    }

    if (page.length > 0) onPage(exported)
    if (page.length < exportPageSize)
      return {exported, firstId, lastId: exported > 0 ? afterId : null, readerClosed: false}
  }
}

/**
 * Waits until a full output drains or fails. Both listeners go when either fires: a listener left
 * on the stream at every wait added up to one per backpressure pause, about 24 MB per million
 * events exported to a slow reader (and Node's MaxListenersExceededWarning).
 */
async function drained(out: Writable): Promise<void> {
  const done = new AbortController()
  try {
    await Promise.race([once(out, 'drain', {signal: done.signal}), once(out, 'error', {signal: done.signal})])
  } catch {
    // A write error is kept by the stream's own 'error' listener and reported by the loop.
  } finally {
    done.abort()
  }
}
