import {once} from 'node:events'
import type {Writable} from 'node:stream'

import {eventLineText, type EventLineParts} from '../airflow/eventLine.js'
import type {EventFilter} from '../store/types.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {EventStore} from '../store/families/events.js'

/**
 * Events per keyset page. Large enough that a page's planning and round trip vanish beside its
 * rows, small enough that two pages in memory stay a few megabytes.
 */
export const exportPageSize = 5000

/** Lines are handed to the output in writes of about this many characters. */
const writeChars = 64 * 1024

/**
 * Streams events as NDJSON in keyset pages, honouring the output's backpressure: at most two
 * pages in memory at a time, whatever the table's size. The next page is asked for as soon as a
 * full page arrives, so the server reads it while this one is written out. Lines come from the
 * server as text (store.readEventLinePage): nothing is parsed and re-serialised but `extra`.
 */
export async function exportEvents(
  airflow: Pick<AirflowDatabase<EventStore>, 'db' | 'store'>,
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
  const readPage = (afterId: number) =>
    airflow.store.readEventLinePage(airflow.db.executor, {...filter, afterId, limit: exportPageSize})
  let exported = 0
  let firstId: number | null = null
  let lastId: number | null = null
  const result = (readerClosed: boolean) => ({exported, firstId, lastId, readerClosed})
  let next: Promise<EventLineParts[]> | undefined = readPage(0)
  try {
    while (next) {
      const page: EventLineParts[] = await next
      next = page.length === exportPageSize ? readPage(page.at(-1)!.id) : undefined
      let text = ''
      let lines = 0
      for (const [index, parts] of page.entries()) {
        text += eventLineText(parts) + '\n'
        lines++
        if (text.length < writeChars && index < page.length - 1) continue
        if (output.failed) throw new Error(`writing the export failed: ${output.failed.message}`)
        // The reader went away: report what was handed to it, write by write, not by page.
        if (output.closed) return result(true)
        const flowing = out.write(text)
        exported += lines
        firstId ??= page[0]!.id
        lastId = parts.id
        text = ''
        lines = 0
        if (!flowing) await drained(out)
      }

      if (page.length > 0) onPage(exported)
    }

    if (output.failed) throw new Error(`writing the export failed: ${output.failed.message}`)
    return result(output.closed)
  } finally {
    // A page asked for ahead and never read (the reader closed, a write failed): its failure,
    // if any, is not this export's.
    next?.catch(() => undefined)
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
