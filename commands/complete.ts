import {Flags} from '@oclif/core'

import {taskInstanceStates, type TaskInstanceState} from '../src/airflow/taskInstance.js'
import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {parseEndDate, parseJsonObject} from '../src/cli/parseInput.js'
import {renderBatch, type BatchReport} from '../src/cli/renderItems.js'
import {selectionFlags, selectionFromFlags} from '../src/cli/selectionFlags.js'
import {
  lineageFromFlags,
  lineagePoolShare,
  outcomeFlags,
  writeOptionsFromFlags,
  writeFlags,
} from '../src/cli/writeFlags.js'
import {prepareComplete} from '../src/complete/prepareComplete.js'
import {prose} from '../src/cli/prose.js'

export default class Complete extends AirlockCommand<BatchReport> {
  static override summary = 'Mark task instances SUCCESS together with the asset events they emit.'
  static override description =
    prose(`For each selected task instance, in one transaction: read it without a lock, register one asset
event per active outlet asset (alias events and consumer queue rows included), lock the
task_instance row, recheck its state, then commit state + events + an audit log row, or roll
everything back. The row lock is held only for the state update.

A filter selection (--dag-id, --run-id, --task-id, --since, …) takes only task instances in a
--from-state state: the others it matches are not selected, counted in the summary by state.

Outcomes per task instance: completed; already_success (nothing written); conflict (named
explicitly in another state, or its state changed before its row lock: nothing written,
previous_state says which); inactive_outlet (--strict-outlets
only: an outlet asset is not active, as a worker would fail the task before running it); unsupported_consumer (a
consumer DAG has a partitioned timetable, which only Airflow can queue; nothing written unless
--allow-unqueued-consumers); mapped_downstream (a mapped task downstream expands over this
task's return value, which only a worker writes: nothing written unless --allow-mapped-downstream);
downstream_changed and unsupported_downstream (--continue-run: the clear could not be done exactly;
nothing written); not_found; failed (after
retries on deadlock, serialization failure or lock timeout). A task instance retried since it was
named (Airflow 3 gives each try a new id) is found by its key: the current try is reported.

Without --yes, more than one task instance needs confirmation on a terminal and is refused
(exit 2) elsewhere. Airflow's listeners (OpenLineage) and metrics do not see these writes.`)

  static override examples = [
    {
      description: 'Complete one task instance by id',
      command:
        '<%= config.bin %> complete --ti-id 0193e3b2-5f7e-7c1a-9a59-3f1d2e4c5b6a --database-url postgresql://airflow@db/airflow',
    },
    {
      description: 'A whole dag run, previewed first',
      command: '<%= config.bin %> complete --dag-id etl_daily --run-id scheduled__2026-12-01T00:00:00+00:00 --dry-run',
    },
    {
      description: 'Failed tasks too, with an extra on every event',
      command:
        '<%= config.bin %> complete --dag-id etl_daily --task-id load --from-state running --from-state failed --extra \'{"reason":"INC-42"}\' --yes',
    },
    {
      description: 'A backfill from cron, split across 4 hosts, streamed',
      command:
        '<%= config.bin %> complete --dag-id etl_daily --since 2026-11-01 --until 2026-12-01 --shard 2/4 --yes --ndjson',
    },
    {
      description: 'A failed task whose work is done: mark it success and let the run carry on downstream',
      command:
        '<%= config.bin %> complete --dag-id etl_daily --run-id scheduled__2026-12-01T00:00:00+00:00 --task-id load --from-state failed --continue-run',
    },
    {
      description: 'From a file (or - for stdin)',
      command: '<%= config.bin %> complete --from-file tis.ndjson --yes --json',
    },
  ]

  static override flags = {
    ...connectionFlags,
    ...selectionFlags,
    'from-state': Flags.string({
      description:
        'States a task instance may be in to be completed; repeatable; "none" for a task instance with no state yet (NULL). A filter selection takes only task instances in these states (the summary counts the others as not_selected); one named with --ti-id or --from-file in another state is a conflict (exit 3). The state is checked again under the row lock.',
      multiple: true,
      default: ['running'],
      options: [...taskInstanceStates.filter((s) => s !== 'success'), 'none'],
      helpGroup: 'WRITING',
    }),
    'strict-outlets': Flags.boolean({
      default: false,
      description:
        'Refuse a task instance whose declared outlet asset is not active (outcome inactive_outlet, nothing written), as a worker starting it would fail it (Airflow 3.0.2+); by default that event is skipped with a warning, as Airflow 3.1+ does at success.',
      helpGroup: 'WRITING',
    }),
    'allow-unqueued-consumers': Flags.boolean({
      default: false,
      description:
        'Complete a task instance even when a consumer DAG has a partitioned timetable (Airflow 3.2+): that DAG is not queued (airlock cannot run its partition mapper) and a warning says so. By default such a task instance is rolled back (outcome unsupported_consumer).',
      helpGroup: 'WRITING',
    }),
    'allow-mapped-downstream': Flags.boolean({
      default: false,
      description:
        'Complete a task instance even when a mapped task downstream expands over its return value. airlock writes no XCom and no task_map row, so that mapped task cannot expand and the scheduler sets it upstream_failed. By default such a task instance is refused (outcome mapped_downstream).',
      helpGroup: 'WRITING',
    }),
    'continue-run': Flags.boolean({
      default: false,
      description:
        "Continue the run as Airflow's mark-success does: in the same transaction, clear the failed and upstream_failed task instances downstream of it in its run (they run again) and put a finished run back to queued. If the scheduler changes them between the read and the locks the item is redone, and after the retries rolled back whole (downstream_changed): never a partial clear. A failed task also needs --from-state failed.",
      helpGroup: 'WRITING',
    }),
    'no-events': Flags.boolean({
      default: false,
      description: 'Only the state and the audit row: no asset events, no queued runs.',
      helpGroup: 'WRITING',
    }),
    ...writeFlags,
    ...outcomeFlags,
    extra: Flags.string({
      description:
        'JSON object for the extra of every event (outlet_events in --from-file lines override it per asset).',
      helpGroup: 'WRITING',
    }),
    'end-date': Flags.string({
      description:
        "end_date to record (ISO-8601 UTC); default: now, or the end_date a task instance that already ended (failed, up_for_retry) has, as the mark-success of Airflow's UI keeps it. Refused in the future (beyond 5 minutes of clock skew) and, per task instance, before its start_date.",
      helpGroup: 'WRITING',
    }),
    'force-end-date': Flags.boolean({
      description:
        'Record --end-date even in the future or before a start_date (the duration is then 0, never negative).',
      default: false,
      helpGroup: 'WRITING',
    }),
  }

  protected async execute(): Promise<CommandOutcome<BatchReport>> {
    const {flags} = await this.parse(Complete)
    const write = writeOptionsFromFlags(flags)
    const request = {
      selection: selectionFromFlags(flags),
      settings: {
        fromStates: flags['from-state'].map((state) => (state === 'none' ? null : (state as TaskInstanceState))),
        emitEvents: !flags['no-events'],
        strictOutlets: flags['strict-outlets'],
        allowUnqueuedConsumers: flags['allow-unqueued-consumers'],
        allowMappedDownstream: flags['allow-mapped-downstream'],
        downstream: flags.downstream,
        defaultExtra: flags.extra ? parseJsonObject(flags.extra, '--extra') : '{}',
        endDate: flags['end-date'] ? parseEndDate(flags['end-date'], flags['force-end-date']) : null,
        forceEndDate: flags['force-end-date'],
        continueRun: flags['continue-run'],
        airlockVersion: this.config.version,
        actor: flags.actor,
      },
      write,
      // Read before connecting: a malformed URL is a usage error before anything is written.
      lineage: await lineageFromFlags(flags, !write.dryRun),
    }
    const airflow = await this.openAirflow(flags, {
      verb: 'complete',
      poolSize: write.concurrency + 1 + lineagePoolShare(request.lineage, !write.dryRun),
      lockTimeoutMs: write.lockTimeoutMs,
      // A plan runs on SELECT alone, in a read-only session.
      ...(flags.plan ? {readOnly: true} : {writes: flags['continue-run'] ? 'complete --continue-run' : 'complete'}),
    })
    return this.writeBatch(await prepareComplete(airflow, request), {
      yes: flags.yes,
      outputFile: flags.output,
      failIfEmpty: flags['fail-if-empty'],
    })
  }

  protected render(report: BatchReport): string {
    return renderBatch(report, undefined, this.terminalWidth)
  }
}
