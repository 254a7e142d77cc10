import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {checkRange, parseWindowBound} from '../src/cli/parseInput.js'
import {prose} from '../src/cli/prose.js'
import type {BatchReport} from '../src/cli/renderItems.js'
import {renderUndo} from '../src/cli/renderUndo.js'
import {failIfEmptyFlag, maxInt4} from '../src/cli/selectionFlags.js'
import {writeFlags, writeOptionsFromFlags} from '../src/cli/writeFlags.js'
import {usageError} from '../src/errors.js'
import {prepareUndo, type UndoItemJson, type UndoSelection} from '../src/undo/prepareUndo.js'

const {concurrency: _concurrency, ...undoWriteFlags} = writeFlags

export default class Undo extends AirlockCommand<BatchReport<UndoItemJson>> {
  static override summary = 'Take back airlock writes that nothing downstream has acted on yet.'
  static override description = prose(`Every airlock write (complete, replay-events, audit-events --fix) is one
transaction whose row in Airflow's audit log records what it wrote and what the rows were before.
undo reads that row and takes the write back, newest first, each in one transaction under the
same order as every writer: the consumer DAGs' rows locked so no run can take the events
meanwhile, the events and the queue rows the write created deleted, the undo's own audit row
written, then the task instance's row locked, rechecked and put back as it was.

Only what nothing has acted on: consumed (a run took its events: undo cannot take back a run; it
names the run, to stop or mark in Airflow), changed (the task instance moved on since: a retry, a
clear, the scheduler), not_airlock (a row airlock did not write), not_undoable (an undo itself, a
row from an airlock that recorded no before-image), already_undone. Any refusal is exit 3.

A consumed write's events may still be queued for other consumer DAGs, whose runs will take
them: the item lists them (still_queued). --withdraw-queued withdraws exactly those queue rows,
under undo's locks and checks, in an audit row of its own that undo takes back (withdrawn, exit
3: the run that consumed the events stands, to handle in Airflow).

Select by --log-id (the log_id of each item of complete's or replay-events' --json/--ndjson
output), by --from-file (such an output file), or by --since/--until with --by-actor and
--dag-id/--run-id/--task-id.`)

  static override examples = [
    {
      description: 'What undoing one completion would do',
      command: '<%= config.bin %> undo --log-id 48213 --dry-run',
    },
    {
      description: 'Undo everything a completion run wrote (its --output file)',
      command: '<%= config.bin %> undo --from-file complete-2026-12-06.ndjson --yes',
    },
    {
      description: 'Undo what one operator did in the last hour on one DAG',
      command: '<%= config.bin %> undo --since 1h --by-actor alice --dag-id etl_daily --plan',
    },
  ]

  static override flags = {
    ...connectionFlags,
    'log-id': Flags.integer({
      description: "The audit row of the write to take back (log.id; each item's log_id in --json). Repeatable.",
      multiple: true,
      min: 1,
      max: maxInt4,
      helpGroup: 'SELECTION',
    }),
    'from-file': Flags.string({
      description:
        'A result file of complete or replay-events (--output or --ndjson): the write of each item that has a log_id.',
      helpGroup: 'SELECTION',
    }),
    since: Flags.string({
      description: 'Writes airlock logged at or after this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
      helpGroup: 'SELECTION',
    }),
    until: Flags.string({
      description: 'With --since: logged before this ISO-8601 UTC time, or this long ago (90m, 26h, 7d); default now.',
      helpGroup: 'SELECTION',
    }),
    'dag-id': Flags.string({
      description: 'With --since: writes on this DAG. Repeatable.',
      multiple: true,
      helpGroup: 'SELECTION',
    }),
    'run-id': Flags.string({
      description: 'With --since: writes on this run. Repeatable.',
      multiple: true,
      helpGroup: 'SELECTION',
    }),
    'task-id': Flags.string({
      description: 'With --since: writes on this task. Repeatable.',
      multiple: true,
      helpGroup: 'SELECTION',
    }),
    'by-actor': Flags.string({
      description:
        "With --since: writes this actor made (the audit row's owner: --actor of the write, else its OS user).",
      helpGroup: 'SELECTION',
    }),
    limit: Flags.integer({
      description: 'With --since: at most this many audit rows, the newest.',
      min: 1,
      helpGroup: 'SELECTION',
    }),
    ...failIfEmptyFlag,
    'withdraw-queued': Flags.boolean({
      description:
        "For a write a run consumed (outcome consumed): withdraw the queue rows its events still hold for other consumer DAGs (still_queued), so those DAGs do not run on them. Under undo's locks and checks, recorded in its own audit row (undo --log-id of it puts them back while still valid); the run that consumed them is not taken back. With --plan or --dry-run: what it would withdraw.",
      helpGroup: 'WRITING',
    }),
    ...undoWriteFlags,
    plan: Flags.boolean({
      ...undoWriteFlags.plan,
      description:
        "A read-only plan: each audit row's outcome decided on reads (already undone, consumed, the task instance moved on, events gone, a partitioned consumer), with no lock taken (a run may still take the events before a real undo). Needs only SELECT. --dry-run runs the real transaction and rolls it back.",
    }),
  }

  protected async execute(): Promise<CommandOutcome<BatchReport<UndoItemJson>>> {
    const {flags} = await this.parse(Undo)
    const write = writeOptionsFromFlags({...flags, concurrency: 1})
    const selection = selectionFrom(flags)
    const airflow = await this.openAirflow(flags, {
      verb: 'undo',
      poolSize: 2,
      lockTimeoutMs: write.lockTimeoutMs,
      ...(flags.plan ? {readOnly: true} : {writes: 'undo'}),
    })
    return this.writeBatch(
      await prepareUndo(airflow, {
        selection,
        write,
        airlockVersion: this.config.version,
        actor: flags.actor,
        withdrawQueued: flags['withdraw-queued'],
      }),
      {yes: flags.yes, outputFile: flags.output, failIfEmpty: flags['fail-if-empty']},
    )
  }

  protected render(report: BatchReport<UndoItemJson>): string {
    return renderUndo(report, this.terminalWidth)
  }
}

function selectionFrom(flags: {
  'log-id'?: number[] | undefined
  'from-file'?: string | undefined
  since?: string | undefined
  until?: string | undefined
  'dag-id'?: string[] | undefined
  'run-id'?: string[] | undefined
  'task-id'?: string[] | undefined
  'by-actor'?: string | undefined
  limit?: number | undefined
}): UndoSelection {
  const ids = flags['log-id'] ?? []
  const modes = [ids.length > 0, Boolean(flags['from-file']), Boolean(flags.since)].filter(Boolean).length
  if (modes === 0)
    throw usageError(
      'Name what to undo: --log-id N, --from-file RESULT.ndjson, or --since TIME (with --by-actor, --dag-id, …).',
    )
  if (modes > 1) throw usageError('Use one selection: --log-id, --from-file, or --since.')
  const windowOnly = (['until', 'dag-id', 'run-id', 'task-id', 'by-actor', 'limit'] as const).find((flag) => {
    const value = flags[flag]
    return Array.isArray(value) ? value.length > 0 : value !== undefined
  })
  if (!flags.since && windowOnly) throw usageError(`--${windowOnly} narrows --since: give --since too.`)
  if (ids.length > 0) return {kind: 'log-ids', ids}
  if (flags['from-file']) return {kind: 'file', path: flags['from-file']}
  const since = parseWindowBound(flags.since!, '--since')
  const until = flags.until ? parseWindowBound(flags.until, '--until') : new Date()
  checkRange(since, until)
  return {
    kind: 'window',
    window: {
      since,
      until,
      owner: flags['by-actor'],
      dagIds: flags['dag-id'] ?? [],
      runIds: flags['run-id'] ?? [],
      taskIds: flags['task-id'] ?? [],
      limit: flags.limit,
    },
  }
}
