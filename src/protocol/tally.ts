import {ExitCode, worstItemExit} from '../exitCodes.js'

/** What a tally needs of an item, whichever writer produced it. */
export interface Countable {
  result: {outcome: string}
  events: number
  queued: number
  warnings: string[]
}

/** Outcomes that are not "done" and the exit code each maps to (DESIGN §3). */
const exitByOutcome: Readonly<Record<string, ExitCode>> = {
  conflict: ExitCode.conflict,
  changed: ExitCode.conflict,
  not_found: ExitCode.notFound,
  failed: ExitCode.partialFailure,
  unknown_asset: ExitCode.partialFailure,
}

/**
 * Counts per run: items per outcome, events created, runs queued, and warnings folded by text
 * (one inactive asset warns once with a count, not once per task instance of a backfill).
 */
export class Tally<O extends {outcome: string} = {outcome: string}> {
  selected = 0
  eventsCreated = 0
  runsQueued = 0
  readonly counts = new Map<string, number>()
  private readonly warningCounts = new Map<string, number>()

  constructor(private readonly outcomeNames: readonly string[]) {
    for (const name of outcomeNames) this.counts.set(name, 0)
  }

  add(item: Countable): void {
    this.selected++
    this.counts.set(item.result.outcome, (this.counts.get(item.result.outcome) ?? 0) + 1)
    this.eventsCreated += item.events
    this.runsQueued += item.queued
    for (const warning of item.warnings) this.warningCounts.set(warning, (this.warningCounts.get(warning) ?? 0) + 1)
  }

  /** The exit code of DESIGN §3. `not_found` is exit 4 only for task instances named explicitly. */
  exit(options: {explicit: boolean} = {explicit: true}): ExitCode {
    return worstItemExit(
      [...this.counts]
        .filter(([outcome, n]) => n > 0 && (options.explicit || outcome !== 'not_found'))
        .map(([outcome]) => exitByOutcome[outcome] ?? ExitCode.ok),
    )
  }

  warnings(): string[] {
    return [...this.warningCounts].map(([text, n]) => (n > 1 ? `${text} (${n} task instances)` : text))
  }

  /** The summary object of DESIGN §3: selected, one key per outcome, events_created, runs_queued, dry_run. */
  summary(dryRun: boolean): Record<string, number | boolean> {
    const summary: Record<string, number | boolean> = {selected: this.selected}
    for (const name of this.outcomeNames) summary[name] = this.counts.get(name) ?? 0
    summary.events_created = this.eventsCreated
    summary.runs_queued = this.runsQueued
    summary.dry_run = dryRun
    return summary
  }
}
