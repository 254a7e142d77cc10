import {dryRunOutcomeNames, type ItemJson} from '../report/itemJson.js'
import type {DownstreamSummary} from '../protocol/downstream.js'
import {describeCounts, plural} from '../output/counts.js'
import {keyColumn, renderTable} from '../output/table.js'
import {describeHolder, type LockWaitReport} from '../protocol/lockWaits.js'
import type {NotSelected} from '../selection/itemSource.js'
import type {SelectionBreakdown} from '../selection/selection.js'
import {resumeLines} from './resumeCommand.js'

/** Refusal reasons listed under the table. */
const detailRows = 20

/** `dag/run/task[map]`, as far as the item names it. */
export const itemLabel = (item: Partial<Pick<ItemJson, 'ti_id' | 'dag_id' | 'run_id' | 'task_id' | 'map_index'>>) =>
  `${item.dag_id ?? '?'}/${item.run_id ?? '?'}/${item.task_id ?? item.ti_id ?? '?'}${(item.map_index ?? -1) >= 0 ? `[${item.map_index}]` : ''}`

/** Runs listed before a bulk write; the rest are summed up in one line. */
const breakdownRows = 20

/** "Selected 120 task instances in 3 runs of 2 DAGs:" and a table of runs with their states. */
export function renderBreakdown(
  breakdown: SelectionBreakdown,
  count: number,
  width?: number,
  notSelected?: NotSelected,
): string {
  const runs = breakdown.runs.length
  const head = breakdown.truncated
    ? `Selected ${plural(count, 'task instance')} in more than ${plural(runs, 'run')} (the first ${runs.toLocaleString('en-US')} counted):`
    : `Selected ${plural(count, 'task instance')} in ${plural(runs, 'run')} of ${plural(breakdown.dags, 'DAG')}:`
  const shown = breakdown.runs.slice(0, breakdownRows)
  const table = renderTable(
    [{header: 'dag', keep: true}, {header: 'run', keep: true, middle: true}, 'task instances', 'states'],
    shown.map((run) => [run.dag_id, run.run_id, run.task_instances, describeCounts(run.states)]),
    {width},
  )
  // The rest is what the count leaves after the runs listed: a truncated breakdown counted only
  // some of the runs, so their sum is not the rest.
  const restRuns = breakdown.runs.length - shown.length
  const restTis = count - shown.reduce((sum, run) => sum + run.task_instances, 0)
  const more =
    restTis > 0 || restRuns > 0
      ? `\n… and ${plural(restTis, 'more task instance')} in ${
          breakdown.truncated ? `at least ${restRuns.toLocaleString('en-US')} more runs` : plural(restRuns, 'more run')
        }`
      : ''
  const passedOver =
    notSelected && notSelected.count > 0
      ? `\nNot selected: ${plural(notSelected.count, 'task instance')} the filter matched in other states (${describeCounts(notSelected.states)}).`
      : ''
  return `${head}\n${table}${more}${passedOver}`
}

/** "waiting 2.4 s for the row lock of etl/r1/load: held by pid 4242 "airflow scheduler" (…) → airlock audit-locks". */
export function describeLockWait(wait: LockWaitReport): string {
  const waited = `waiting ${(wait.waitedMs / 1000).toFixed(1)} s for the row lock of ${wait.label}`
  return wait.holder
    ? `${waited}: held by ${describeHolder(wait.holder)}; airlock audit-locks shows what it waits for`
    : `${waited}; airlock audit-locks shows who holds it`
}

export interface BatchReport<J = ItemJson> {
  summary: {dry_run: boolean} & Record<string, number | boolean>
  items: J[]
  /** --output: every item was written to this file as a JSON line. */
  output_file?: string
  /** --plan: the report is a read-only plan; what only the write decides. */
  plan?: string
  /** A dry run of a filter selection: its runs and their task instances per state. */
  breakdown?: SelectionBreakdown
  /** What the filter matched in states the writer does not take from, by state (`summary.not_selected` in all). */
  not_selected_states?: Record<string, number>
  /** Items not kept for the human table (large runs keep the first rows and every problem). */
  omitted?: number
  interrupted?: boolean
  /** A run a signal stopped: the command line that takes it up (a new --output name; its password scrubbed). */
  resume?: string
  /** What that line does not repeat verbatim (the new --output file, a scrubbed password). */
  resume_notes?: string[]
  /** Every consumer DAG the batch's events reach, as the scheduler's next step will see them. */
  downstream?: DownstreamSummary[]
  /**
   * Committed items' OpenLineage COMPLETE events by what became of them: sent, maybe_delivered,
   * failed, not_tried (each kept in the spool), would_send, disabled.
   */
  lineage?: Record<string, number>
  /** The first event not confirmed and why: `dag/run/task[map]: maybe delivered: why`. */
  lineage_first_failure?: string
  /** Where the events not confirmed are kept, when there are any: `airlock lineage resend` sends them. */
  lineage_spool?: string
  /** The command lines that send them: the not delivered, then (when any) the maybe delivered too. */
  lineage_resend?: string[]
}

/** Items of an event-level replay (by id, from a file): where each came from and what it became. */
export function renderEventItems(
  items: ReadonlyArray<{
    source: string
    asset: string | null
    source_dag_id: string | null
    source_run_id: string | null
    source_task_id: string | null
    source_map_index: number | null
    outcome: string
    new_event_id: number | null
    existing_event_id: number | null
    queued: number
    error?: {message: string}
  }>,
  width?: number,
): string {
  return renderTable(
    [
      keyColumn('from'),
      // The task instance that produced the event, named as the other tables name one.
      keyColumn('task instance'),
      {header: 'asset', keep: true, middle: true},
      {header: 'outcome', keep: true},
      'new event',
      'queued',
    ],
    items.map((item) => [
      item.source,
      item.source_task_id === null
        ? null
        : itemLabel({
            dag_id: item.source_dag_id,
            run_id: item.source_run_id,
            task_id: item.source_task_id,
            map_index: item.source_map_index,
          }),
      item.asset,
      item.outcome + (item.error ? `: ${item.error.message}` : ''),
      item.new_event_id ?? (item.existing_event_id ? `exists: ${item.existing_event_id}` : null),
      item.queued,
    ]),
    {width},
  )
}

/** The table of items and the run's summary line (`N task instances selected: 6 completed, 1 conflict; …`). */
export function renderBatch(
  report: BatchReport,
  noun = 'task instance',
  width?: number,
  /** What the run wrote, in place of "N events, M queue rows" (undo deletes rather than writes). */
  amounts?: string,
): string {
  // Finish order is noise for a reader: list by task instance.
  const rows = report.items
    .map((item) => [
      itemLabel(item),
      item.outcome +
        (item.previous_state && item.previous_state !== 'success' && item.outcome !== 'failed'
          ? ` (was ${item.previous_state})`
          : item.previous_state === null && item.outcome === 'conflict'
            ? ' (was none)'
            : '') +
        (item.continue_run
          ? `, cleared ${item.continue_run.cleared.length}${item.continue_run.dag_run.state !== item.continue_run.dag_run.previous_state ? `, run ${item.continue_run.dag_run.state ?? 'none'}` : ''}`
          : '') +
        (item.error ? `: ${item.error.sqlstate ?? ''} ${item.error.message}`.trimEnd() : ''),
      item.events,
      item.queued,
      // A plan takes no lock: there is no hold to measure, not a hold of 0.
      report.plan ? '—' : item.timings.lock_hold_ms.toFixed(2),
      item.timings.total_ms.toFixed(1),
    ])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])))
  const parts: string[] = []
  if (rows.length > 0)
    parts.push(
      renderTable(
        [
          keyColumn('task instance'),
          {header: 'outcome', keep: true},
          'events',
          'queued',
          {header: 'lock hold ms', optional: true},
          {header: 'total ms', optional: true},
        ],
        rows,
        {width},
      ),
    )
  // Why refused items were refused: the table has no room for it, and it is what to act on.
  const explained = report.items.filter((item) => item.detail)
  if (explained.length > 0)
    parts.push(
      [
        'Why:',
        ...explained.slice(0, detailRows).map((item) => `  ${itemLabel(item)}: ${item.outcome}: ${item.detail}`),
        ...(explained.length > detailRows
          ? [`  … and ${explained.length - detailRows} more (--json lists them all)`]
          : []),
      ].join('\n'),
    )
  if (report.omitted)
    parts.push(
      `… ${report.omitted} more items ${report.output_file ? `in ${report.output_file}` : '(--output FILE, --json or --ndjson list them all)'}`,
    )
  else if (report.output_file) parts.push(`Every item is in ${report.output_file}.`)
  const s = report.summary
  const counts = outcomeCounts(s)
  parts.push(
    `${report.plan ? 'PLAN (read-only: nothing written, no row locked): ' : s.dry_run ? 'DRY RUN (rolled back, nothing written): ' : ''}${selectedPhrase(s, noun)}: ` +
      `${counts.join(', ') || 'nothing to do'}; ${amounts ?? `${plural(s.events_created as number, 'event')}, ${plural(s.runs_queued as number, 'queue row')}`}${report.plan ? ` planned${report.downstream?.length ? ' (what they make ready: Downstream, below)' : ''}` : ''}.` +
      notSelectedLine(report) +
      stoppedLines(report),
  )
  if (report.plan) parts.push(`Plan: ${report.plan}.`)
  const lineage = lineageLine(report)
  if (lineage) parts.push(lineage)
  if (report.downstream && report.downstream.length > 0) parts.push(renderDownstream(report.downstream, s.dry_run))
  return parts.join('\n\n')
}

/** "6 completed, 1 conflict": the summary's outcome counts that are not zero (in a dry run's words). */
function outcomeCounts(s: BatchReport['summary']): string[] {
  return Object.entries(s)
    .filter(
      ([key, value]) =>
        typeof value === 'number' &&
        !['selected', 'events_created', 'runs_queued', 'not_reached', 'not_selected'].includes(key) &&
        value > 0,
    )
    .map(
      ([key, value]) =>
        `${value.toLocaleString('en-US')} ${((s.dry_run && dryRunOutcomeNames[key]) || key).replaceAll('_', ' ')}`,
    )
}

/** "Not selected: 14 task instances the filter matched in other states (12 none, 2 success)." */
const notSelectedLine = (report: BatchReport<unknown>): string =>
  typeof report.summary.not_selected === 'number' && report.summary.not_selected > 0
    ? `\nNot selected: ${plural(report.summary.not_selected, 'task instance')} the filter matched in other states (${describeCounts(report.not_selected_states ?? {})}): --from-state leaves them out, untouched.`
    : ''

/** A stopped run's last lines: what became of its items, and the line that takes it up. */
const stoppedLines = (report: BatchReport<unknown>): string =>
  (report.interrupted ? '\nInterrupted: the items above finished or rolled back; the rest were not touched.' : '') +
  (report.resume ? `\n${resumeLines(report)}` : '')

/**
 * "12 task instances selected", or for a run stopped early "189 … selected, 177 done, 2 failed, 10
 * not reached": the items taken that did not fail, those that failed (an interrupted lock wait
 * among them), and those never taken, which add up to the selection.
 */
function selectedPhrase(s: BatchReport['summary'], noun: string): string {
  const taken = s.selected as number
  const notReached = s.not_reached as number | undefined
  if (notReached === undefined) return `${plural(taken, noun)} selected`
  const failed = typeof s.failed === 'number' ? s.failed : 0
  return `${plural(taken + notReached, noun)} selected, ${(taken - failed).toLocaleString('en-US')} done, ${failed > 0 ? `${failed.toLocaleString('en-US')} failed, ` : ''}${notReached.toLocaleString('en-US')} not reached`
}

/**
 * "OpenLineage COMPLETE events: 3 sent, 1 failed (first failure: etl/r1/load: HTTP 400; …)." and,
 * when some were not confirmed, how many, where they are kept and the command that sends them
 * (the maybe-delivered apart); nothing when lineage was off throughout.
 */
function lineageLine(report: BatchReport): string | undefined {
  if (!report.lineage || ('disabled' in report.lineage && Object.keys(report.lineage).length === 1)) return undefined
  const counts = Object.entries(report.lineage)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${n} ${kind.replaceAll('_', ' ')}`)
  const failure = report.lineage_first_failure
    ? ` (first failure: ${report.lineage_first_failure}; the completions stand)`
    : ''
  return `OpenLineage COMPLETE events: ${counts.join(', ') || 'none'}${failure}.${report.lineage_spool ? `\n${keptLine(report)}` : ''}`
}

/** "3 COMPLETE events not confirmed are kept in DIR: `…resend` sends the 1 not delivered; the 2 maybe delivered …". */
function keptLine(report: BatchReport): string {
  const counts = report.lineage ?? {}
  const maybe = counts.maybe_delivered ?? 0
  const notDelivered = (counts.failed ?? 0) + (counts.not_tried ?? 0)
  const [resend, withMaybe] = report.lineage_resend ?? ['airlock lineage resend']
  const parts = [
    ...(notDelivered > 0 ? [`${resend} sends the ${notDelivered} not delivered`] : []),
    ...(maybe > 0
      ? [
          `the ${maybe} maybe delivered (sent whole, no answer: the backend may hold ${maybe === 1 ? 'it' : 'them'}) ${maybe === 1 ? 'stays' : 'stay'} until ${withMaybe}, which sends ${maybe === 1 ? 'it' : 'them'} again`,
        ]
      : []),
  ]
  return `${plural(maybe + notDelivered, 'COMPLETE event')} not confirmed ${maybe + notDelivered === 1 ? 'is' : 'are'} kept in ${report.lineage_spool}: ${parts.join('; ')}.`
}

const downstreamRows = 50

/**
 * The downstream section: one line per consumer DAG, never one per item ("report_daily: will run
 * (3 of 3 assets)", "finance_weekly: waits for s3://…/ledger").
 */
export function renderDownstream(downstream: readonly DownstreamSummary[], dryRun: boolean): string {
  const line = (dag: DownstreamSummary) => {
    const of = `${dag.satisfied_count} of ${dag.assets} asset${dag.assets === 1 ? '' : 's'}`
    if (dag.ready) return `${dag.dag_id}: ${dryRun ? 'would run' : 'will run'} (${of})`
    if (dag.blocked_by === 'partitioned')
      return `${dag.dag_id}: partitioned timetable, queued through its partition mapper (not evaluated)`
    if (dag.blocked_by === 'max_active_runs' && dag.reason) return `${dag.dag_id}: no run while ${dag.reason} (${of})`
    if (dag.blocked_by === 'max_active_runs')
      return `${dag.dag_id}: condition met (${of}), but no run while ${blockedWords.max_active_runs}`
    if (dag.blocked_by) return `${dag.dag_id}: no run while ${blockedWords[dag.blocked_by]} (${of})`
    // No serialized DAG (never parsed), or one whose timetable names no asset: nothing to evaluate.
    if (dag.assets === 0)
      return `${dag.dag_id}: its latest serialized DAG names no asset condition, so none was evaluated`
    const more = dag.waiting_for_count - dag.waiting_for.length
    return `${dag.dag_id}: waits for ${dag.waiting_for.join(', ')}${more > 0 ? ` and ${more} more` : ''} (${of})`
  }
  return [
    `Downstream (as the scheduler's next step will see it${dryRun ? ' if this ran' : ''}):`,
    ...downstream.slice(0, downstreamRows).map((dag) => `  ${line(dag)}`),
    ...(downstream.length > downstreamRows
      ? [`  … and ${downstream.length - downstreamRows} more consumer DAGs (--json lists them all)`]
      : []),
  ].join('\n')
}

const blockedWords: Record<Exclude<DownstreamSummary['blocked_by'], undefined>, string> = {
  paused: 'it is paused',
  stale: 'it is stale (its file is gone)',
  import_errors: 'its file has import errors',
  max_active_runs: 'max_active_runs runs are queued or running',
  partitioned: 'its timetable is partitioned',
}
