import {notConfirmed, type LineageDeliveryReport} from '../batch/prepared.js'
import type {Tally} from '../batch/tally.js'
import {createProgress, type Progress} from '../output/progress.js'
import {DownstreamFold, type Downstream} from '../protocol/downstream.js'
import type {ItemJson} from '../report/itemJson.js'
import type {NotSelected} from '../selection/itemSource.js'
import {humanRowCap, RowStream, type ItemSink, type OutputMode} from './outputFile.js'
import {itemLabel, type BatchReport} from './renderItems.js'
import {resumeCommand} from './resumeCommand.js'
import {lineageSpoolDir} from './writeFlags.js'

export type {OutputMode} from './outputFile.js'

/** A human table keeps the first rows, and then only problems (up to humanRowCap in all). */
const humanFirstRows = 50

export interface ItemLike {
  outcome: string
}

/**
 * Where a batch's items go as they finish: streamed as NDJSON lines, all kept for the --json
 * envelope, or (for humans) the first rows and every problem, so a million-item backfill keeps
 * flat memory in every mode but --json.
 */
export class BatchOutput<J extends ItemLike> {
  private readonly rows: RowStream<J>
  private readonly progress: Progress
  /** The downstream preview of every item, one entry per consumer DAG. */
  private readonly downstream = new DownstreamFold()
  private sawDownstream = false
  /** What became of each committed item's OpenLineage COMPLETE: sent, failed, would_send, disabled. */
  private readonly lineage = new Map<string, number>()
  private firstLineageFailure: string | undefined
  private delivery: LineageDeliveryReport | undefined
  private notSelected: NotSelected | undefined

  constructor(
    mode: OutputMode,
    label: string,
    /** The selection's size, where known: what an interrupted run never reached is the rest of it. */
    private readonly total: number | null,
    doneOutcomes: readonly string[],
    emit: (line: string) => void,
    /** Every item, whatever the mode keeps: the --output file. */
    private readonly sink?: ItemSink,
  ) {
    this.progress = createProgress({label, total, enabled: mode !== 'json' || !process.stderr.isTTY})
    this.rows = new RowStream<J>(mode, 'item', emit, sink, {
      keep: (json, kept) => kept < humanFirstRows || (!doneOutcomes.includes(json.outcome) && kept < humanRowCap),
    })
  }

  /** What the filter matched but the writer's states left out: counted in the summary, never items. */
  passedOver(notSelected: NotSelected | undefined): void {
    this.notSelected = notSelected
  }

  /** What the lineage outbox delivered once the batch stopped waiting for it. */
  delivered(report: LineageDeliveryReport): void {
    this.delivery = report
  }

  /**
   * The run's COMPLETE events by what became of them: the outbox's report where events were
   * handed to it (the items' own `queued`/`spooled` were only the way there), the spool that
   * holds every one not confirmed, and the command lines that send them.
   */
  private lineageSummary(): {
    lineage?: Record<string, number>
    firstFailure?: string
    spool?: string
    resend?: string[]
  } {
    const items = Object.fromEntries([...this.lineage].filter(([kind]) => kind !== 'queued' && kind !== 'spooled'))
    if (!this.delivery) {
      return this.lineage.size > 0
        ? {lineage: items, ...(this.firstLineageFailure ? {firstFailure: this.firstLineageFailure} : {})}
        : {}
    }
    const {sent, maybe_delivered: maybeDelivered, failed, not_tried: notTried, spool, skipped} = this.delivery
    const firstFailure = this.delivery.first_failure ?? this.firstLineageFailure
    const lineage = {
      ...items,
      sent,
      maybe_delivered: maybeDelivered,
      failed: failed + (items.failed ?? 0),
      not_tried: notTried,
      ...(skipped ? {skipped} : {}),
    }
    return {
      lineage,
      ...(firstFailure ? {firstFailure} : {}),
      ...(notConfirmed(this.delivery) > 0 ? {spool, resend: resendLines(spool, maybeDelivered > 0)} : {}),
    }
  }

  add<Name extends string>(json: J, tally: Tally<Name>): void {
    this.rows.add(json)
    const previews = (json as {downstream?: Downstream[]}).downstream
    if (previews) {
      this.sawDownstream = true
      this.downstream.add(previews)
    }
    const lineage = (json as {lineage?: string}).lineage
    if (lineage) {
      const kind = lineage.startsWith('failed') ? 'failed' : lineage.startsWith('skipped') ? 'skipped' : lineage
      this.lineage.set(kind, (this.lineage.get(kind) ?? 0) + 1)
      // "etl/run/load[2]: HTTP 400": which item, and why (the item's own value reads "failed (why)").
      if (kind === 'failed')
        this.firstLineageFailure ??= `${itemLabel(json as ItemLike & Partial<ItemJson>)}: ${lineage.replace(/^failed \((.*)\)$/s, '$1')}`
    }
    const detail = [...tally.counts]
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${n} ${k}`)
      .join(' · ')
    this.progress.update(tally.selected, detail)
  }

  /** A line about the run as a whole (who holds a row lock an item waits for), or undefined to clear it; see Progress.status. */
  status(text: string | undefined, key?: string): void {
    this.progress.status(text, key)
  }

  /**
   * The batch itself stopped on an error (the database went away): the --output file ends with
   * the error line, not a summary (a consumer must not read "done"), and the report lists what had
   * finished, for the error's envelope; nothing when no item had.
   */
  fail<Name extends string>(
    tally: Tally<Name> | undefined,
    dryRun: boolean,
    errorLine: string,
  ): BatchReport<J> | undefined {
    const report = tally ? this.finish(tally, dryRun, true, false) : undefined
    this.progress.stop()
    this.rows.end(errorLine, false)
    return report
  }

  /**
   * The batch's report, and its summary line on the stream and in the --output file
   * (`summaryLine`). `resume`: for a run a signal stopped, the line that takes it up.
   */
  finish<Name extends string>(
    tally: Tally<Name>,
    dryRun: boolean,
    interrupted: boolean,
    summaryLine = true,
    resume?: {command: string; caveats: string[]},
  ): BatchReport<J> {
    this.progress.stop()
    const summary = tally.summary(dryRun)
    // `selected` counts the items taken; a run stopped early says how many of the selection it never took.
    if (interrupted && this.total !== null) summary.not_reached = Math.max(0, this.total - tally.selected)
    const passedOver = this.notSelected ? {not_selected_states: this.notSelected.states} : {}
    if (this.notSelected) summary.not_selected = this.notSelected.count
    const downstream = this.sawDownstream ? this.downstream.summary() : undefined
    const {lineage, firstFailure, spool, resend} = this.lineageSummary()
    const lineageNames = {
      ...(firstFailure ? {lineage_first_failure: firstFailure} : {}),
      ...(spool ? {lineage_spool: spool} : {}),
      ...(resend ? {lineage_resend: resend} : {}),
    }
    const resumed = resume
      ? {resume: resume.command, ...(resume.caveats.length > 0 ? {resume_notes: resume.caveats} : {})}
      : {}
    const line = JSON.stringify({
      type: 'summary',
      ...summary,
      ...passedOver,
      interrupted,
      ...resumed,
      ...(lineage ? {lineage, ...lineageNames} : {}),
      ...(downstream ? {downstream} : {}),
    })
    if (summaryLine) this.rows.end(line)
    return {
      summary,
      ...passedOver,
      items: this.rows.kept,
      ...(downstream ? {downstream} : {}),
      ...(lineage ? {lineage, ...lineageNames} : {}),
      ...(this.rows.omitted ? {omitted: this.rows.omitted} : {}),
      ...(interrupted ? {interrupted} : {}),
      ...resumed,
      ...(this.sink ? {output_file: this.sink.path} : {}),
    }
  }
}

/**
 * The command lines that send a run's events not confirmed: `lineage resend` (what was not
 * delivered), and with `--include-maybe-delivered` the maybe-delivered too; `--lineage-spool`
 * named when the spool is not the default one.
 */
function resendLines(spool: string, maybeDelivered: boolean): string[] {
  const base = spool === lineageSpoolDir(undefined) ? [] : ['--lineage-spool', spool]
  const line = (extra: string[]) => resumeCommand('airlock', 'lineage:resend', [...base, ...extra]).command
  return [line([]), ...(maybeDelivered ? [line(['--include-maybe-delivered'])] : [])]
}
