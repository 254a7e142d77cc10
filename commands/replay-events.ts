import {Flags} from '@oclif/core'

import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {isRelativeTime, parseJsonObject} from '../src/cli/parseInput.js'
import {renderBatch, renderEventItems, type BatchReport} from '../src/cli/renderItems.js'
import {maxInt4, selectionFlags, selectionFromFlags} from '../src/cli/selectionFlags.js'
import {
  lineageFromFlags,
  lineagePoolShare,
  outcomeFlags,
  writeOptionsFromFlags,
  writeFlags,
} from '../src/cli/writeFlags.js'
import {usageError} from '../src/errors.js'
import {prepareReplay, type EventItemJson, type ReplayMode} from '../src/replay/prepareReplay.js'
import type {ItemJson} from '../src/report/itemJson.js'
import {hasFilter, type SelectionRequest} from '../src/selection/itemSource.js'
import {prose} from '../src/cli/prose.js'

const {'from-file': _tiFile, ...taskSelection} = selectionFlags

export default class ReplayEvents extends AirlockCommand<BatchReport<ItemJson | EventItemJson>> {
  static override summary = 'Re-register lost asset events: missing ones, by event id, or from a file.'
  static override description = prose(`Three modes.

Missing (the default): successful task instances (selection flags; --since/--until on end_date)
whose active declared outlets have no event of their last try. Each goes through the same
protocol as complete: register the missing events and queue their consumers, lock the row,
recheck that it is still success, the events still missing and the evidence unchanged, commit or
roll back. Outcomes: replayed, nothing_missing, not_emitted, unknown, changed.

Only tries whose events were written and then lost are replayed: Airflow's worker logged the
success (Airflow 3.2+), or airlock wrote the events. A try marked success without events on
purpose (Airflow's REST API or UI, a dags test, complete --no-events) is not_emitted, left alone
unless --include-marked-success. A try nothing can tell about (a bulk mark in the UI leaves no
log row; Airflow 3.0 and 3.1 log no worker success) is unknown, replayed only with
--include-unknown. Either flag starts the consumer DAGs of what it replays.

--event-id N: re-emit existing events as new ones (same asset, extra, partition key, source,
aliases) and queue their consumers again, so downstream DAGs run again.

--from-file PATH: re-emit the events of an export-events file, matching assets by name and uri (an
unknown asset: that line is reported and skipped, exit 5 at the end); --skip-existing skips events
already present at or after the line's time.

New events always get a fresh UTC timestamp (never backdated). Provenance goes into Airflow's
audit log (event "airlock.replay-events"), not into the events' extra, which consumers read.
--checkpoint FILE lets an interrupted replay resume where it stopped.`)

  static override examples = [
    {
      description: "What is missing for last night's runs of one DAG",
      command: '<%= config.bin %> replay-events --dag-id etl_daily --since 2026-12-01T00:00:00Z --dry-run',
    },
    {
      description: 'Replay them, resumable',
      command:
        '<%= config.bin %> replay-events --dag-id etl_daily --since 2026-12-01T00:00:00Z --yes --checkpoint replay.ckpt',
    },
    {
      description: 'Run downstream DAGs again for two events',
      command: '<%= config.bin %> replay-events --event-id 1201 --event-id 1202 --yes',
    },
    {
      description: 'Every missing_events finding of an audit, in one command',
      command: '<%= config.bin %> replay-events --from-file findings.ndjson --dry-run',
    },
    {
      description: "From a restored backup's export",
      command: '<%= config.bin %> replay-events --from-file incident.ndjson --skip-existing --yes --json',
    },
  ]

  static override flags = {
    ...connectionFlags,
    ...taskSelection,
    // Missing mode selects successful task instances by when they ended, not by their run.
    since: {
      ...taskSelection.since,
      description:
        'Missing mode: task instances whose end_date is at or after this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
    },
    until: {
      ...taskSelection.until,
      description:
        'Missing mode: task instances whose end_date is before this ISO-8601 UTC time, or this long ago (90m, 26h, 7d).',
    },
    'event-id': Flags.integer({
      description: 'Re-emit this event (asset_event.id). Repeatable.',
      multiple: true,
      min: 1,
      max: maxInt4,
      helpGroup: 'MODE',
    }),
    'from-file': Flags.string({
      description:
        "NDJSON written by airlock export-events (its events are re-emitted), or audit-events' findings (--output or --ndjson): its missing_events are replayed as in missing mode.",
      helpGroup: 'MODE',
    }),
    'skip-existing': Flags.boolean({
      description:
        "With --from-file: skip lines whose event (same asset, source, extra, partition key) exists at or after the line's timestamp.",
      default: false,
      helpGroup: 'MODE',
    }),
    checkpoint: Flags.string({
      description: 'Record progress here; a re-run with the same file resumes after the last finished item.',
      helpGroup: 'WRITING',
    }),
    ...writeFlags,
    ...outcomeFlags,
    'lineage-for-replays': Flags.boolean({
      summary:
        "Missing mode: send a replayed try's OpenLineage COMPLETE too (off: its worker's listener already sent one).",
      description:
        "A missing-mode replay writes the lost events of a try whose success Airflow recorded, and Airflow's OpenLineage listener sent that try's COMPLETE then; a second one for the same run is stored again by the backend (Marquez keeps both events and records the run completed twice). Send it anyway when the worker's never arrived.",
      default: false,
      helpGroup: 'OUTPUT',
    }),
    extra: Flags.string({
      description: 'Missing mode: JSON object for the extra of replayed events (default {}).',
      helpGroup: 'WRITING',
    }),
    'include-marked-success': Flags.boolean({
      description:
        'Missing mode: also replay for tries marked success without events on purpose (REST API or UI mark-success, dags test, complete --no-events); by default they are reported not_emitted.',
      default: false,
      helpGroup: 'MODE',
    }),
    'include-unknown': Flags.boolean({
      description:
        'Missing mode: also replay for tries the database cannot tell lost from marked success (a bulk mark, or Airflow 3.0/3.1 without a worker log row); by default they are reported unknown.',
      default: false,
      helpGroup: 'MODE',
    }),
  }

  protected async execute(): Promise<CommandOutcome<BatchReport<ItemJson | EventItemJson>>> {
    const {flags} = await this.parse(ReplayEvents)
    const write = writeOptionsFromFlags(flags)
    const request = {
      mode: modeFrom(flags),
      defaultExtra: flags.extra ? parseJsonObject(flags.extra, '--extra') : '{}',
      accepts: {includeMarkedSuccess: flags['include-marked-success'], includeUnknown: flags['include-unknown']},
      checkpointFile: flags.checkpoint,
      write,
      airlockVersion: this.config.version,
      actor: flags.actor,
      downstream: flags.downstream,
      lineage: await lineageFromFlags(flags, !write.dryRun && flags['lineage-for-replays']),
      lineageForReplays: flags['lineage-for-replays'],
    }
    const airflow = await this.openAirflow(flags, {
      verb: 'replay-events',
      poolSize:
        write.concurrency + 1 + lineagePoolShare(request.lineage, !write.dryRun && flags['lineage-for-replays']),
      lockTimeoutMs: write.lockTimeoutMs,
      ...(flags.plan ? {readOnly: true} : {writes: 'replay-events'}),
    })
    return this.writeBatch(await prepareReplay(airflow, request), {
      yes: flags.yes,
      outputFile: flags.output,
      failIfEmpty: flags['fail-if-empty'],
    })
  }

  protected render(report: BatchReport<ItemJson | EventItemJson>): string {
    const events = report.items.filter((item): item is EventItemJson => 'source' in item)
    const tis = report.items.filter((item): item is ItemJson => !('source' in item))
    if (events.length === 0) return renderBatch({...report, items: tis}, undefined, this.terminalWidth)
    return `${renderEventItems(events, this.terminalWidth)}\n\n${renderBatch({...report, items: []}, 'item', this.terminalWidth)}`
  }
}

function modeFrom(flags: Record<string, unknown>): ReplayMode {
  const eventIds = (flags['event-id'] as number[] | undefined) ?? []
  const file = flags['from-file'] as string | undefined
  const selection = selectionFromFlags({...flags, 'from-file': undefined})
  const selecting = selection.tiIds.length + (selection.tiKeys?.length ?? 0) > 0 || hasFilter(selection.filter)
  const modes = [eventIds.length > 0, Boolean(file), selecting].filter(Boolean).length
  if (modes > 1) throw usageError('Use one mode: --event-id, --from-file, or the task selection flags (missing mode).')
  if (flags['skip-existing'] && !file) throw usageError('--skip-existing works with --from-file only.')
  refuseCombinations(flags, selection, eventIds.length > 0)
  if (eventIds.length > 0) return {kind: 'event-id', ids: eventIds}
  if (file)
    return {kind: 'file', path: file, skipExisting: Boolean(flags['skip-existing']), limit: selection.filter.limit}
  return {kind: 'missing', selection}
}

/** What a mode cannot be combined with, refused before anything is opened (exit 2). */
function refuseCombinations(flags: Record<string, unknown>, selection: SelectionRequest, byEventId: boolean): void {
  if (flags.plan && byEventId)
    throw usageError(
      '--plan plans missing mode (and a findings file); for --event-id, --dry-run shows what would be re-emitted.',
    )
  if (flags.plan && flags.checkpoint)
    throw usageError('--plan writes nothing, a checkpoint included: drop --checkpoint.')
  if (flags.checkpoint && (selection.tiKeys?.length ?? 0) > 0)
    throw usageError(
      '--checkpoint resumes by task instance id: name the task instances by id (--ti-id UUID), or drop --checkpoint.',
    )
  const relative = (['since', 'until'] as const).find((flag) => {
    const value = flags[flag]
    return typeof value === 'string' && isRelativeTime(value)
  })
  if (relative && flags.checkpoint)
    throw usageError(
      `--${relative} ${flags[relative] as string} moves with the clock, and a checkpoint resumes one selection: give --${relative} as a time (2026-12-01T00:00:00Z) to use --checkpoint.`,
    )
}
