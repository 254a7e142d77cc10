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
        [
          'log id',
          'command',
          keyColumn('task instance'),
          {header: 'outcome', keep: true},
          'events deleted',
          'restored',
        ],
        report.items.map((item) => [
          item.log_id,
          item.command,
          item.task_id === null ? null : itemLabel(item),
          item.outcome + (item.error ? `: ${item.error.sqlstate ?? ''} ${item.error.message}`.trimEnd() : ''),
          item.deleted_event_ids.length,
          item.restored_task_instance
            ? 'task instance'
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
    (item.downstream ?? []).filter((d) => !d.ready).map((d) => `${d.dag_id} (log row ${item.log_id})`),
  )
  if (lost.length > 0)
    parts.push(`Consumer DAGs no longer ready after the undo: ${[...new Set(lost)].slice(0, detailRows).join(', ')}`)
  parts.push(renderBatch({...report, items: []}, 'audit row', width))
  return parts.join('\n\n')
}
