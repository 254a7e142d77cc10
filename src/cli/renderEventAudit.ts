import type {AuditClass, Finding} from '../audit/auditEvents.js'
import type {GroupFix} from '../audit/prepareDuplicateFix.js'
import {csvCell} from '../output/csv.js'
import {keyColumn, renderTable} from '../output/table.js'

export interface EventAuditReport {
  counts: Record<AuditClass, number>
  findings: Finding[]
  omitted: number
  /** --output: every finding was written to this file as a JSON line (replay-events --from-file takes it). */
  output_file?: string
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
        [
          {header: 'class', keep: true},
          keyColumn('task instance'),
          'asset',
          'evidence',
          'next',
          {header: 'event / ti id', optional: true},
        ],
        report.findings.map((f) => [
          f.class,
          f.source_dag_id
            ? `${f.source_dag_id}/${f.source_run_id}/${f.source_task_id}${(f.source_map_index ?? -1) >= 0 ? `[${f.source_map_index}]` : ''}`
            : '',
          f.asset,
          f.evidence,
          f.ti_id ? 'replay-events (below)' : (f.suggestion ?? ''),
          f.event_id ?? f.ti_id,
        ]),
        {width},
      ),
    )
  }

  if (report.omitted)
    parts.push(
      `… ${report.omitted} more findings ${report.output_file ? `in ${report.output_file}` : '(--output FILE, --json, --ndjson or --format csv list them all)'}`,
    )
  else if (report.output_file) parts.push(`Every finding is in ${report.output_file}.`)
  const replayable = report.counts.missing_events + report.counts.missing_unknown
  if (replayable > 0) parts.push(replayAdvice(report, replayable))
  if (report.findings.some((f) => !f.ti_id && f.suggestion?.startsWith('airlock '))) {
    parts.push(
      'Run the commands under "next" with the same connection flags as this audit (--database-url, --profile or --embedded).',
    )
  }
  if (report.fix) {
    const f = report.fix
    parts.push(
      `${f.dry_run ? 'DRY RUN (rolled back; --fix --no-dry-run --yes writes): would remove' : 'Removed'} ${f.removed} duplicate event(s) in ${f.groups.length} group(s); ${f.refused_consumed} left alone because a dag run consumed them, ${f.refused_named} because their try's audit row names them, ${f.refused_pending} because a run could still take them (a consumer with a partitioned timetable, or from 3.4 a queue row naming them: the next run consumes them); ${f.skipped_busy} group(s) skipped because another session (a scheduler, another fixer) held an event or a consumer DAG, ${f.changed} because they changed since the audit read them: run again later.`,
    )
  }

  return parts.join('\n\n')
}

/**
 * One command for every task instance missing its events: replay-events over the findings file.
 * `n` counts outlets (a missing_* finding is one outlet of a try, each on its own evidence).
 */
function replayAdvice(report: EventAuditReport, n: number): string {
  const what = `${n} missing event${n === 1 ? '' : 's'} of successful task instances`
  const unknown = report.counts.missing_unknown
  const caveat =
    unknown > 0
      ? ` (${unknown} missing_unknown: replayed only with --include-unknown, since the database cannot tell lost from marked success)`
      : ''
  const file = report.output_file ?? 'findings.ndjson'
  const how = report.output_file
    ? `airlock replay-events --from-file ${file} --dry-run`
    : `save the findings with --output ${file}, then airlock replay-events --from-file ${file} --dry-run`
  return `Repair the ${what} in one command${caveat}: ${how} (same connection flags as this audit), then again with --yes.`
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
