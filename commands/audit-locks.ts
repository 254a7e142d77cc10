import {Flags} from '@oclif/core'

import {auditLocks, defaultThresholds, severityRank, type LockAudit} from '../src/audit/auditLocks.js'
import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {parseDuration} from '../src/cli/parseInput.js'
import {lockAuditCsv, lockAuditKillLines, lockAuditLines, renderLockAudit} from '../src/cli/renderLockAudit.js'
import {usageError} from '../src/errors.js'
import {ExitCode} from '../src/exitCodes.js'
import {prose} from '../src/cli/prose.js'

export default class AuditLocks extends AirlockCommand<LockAudit> {
  static override summary = 'Who holds and who waits on task instance rows and the asset tables, live.'
  static override description =
    prose(`Samples pg_stat_activity, pg_locks and pg_blocking_pids and reports one tree per root blocker
(wait times, transaction ages, queries, how many sessions each blocks), which task instance each
wait is about (exact from airlock's application_name tag, else a best guess from the waiter's
tuple lock), waits on queue and event inserts as their own category, every session holding
task_instance row locks (active or idle in a transaction, waited on or not) with the rows it
holds where PostgreSQL can tell (the pgrowlocks extension, where installed; --watch does not run
it), and the timeout settings. Needs only pg_monitor.

Severities: warning when a wait exceeds --warn-wait or a root blocks --warn-blocked sessions;
critical when a wait exceeds --crit-wait, a root is idle in a transaction, or an idle holder of
task_instance locks is older than --crit-idle. --fail-on makes such findings exit 6.`)

  static override examples = [
    '<%= config.bin %> audit-locks --database-url postgresql://monitor@db/airflow',
    '<%= config.bin %> audit-locks --samples 20 --interval 500ms --fail-on critical',
    '<%= config.bin %> audit-locks --kill > kill.sql   # review, then psql -f kill.sql',
    '<%= config.bin %> audit-locks --watch',
    '<%= config.bin %> audit-locks --format csv > waits.csv',
  ]

  static override flags = {
    ...connectionFlags,
    samples: Flags.integer({description: 'Snapshots to take.', default: 5, min: 1, max: 10_000}),
    interval: Flags.string({
      description: 'Time between snapshots, with its unit (500ms, 2s).',
      default: '200ms',
    }),
    'warn-wait': Flags.string({description: 'A wait longer than this is a warning.', default: '1s'}),
    'crit-wait': Flags.string({description: 'A wait longer than this is critical.', default: '30s'}),
    'warn-blocked': Flags.integer({
      description: 'A root blocking this many sessions is a warning.',
      default: 3,
      min: 1,
    }),
    'crit-idle': Flags.string({
      description: 'An idle-in-transaction holder of task_instance locks older than this is critical.',
      default: '10s',
    }),
    'fail-on': Flags.string({
      description: 'Exit 6 when a finding is at or above this severity.',
      options: ['warning', 'critical'],
    }),
    format: Flags.string({
      description: 'Output format.',
      options: ['table', 'csv'],
      default: 'table',
      helpGroup: 'OUTPUT',
    }),
    ndjson: Flags.boolean({
      description:
        'One JSON line per session in the trees ({"type":"session","root_pid",…}), then {"type":"summary",…}.',
      exclusive: ['json', 'watch', 'format', 'kill'],
      helpGroup: 'OUTPUT',
    }),
    watch: Flags.boolean({
      description: 'Refresh in place on a terminal until interrupted (Ctrl-C: exit 130).',
      default: false,
      helpGroup: 'OUTPUT',
    }),
    kill: Flags.boolean({
      description:
        'Print the pg_terminate_backend statement for each root blocker, to review and run yourself (for example with psql); airlock never ends a session.',
      default: false,
      exclusive: ['watch', 'format'],
      helpGroup: 'OUTPUT',
    }),
  }

  private format = 'table'
  private kill = false

  protected async execute(): Promise<CommandOutcome<LockAudit>> {
    const {flags} = await this.parse(AuditLocks)
    this.format = flags.format
    this.kill = flags.kill
    const intervalMs = parseDuration(flags.interval, '--interval')
    if (intervalMs < 10)
      throw usageError('--interval must be at least 10ms: each snapshot reads every session and lock.')
    const thresholds = {
      ...defaultThresholds,
      warnWaitMs: parseDuration(flags['warn-wait'], '--warn-wait'),
      critWaitMs: parseDuration(flags['crit-wait'], '--crit-wait'),
      warnBlocked: flags['warn-blocked'],
      critIdleMs: parseDuration(flags['crit-idle'], '--crit-idle'),
    }
    if (flags.watch && (!this.interactiveStdout || this.outputMode !== 'human'))
      throw usageError('--watch needs a terminal; use --samples and --interval for a report.')
    const {db} = await this.openDatabase(flags, {
      verb: 'audit-locks',
      poolSize: 1,
      idleInTransactionTimeoutMs: null,
      limitsAfterConnect: true,
    })
    // pgrowlocks reads the whole task_instance table: once per report, not once per refresh.
    const options = {samples: flags.samples, intervalMs, thresholds, readRowLocks: !flags.watch}
    let audit = await auditLocks(db, options)
    if (flags.watch) {
      const stopped = this.untilInterrupted()
      while (!stopped()) {
        this.redraw(
          `${renderLockAudit(audit, this.terminalWidth)}\n\n(refreshing every ${flags.interval}; Ctrl-C to stop)`,
        )
        audit = await auditLocks(db, {...options, samples: 1})
      }
      // Stopped by a signal, as a watch always is: the conventional exit for it.
      return {result: audit, exit: ExitCode.interrupted}
    }

    if (this.outputMode === 'ndjson') for (const line of lockAuditLines(audit)) this.emit(JSON.stringify(line))
    const failOn = flags['fail-on'] as 'warning' | 'critical' | undefined
    const failed = failOn && audit.max_severity && severityRank[audit.max_severity] >= severityRank[failOn]
    return {result: audit, exit: failed ? ExitCode.auditFindings : ExitCode.ok}
  }

  protected render(audit: LockAudit): string {
    if (this.kill) return lockAuditKillLines(audit)
    return this.format === 'csv' ? lockAuditCsv(audit) : renderLockAudit(audit, this.terminalWidth)
  }
}
