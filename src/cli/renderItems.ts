import {dryRunOutcomeNames, type ItemJson} from '../report/itemJson.js'
import {renderTable} from '../output/table.js'

export interface BatchReport<J = ItemJson> {
  summary: {dry_run: boolean} & Record<string, number | boolean>
  items: J[]
  /** Items not kept for the human table (large runs keep the first rows and every problem). */
  omitted?: number
  interrupted?: boolean
}

/** Items of an event-level replay (by id, from a file): where each came from and what it became. */
export function renderEventItems(
  items: ReadonlyArray<{
    source: string
    asset: string
    outcome: string
    new_event_id: number | null
    existing_event_id: number | null
    queued: number
    error?: {message: string}
  }>,
): string {
  return renderTable(
    ['from', 'asset', 'outcome', 'new event', 'queued'],
    items.map((item) => [
      item.source,
      item.asset,
      item.outcome + (item.error ? `: ${item.error.message}` : ''),
      item.new_event_id ?? (item.existing_event_id ? `exists: ${item.existing_event_id}` : null),
      item.queued,
    ]),
  )
}

/** The table of items and the run's summary line (`N task instances selected: 6 completed, 1 conflict; …`). */
export function renderBatch(report: BatchReport, noun = 'task instance'): string {
  // Finish order is noise for a reader: list by task instance.
  const rows = report.items
    .map((item) => [
      `${item.dag_id ?? '?'}/${item.run_id ?? '?'}/${item.task_id ?? item.ti_id ?? '?'}${item.map_index !== null && item.map_index >= 0 ? `[${item.map_index}]` : ''}`,
      item.outcome +
        (item.previous_state && item.previous_state !== 'success' ? ` (was ${item.previous_state})` : '') +
        (item.error ? `: ${item.error.sqlstate ?? ''} ${item.error.message}`.trimEnd() : ''),
      item.events,
      item.queued,
      item.timings.lock_hold_ms.toFixed(2),
      item.timings.total_ms.toFixed(1),
    ])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])))
  const parts: string[] = []
  if (rows.length > 0) parts.push(renderTable(['task instance', 'outcome', 'events', 'queued', 'lock hold ms', 'total ms'], rows))
  if (report.omitted) parts.push(`… ${report.omitted} more items (--json or --ndjson lists them all)`)
  const s = report.summary
  const counts = Object.entries(s)
    .filter(([key, value]) => typeof value === 'number' && !['selected', 'events_created', 'runs_queued'].includes(key) && value > 0)
    .map(([key, value]) => `${value} ${((s.dry_run && dryRunOutcomeNames[key]) || key).replaceAll('_', ' ')}`)
  parts.push(
    `${s.dry_run ? 'DRY RUN (rolled back, nothing written): ' : ''}${s.selected} ${noun}${s.selected === 1 ? '' : 's'} selected: ` +
      `${counts.join(', ') || 'nothing to do'}; ${s.events_created} events, ${s.runs_queued} queue rows.` +
      (report.interrupted ? '\nInterrupted: the items above finished or rolled back; the rest were not touched.' : ''),
  )
  return parts.join('\n\n')
}
