import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../../src/cli/baseCommand.js'
import {connectionFlags} from '../../src/cli/connectionFlags.js'
import {checkRange, parseDuration, parseWindowBound} from '../../src/cli/parseInput.js'
import {prose} from '../../src/cli/prose.js'
import {lineageSpoolDir} from '../../src/cli/writeFlags.js'
import {usageError} from '../../src/errors.js'
import {ExitCode} from '../../src/exitCodes.js'
import {resendFromDatabase, resendSpool, type ResendReport} from '../../src/lineage/resend.js'
import {lineageSettings} from '../../src/lineage/settings.js'
import {renderTable} from '../../src/output/table.js'

export default class LineageResend extends AirlockCommand<ResendReport> {
  static override summary =
    'Send again the OpenLineage COMPLETE events no backend confirmed (the spool), or rebuild them.'
  static override description =
    prose(`complete (and replay-events --lineage-for-replays) write each COMPLETE event to a spool
before sending it, and remove it once the backend confirmed it: what is left was never
confirmed (the backend was down, slow, or the run stopped waiting). This sends each again, through
the same transport settings, and removes each one confirmed.

An event sent whole that got no answer (a timeout, a connection lost after the body went out, the
run's wait over) is kept as maybe delivered: the backend may hold it, and a second copy is stored
again (docs/lineage.md says what Marquez makes of it). Those are left in the spool unless
--include-maybe-delivered says to send them too: check the backend first, or accept the copy.

With --since (and --dag-id, --until) it rebuilds instead, from the database: the COMPLETE of every
task instance whose current try airlock completed in that window (airlock's own audit row of the
try), for a spool that was lost or never written. The run id is a hash of the try, so an event the
backend already had arrives again under the same run.

Exit 0 when every event was confirmed (or there was none), 5 when some were not, maybe-delivered
ones left in the spool included: they stay for the next resend.`)

  static override examples = [
    {description: 'What the spool holds, nothing sent', command: '<%= config.bin %> lineage resend --dry-run'},
    {
      description: 'Send it (cron-friendly: exit 5 while something is left)',
      command: '<%= config.bin %> lineage resend --json',
    },
    {
      description: 'Send the maybe-delivered events too, once the backend was checked (a copy may be stored twice)',
      command: '<%= config.bin %> lineage resend --include-maybe-delivered',
    },
    {
      description: 'Rebuild a lost spool: every COMPLETE of one DAG airlock completed in the last day',
      command:
        '<%= config.bin %> lineage resend --database-url postgresql://airflow@db/airflow --dag-id etl_daily --since 1d',
    },
  ]

  static override flags = {
    ...connectionFlags,
    'lineage-spool': Flags.string({
      summary: 'The spool to send from (default: $AIRLOCK_HOME/lineage-spool, where complete writes it).',
      helpValue: 'DIR',
    }),
    'openlineage-url': Flags.string({
      summary:
        'The OpenLineage backend (default: the settings complete reads: OPENLINEAGE_URL, openlineage.yml, [openlineage]).',
    }),
    'lineage-wait': Flags.string({
      summary: 'How long to wait for the events being sent; what is left stays in the spool (default 5m).',
      default: '5m',
      helpValue: 'DURATION',
    }),
    since: Flags.string({
      description:
        'Rebuild from the database: task instances airlock completed at or after this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
      helpGroup: 'REBUILD',
    }),
    until: Flags.string({
      description:
        'With --since: completed before this ISO-8601 UTC time, or this long ago (90m, 26h, 7d); default now.',
      helpGroup: 'REBUILD',
    }),
    'dag-id': Flags.string({summary: 'With --since: only this DAG.', helpGroup: 'REBUILD'}),
    'include-maybe-delivered': Flags.boolean({
      summary: 'Send the maybe-delivered events too (sent whole, no answer): the backend may then store them twice.',
      description:
        'Without it they stay in the spool, unsent, listed as held_maybe_delivered (exit 5). Not with --since, which sends every event it rebuilds.',
      default: false,
    }),
    'dry-run': Flags.boolean({summary: 'List the events it would send; send nothing, change no file.', default: false}),
  }

  protected async execute(): Promise<CommandOutcome<ResendReport>> {
    const {flags} = await this.parse(LineageResend)
    if ((flags['dag-id'] || flags.until) && !flags.since)
      throw usageError(
        '--dag-id and --until rebuild from the database: give --since too (or neither, to send the spool).',
      )
    const since = flags.since ? parseWindowBound(flags.since, '--since') : undefined
    const until = flags.until ? parseWindowBound(flags.until, '--until') : new Date()
    if (since) checkRange(since, until)
    if (since && flags['include-maybe-delivered'])
      throw usageError(
        "--include-maybe-delivered chooses among the spool's events; --since sends every event it rebuilds. Give one of them.",
      )
    const settings = await lineageSettings({
      openlineageUrl: flags['openlineage-url'],
      lineage: true,
      delivery: {
        spoolDir: lineageSpoolDir(flags['lineage-spool']),
        waitMs: parseDuration(flags['lineage-wait'], '--lineage-wait', 24 * 3_600_000),
        required: true,
      },
    })
    if (!settings.enabled)
      throw usageError(`No OpenLineage backend to send to: ${settings.reason}. Nothing was sent.`, [
        'Set OPENLINEAGE_URL (or pass --openlineage-url), as for complete.',
      ])
    const report = since
      ? await resendFromDatabase(
          await this.openAirflow(flags, {verb: 'lineage-resend', poolSize: 1}),
          settings,
          {since, until, dagId: flags['dag-id']},
          {dryRun: flags['dry-run'], airlockVersion: this.config.version},
        )
      : await resendSpool(settings, {
          dryRun: flags['dry-run'],
          includeMaybeDelivered: flags['include-maybe-delivered'],
        })
    const kept = report.items.filter((item) => item.outcome !== 'sent' && item.outcome !== 'would_send').length
    return {result: report, exit: kept > 0 && !report.dry_run ? ExitCode.partialFailure : ExitCode.ok}
  }

  protected render(report: ResendReport): string {
    if (report.items.length === 0) return 'Nothing to send: the spool holds no event.'
    const table = renderTable(
      ['run id', 'job', 'from', 'outcome'],
      report.items.map((item) => [
        item.run_id,
        item.job,
        item.source,
        item.error ? `${item.outcome}: ${item.error}` : item.outcome,
      ]),
      {width: this.terminalWidth},
    )
    const counts = new Map<string, number>()
    for (const item of report.items) counts.set(item.outcome, (counts.get(item.outcome) ?? 0) + 1)
    const summary = [...counts].map(([outcome, n]) => `${n} ${outcome.replaceAll('_', ' ')}`).join(', ')
    const lines = [
      `${report.dry_run ? 'DRY RUN (nothing sent): ' : ''}${report.items.length} COMPLETE event${report.items.length === 1 ? '' : 's'}: ${summary}.`,
    ]
    const spool = report.delivery?.spool
    if (
      report.delivery &&
      report.items.some((item) => item.outcome !== 'sent' && item.outcome !== 'held_maybe_delivered')
    )
      lines.push(`The events not confirmed stay in ${spool}; run airlock lineage resend again.`)
    const held = counts.get('held_maybe_delivered') ?? 0
    if (held > 0)
      lines.push(
        `${held} maybe delivered (sent whole, no answer) ${report.dry_run ? 'would stay' : 'stay'} in the spool, unsent: the backend may hold ${held === 1 ? 'it' : 'them'}. Check it; airlock lineage resend --include-maybe-delivered sends ${held === 1 ? 'it' : 'them'} too (the backend stores a second copy).`,
      )
    return `${table}\n\n${lines.join('\n')}`
  }
}
