import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {parseDuration} from '../src/cli/parseInput.js'
import {prose} from '../src/cli/prose.js'
import {failIfEmptyFlag} from '../src/cli/selectionFlags.js'
import {renderExplainedDag, renderExplainSummary} from '../src/cli/renderExplain.js'
import {usageError} from '../src/errors.js'
import {ExitCode} from '../src/exitCodes.js'
import {findingKinds, type DagExplanation, type FindingKind} from '../src/explain/explainDag.js'
import {runExplain, type ExplainSummary} from '../src/explain/runExplain.js'
import type {ExplainSelection} from '../src/store/families/downstream.js'

interface ExplainResult {
  summary: Omit<ExplainSummary, 'scheduler' | 'dag_processor'>
  scheduler: ExplainSummary['scheduler']
  dag_processor: ExplainSummary['dag_processor']
  dags: DagExplanation[]
}

export default class Explain extends AirlockCommand<ExplainResult> {
  static override summary =
    'Why an asset-scheduled DAG will run, waits, or is blocked; runs that consumed one event twice.'
  static override description =
    prose(`Read-only (a read-only role is enough). For each DAG, what a coming scheduler loop will do
with it, from what the database holds now: its asset condition (from its latest serialized DAG) as
a tree, each asset queued (since when, by which event) or missing (its last event); the exclusions
that apply (paused, stale, import errors, max_active_runs, from 3.2 the scheduler's cached
exceeds_max_non_backfill flag); for a partitioned consumer (3.2+) each pending partition run; its
last asset-triggered runs with the events each consumed. The verdict is will_run (a coming
loop creates a run: each loop takes a limited number of DAGs and skips those another scheduler
holds), waiting (for the fewest assets that would make its condition true), blocked (by
what) or not_asset_scheduled.

Findings: stuck (the verdict is will_run, its condition or a pending partition run's has held
longer than --stuck-after, and no run was created), paused_backlog (a paused DAG whose condition
has held that long: unpausing runs it; fails only when --fail-on names it), duplicate_run (two runs consumed the same event: the race of
two schedulers), duplicate_partition_run (two pending partition runs for one key), orphan_queue (a
queue row whose asset is gone). --fail-on makes a finding exit 6, for cron.

A verdict is what a running scheduler does: with no live scheduler (the job table's heartbeats,
judged as Airflow's health check judges them) or DAG processor, the verdicts that need one say
so, and so does the report.`)

  static override examples = [
    {description: 'Why did my consumer not run?', command: '<%= config.bin %> explain --dag-id report_daily'},
    {description: 'Every consumer of an asset', command: '<%= config.bin %> explain --asset s3://lake/orders'},
    {
      description: 'Every asset-scheduled DAG, for cron: exit 6 on a stuck DAG or a duplicate run',
      command: '<%= config.bin %> explain --all --fail-on stuck --fail-on duplicate_run --ndjson',
    },
  ]

  static override flags = {
    ...connectionFlags,
    'dag-id': Flags.string({description: 'A DAG to explain. Repeatable.', multiple: true, helpGroup: 'SELECTION'}),
    asset: Flags.string({
      description: 'Every consumer of this asset (its name or its uri). Repeatable.',
      multiple: true,
      helpGroup: 'SELECTION',
    }),
    all: Flags.boolean({description: 'Every asset-scheduled DAG.', default: false, helpGroup: 'SELECTION'}),
    runs: Flags.integer({
      description: 'Asset-triggered runs shown per DAG, newest first (duplicate_run is looked for among them).',
      default: 10,
      min: 0,
      max: 1000,
    }),
    'stuck-after': Flags.string({
      description:
        'A condition that has held this long with no run is stuck, or paused_backlog if paused (5m, 1h, 24h; up to 168h).',
      default: '1h',
    }),
    'fail-on': Flags.string({
      description: 'Exit 6 when a finding of this kind exists. Repeatable. Default: none (exit 0).',
      multiple: true,
      options: [...findingKinds],
    }),
    ...failIfEmptyFlag,
    ndjson: Flags.boolean({
      description: 'Stream one JSON line per DAG, then a summary line.',
      exclusive: ['json'],
      helpGroup: 'OUTPUT',
    }),
  }

  private now = new Date()

  protected async execute(): Promise<CommandOutcome<ExplainResult>> {
    const {flags} = await this.parse(Explain)
    const selections = [flags['dag-id'] ? 1 : 0, flags.asset ? 1 : 0, flags.all ? 1 : 0].reduce((a, b) => a + b)
    if (selections !== 1) throw usageError('Name what to explain with exactly one of --dag-id, --asset or --all.')
    const selection: ExplainSelection = flags.all
      ? {kind: 'all'}
      : flags['dag-id']
        ? {kind: 'dags', dagIds: [...new Set(flags['dag-id'])]}
        : {kind: 'assets', assets: [...new Set(flags.asset ?? [])]}
    for (const value of [...(flags['dag-id'] ?? []), ...(flags.asset ?? [])]) {
      if (value.trim() === '') throw usageError('--dag-id and --asset need a value, not an empty string.')
    }
    const stuckAfterMs = parseDuration(flags['stuck-after'], '--stuck-after', 7 * 24 * 3_600_000)
    const airflow = await this.openAirflow(flags, {verb: 'explain', poolSize: 1})
    const dags: DagExplanation[] = []
    this.now = new Date()
    const summary = await runExplain(airflow, {selection, runs: flags.runs, stuckAfterMs, now: this.now}, (dag) => {
      // Streamed as each page is read: --ndjson a line, people a paragraph; --json keeps them for the envelope.
      if (flags.ndjson) this.emit(JSON.stringify({type: 'dag', ...dag}))
      else if (this.jsonMode) dags.push(dag)
      else this.emit(`${renderExplainedDag(dag, this.now)}\n`)
    })
    const failOn = (flags['fail-on'] ?? []) as FindingKind[]
    const exit = this.exitUnlessEmpty(
      flags,
      summary.dags === 0,
      'no asset-scheduled DAG matched',
      failOn.some((kind) => summary.findings[kind] > 0) ? ExitCode.auditFindings : ExitCode.ok,
    )
    this.settle(exit)
    if (flags.ndjson) this.emit(JSON.stringify({type: 'summary', ...summary}))
    const {scheduler, dag_processor, ...counts} = summary
    return {result: {summary: counts, scheduler, dag_processor, dags}, exit}
  }

  protected render(result: ExplainResult): string {
    return renderExplainSummary(
      {...result.summary, scheduler: result.scheduler, dag_processor: result.dag_processor},
      this.now,
    )
  }
}
