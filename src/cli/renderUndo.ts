import {keyColumn, renderTable} from '../output/table.js'
import type {UndoItemJson} from '../undo/prepareUndo.js'
import {itemLabel, renderBatch, type BatchReport} from './renderItems.js'

const detailRows = 20

/** The undo table (one row per audit row, newest first, as undone), why each refusal was refused, and the summary. */
export function renderUndo(report: BatchReport<UndoItemJson>, width?: number): string {
  const parts: string[] = []
  if (report.items.length > 0)
    parts.push(
      renderTable(
        ['log id', 'command', keyColumn('task instance'), {header: 'outcome', keep: true}, 'deleted', 'restored'],
        report.items.map((item) => [
          item.log_id,
          item.command,
          item.task_id === null ? null : itemLabel(item),
          item.outcome + (item.error ? `: ${item.error.sqlstate ?? ''} ${item.error.message}`.trimEnd() : ''),
          item.deleted_event_ids.length,
          item.restored_task_instance
            ? `ti${item.restored_cleared.length > 0 ? `, ${item.restored_cleared.length} cleared` : ''}`
            : item.restored_event_ids.length > 0
              ? `${item.restored_event_ids.length} events`
              : null,
        ]),
        {width},
      ),
    )
  const explained = report.items.filter((item) => item.detail)
  if (explained.length > 0)
    parts.push(
      [
        'Why:',
        ...explained.slice(0, detailRows).map((item) => `  log row ${item.log_id}: ${item.outcome}: ${item.detail}`),
        ...(explained.length > detailRows
          ? [`  … and ${explained.length - detailRows} more (--json lists them all)`]
          : []),
      ].join('\n'),
    )
  const lost = report.items.flatMap((item) =>
    (item.lost_readiness ?? []).map((dag) => `${dag} (log row ${item.log_id})`),
  )
  if (lost.length > 0)
    parts.push(
      `${report.summary.dry_run ? 'Would no longer be ready' : 'No longer ready'} (the undone events had made them ready): ${[...new Set(lost)].slice(0, detailRows).join(', ')}`,
    )
  const queued = report.items.flatMap((item) =>
    Object.keys(item.still_queued ?? {}).map((dag) => `${dag} (log row ${item.log_id})`),
  )
  if (queued.length > 0)
    parts.push(
      `Still queued on consumed writes' events (their next runs will take them; --withdraw-queued withdraws those queue rows): ${[...new Set(queued)].slice(0, detailRows).join(', ')}`,
    )
  const withdrawn = report.items.flatMap((item) =>
    Object.keys({...item.withdrawn_queue_rows, ...(item.outcome.includes('withdraw') ? item.kept_queue_rows : {})}).map(
      (dag) => `${dag} (log row ${item.log_id}${item.withdraw_log_id ? `, withdrawal ${item.withdraw_log_id}` : ''})`,
    ),
  )
  if (withdrawn.length > 0)
    parts.push(
      `${report.summary.dry_run ? 'Would be withdrawn' : 'Withdrawn'} from the queue (the runs that consumed the events stand: handle them in Airflow): ${[...new Set(withdrawn)].slice(0, detailRows).join(', ')}`,
    )
  parts.push(renderBatch({...report, items: []}, 'audit row', width, amounts(report)))
  return parts.join('\n\n')
}

/** "24 events deleted, 8 task instances restored", counted over every item (none when some were left out of the report). */
function amounts(report: BatchReport<UndoItemJson>): string | undefined {
  if (report.omitted) return `the items not listed are in ${report.output_file ?? '--json or --ndjson'}`
  const count = (n: number, noun: string) => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`
  const events = report.items.reduce((n, item) => n + item.deleted_event_ids.length, 0)
  const restoredEvents = report.items.reduce((n, item) => n + item.restored_event_ids.length, 0)
  const tis = report.items.reduce(
    (n, item) => n + (item.restored_task_instance ? 1 : 0) + item.restored_cleared.length,
    0,
  )
  const verb = report.summary.dry_run ? 'would be ' : ''
  return [
    `${count(events, 'event')} ${verb}deleted`,
    ...(restoredEvents > 0 ? [`${count(restoredEvents, 'event')} ${verb}restored`] : []),
    `${count(tis, 'task instance')} ${verb}restored`,
  ].join(', ')
}
