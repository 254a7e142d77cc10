import type {AuditClass, Finding} from '../audit/auditEvents.js'
import type {GroupFix} from '../audit/prepareDuplicateFix.js'
import {csvCell} from '../output/csv.js'
import {renderTable} from '../output/table.js'

export interface EventAuditReport {
  counts: Record<AuditClass, number>
  findings: Finding[]
  omitted: number
  fix: {
    dry_run: boolean
    groups: GroupFix[]
    removed: number
    refused_consumed: number
    refused_pending: number
    refused_named: number
    skipped_busy: number
    changed: number
  } | null
}

export function renderEventAudit(report: EventAuditReport, width?: number): string {
  const parts = [
    renderTable(
      ['class', 'count'],
      Object.entries(report.counts).map(([k, v]) => [k, v]),
      {width},
    ),
  ]
  if (report.findings.length > 0) {
    parts.push(
      renderTable(
        ['class', 'event', 'asset / task instance', 'source', 'evidence', 'next'],
        report.findings.map((f) => [
          f.class,
          f.event_id,
          f.asset ?? f.ti_id,
          f.source_dag_id ? `${f.source_dag_id}/${f.source_run_id}/${f.source_task_id}` : '',
          f.evidence,
          f.suggestion ?? '',
        ]),
        {width},
      ),
    )
  }

  if (report.omitted) parts.push(`… ${report.omitted} more findings (--json, --ndjson or --format csv list them all)`)
  if (report.findings.some((f) => f.suggestion?.startsWith('airlock '))) {
    parts.push(
      'Run the commands under "next" with the same connection flags as this audit (--database-url, --env or --embedded).',
    )
  }
  if (report.fix) {
    const f = report.fix
    parts.push(
      `${f.dry_run ? 'DRY RUN (rolled back; --fix --no-dry-run --yes writes): would remove' : 'Removed'} ${f.removed} duplicate event(s) in ${f.groups.length} group(s); ${f.refused_consumed} left alone because a dag run consumed them, ${f.refused_named} because their try's audit row names them, ${f.refused_pending} because a consumer with a partitioned timetable could still take them; ${f.skipped_busy} group(s) skipped because another session (a scheduler, another fixer) held an event or a consumer DAG, ${f.changed} because they changed since the audit read them: run again later.`,
    )
  }

  return parts.join('\n\n')
}

export const findingCsvHeader =
  'class,event_id,ti_id,asset,source_dag_id,source_run_id,source_task_id,source_map_index,timestamp,kept_id,consumed,evidence,suggestion'
export const findingCsvRow = (f: Finding) =>
  [
    f.class,
    f.event_id,
    f.ti_id,
    f.asset,
    f.source_dag_id,
    f.source_run_id,
    f.source_task_id,
    f.source_map_index,
    f.timestamp,
    f.kept_id,
    f.consumed,
    f.evidence,
    f.suggestion,
  ]
    .map(csvCell)
    .join(',')
