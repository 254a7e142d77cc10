import {Flags} from '@oclif/core'

import {
  auditEvents,
  defaultFailOn,
  findingClasses,
  type AuditClass,
  type AuditProgress,
  type Finding,
} from '../src/audit/auditEvents.js'
import {prepareDuplicateFix, type DuplicateFixStore} from '../src/audit/prepareDuplicateFix.js'
import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {eventFilterFlags, eventFilterFromFlags} from '../src/cli/eventFilterFlags.js'
import {parseDuration} from '../src/cli/parseInput.js'
import {findingCsvHeader, findingCsvRow, renderEventAudit, type EventAuditReport} from '../src/cli/renderEventAudit.js'
import {usageError} from '../src/errors.js'
import {ExitCode} from '../src/exitCodes.js'
import type {AirflowDatabase} from '../src/store/airflowDatabase.js'
import {prose} from '../src/cli/prose.js'
import {requireAssets} from '../src/selection/assetFilter.js'
import {requireSourceDag} from '../src/selection/sourceDag.js'
import {createProgress, type Progress} from '../src/output/progress.js'
import {closeOutputFile, newOutputName, RowStream} from '../src/cli/outputFile.js'

export default class AuditEvents extends AirlockCommand<EventAuditReport> {
  static override summary = 'Find duplicate, orphaned and missing asset events; remove duplicates (--fix).'
  static override description =
    prose(`Every event gets exactly one class, with its evidence: external (no source task: never a finding),
orphan_missing_ti, orphan_not_success, superseded_by_rerun (an earlier try's events: legitimate),
duplicate (beyond what the try's declared outlets call for, one per declaration of the asset
directly or by Asset.ref, in a group of the last successful try's events with the same asset,
source, extra and partition key within --duplicate-window), duplicate_unknown (such an extra where
the serialized DAG cannot tell how many the outlets call for; never removed), unattributed (stamped between two
tries and named by no airlock audit row: which try it belongs to cannot be told; never removed),
ok. Which try an event belongs to: the airlock audit row that names it, else the try whose span
(start_date to its last write) holds its timestamp, else the task instance's only try.

Per successful task instance whose active outlets have no event of its last try: missing_events
when the events were written and then lost (Airflow's worker logged the success, 3.2+, or airlock
wrote them: what replay-events writes), missing_unknown when nothing says whether they were lost
or marked success without them (a bulk mark; Airflow 3.0/3.1) or an unattributed event may be
the try's own, not_emitted (counted, not a finding) when it was marked success on purpose.
queue_orphan: queue rows or alias links pointing at something gone.

--fix removes duplicate extras that no dag run consumed, one transaction per group, recorded in
Airflow's audit log. It is a dry run unless --no-dry-run is given (and --yes, or a confirmation).`)

  static override examples = [
    '<%= config.bin %> audit-events --since 7d --fail-on duplicate --fail-on missing_events',
    '<%= config.bin %> audit-events --dag-id etl_daily --format csv > findings.csv',
    '<%= config.bin %> audit-events --since 26h --output findings.ndjson',
    '<%= config.bin %> audit-events --fix',
    '<%= config.bin %> audit-events --fix --no-dry-run --yes',
  ]

  static override flags = {
    ...connectionFlags,
    ...eventFilterFlags,
    'duplicate-window': Flags.string({
      description:
        'Identical events of one try closer than this to the one their group keeps (the one an audit row names, else the first) are duplicates (500ms, 5s, 10m, 2h; up to 168h).',
      default: '10m',
    }),
    'fail-on': Flags.string({
      description: `Exit 6 when a finding of this class exists. Repeatable. Default: ${defaultFailOn.join(', ')}.`,
      multiple: true,
      options: [...findingClasses],
    }),
    fix: Flags.boolean({
      description: 'Remove unconsumed duplicate extras (a dry run unless --no-dry-run).',
      default: false,
    }),
    'dry-run': Flags.boolean({
      description: 'With --fix: roll every repair back (the default); --no-dry-run writes.',
      default: true,
      allowNo: true,
    }),
    yes: Flags.boolean({char: 'y', description: 'Do not ask for confirmation.', default: false}),
    'lock-timeout': Flags.string({description: 'SET LOCAL lock_timeout per repair transaction.', default: '5s'}),
    format: Flags.string({
      description: 'Output format.',
      options: ['table', 'csv'],
      default: 'table',
      helpGroup: 'OUTPUT',
    }),
    ndjson: Flags.boolean({
      description: 'Stream findings as JSON lines, then a summary line.',
      exclusive: ['json'],
      helpGroup: 'OUTPUT',
    }),
    output: Flags.string({
      char: 'o',
      description:
        'Also write every finding as a JSON line (then the summary) to this new file: replay-events --from-file FILE repairs its missing_events. Never overwrites: for cron, put {timestamp} (UTC), {date} or {pid} in the name.',
      helpValue: 'FILE',
      helpGroup: 'OUTPUT',
    }),
  }

  private format = 'table'

  protected async execute(): Promise<CommandOutcome<EventAuditReport>> {
    const {flags} = await this.parse(AuditEvents)
    this.format = flags.format
    if (flags.format === 'csv' && this.outputMode !== 'human')
      throw usageError('--format csv cannot be combined with --json or --ndjson.')
    // For missing_events the window applies to the task instances' end_date.
    const filter = eventFilterFromFlags(flags)
    // Up to a week: a retried request can land long after the first on a stuck worker.
    const windowSeconds = parseDuration(flags['duplicate-window'], '--duplicate-window', 7 * 24 * 3_600_000) / 1000
    // Checked before anything is read, --fix or not: a typo in a cron line fails at once.
    const lockTimeoutMs = parseDuration(flags['lock-timeout'], '--lock-timeout')
    const outputFile = await newOutputName(flags.output)
    const airflow = await this.openAirflow(flags, {
      verb: 'audit-events',
      poolSize: 2,
      ...(flags.fix ? {writes: 'audit-events --fix'} : {}),
    })
    if (filter.sourceDagId) await requireSourceDag(airflow, filter.sourceDagId)
    await requireAssets(airflow, filter.assets, '--asset')

    const file = outputFile ? await this.openOutputFile(outputFile) : undefined
    if (flags.format === 'csv') this.emit(findingCsvHeader)
    const findings = new RowStream<Finding>(this.outputMode, 'finding', (line) => this.emit(line), file, {
      line: flags.format === 'csv' ? findingCsvRow : undefined,
    })

    // Progress on stderr: the count, then events/s and an ETA once the sorted stream flows.
    let progress: Progress | undefined
    const onProgress = ({total, done}: AuditProgress) => {
      progress ??= createProgress({
        label: 'audit-events: classified',
        total,
        enabled: !this.jsonMode || !process.stderr.isTTY,
      })
      if (done === 0)
        progress.status(
          `reading and sorting ${total.toLocaleString('en-US')} events in one pass; the first findings arrive when the sort is done…`,
        )
      else progress.update(done, '')
    }
    this.onCleanup(() => Promise.resolve(progress?.stop()))
    const {counts, groups} = await auditEvents(
      airflow,
      {filter, windowSeconds, collectGroups: flags.fix, onProgress, onStage: (text) => progress?.status(text)},
      (finding) => findings.add(finding),
    )
    progress?.stop()
    const fix = flags.fix ? await this.repairDuplicates(airflow, groups, {...flags, lockTimeoutMs}) : null

    const report: EventAuditReport = {
      counts,
      findings: findings.kept,
      omitted: findings.omitted,
      fix,
      ...(file ? {output_file: file.path} : {}),
    }
    const failOn = (flags['fail-on'] as AuditClass[] | undefined) ?? defaultFailOn
    const failedFix = fix?.groups.some((g) => g.outcome === 'failed')
    const audited = Object.values(counts).reduce((sum, n) => sum + n, 0)
    const exit = failedFix
      ? ExitCode.partialFailure
      : this.exitUnlessEmpty(
          flags,
          audited === 0,
          'no event, task instance or queue row matched',
          failOn.some((cls) => counts[cls] > 0) ? ExitCode.auditFindings : ExitCode.ok,
        )
    // The summary says the outcome: a signal from here on keeps this exit.
    this.settle(exit)
    findings.end(JSON.stringify({type: 'summary', counts, fix}))
    if (file) await closeOutputFile(file)
    return {result: report, exit}
  }

  /** --fix: the duplicate groups the audit collected, repaired as one prepared batch. */
  private async repairDuplicates(
    airflow: AirflowDatabase<DuplicateFixStore>,
    groups: Parameters<typeof prepareDuplicateFix>[1],
    flags: {'dry-run': boolean; yes: boolean; lockTimeoutMs: number},
  ): Promise<NonNullable<EventAuditReport['fix']>> {
    if (groups.length === 0) {
      return {
        dry_run: flags['dry-run'],
        groups: [],
        removed: 0,
        refused_consumed: 0,
        refused_pending: 0,
        refused_named: 0,
        skipped_busy: 0,
        changed: 0,
      }
    }
    const repair = prepareDuplicateFix(airflow, groups, {
      dryRun: flags['dry-run'],
      lockTimeoutMs: flags.lockTimeoutMs,
      statementTimeoutMs: 30_000,
      airlockVersion: this.config.version,
    })
    const fixes = (await this.writeBatch(repair, {yes: flags.yes, quiet: true})).result.items
    return {
      dry_run: flags['dry-run'],
      groups: fixes,
      removed: fixes.reduce((n, f) => n + f.removed.length, 0),
      refused_consumed: fixes.reduce((n, f) => n + f.refused_consumed.length, 0),
      refused_pending: fixes.reduce((n, f) => n + f.refused_pending.length, 0),
      refused_named: fixes.reduce((n, f) => n + f.refused_named.length, 0),
      skipped_busy: fixes.filter((f) => f.outcome === 'skipped_busy').length,
      changed: fixes.filter((f) => f.outcome === 'changed').length,
    }
  }

  protected render(report: EventAuditReport): string {
    if (this.format === 'csv') return ''
    return renderEventAudit(report, this.terminalWidth)
  }
}
