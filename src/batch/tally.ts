import {ExitCode, worstItemExit} from '../exitCodes.js'

/** What a tally needs of an item, whichever writer produced it. */
export interface Countable<Name extends string = string> {
  /** `kind`: a failed item's error class (the engine's), when it has one. */
  result: {outcome: Name; commitUnknown?: boolean; kind?: string | undefined}
  events: number
  queued: number
  warnings: string[]
}

/** Each outcome a writer can report, with the exit code it maps to; the writer owns this table. */
export type OutcomeExits<Name extends string> = Readonly<Record<Name, ExitCode>>

/** The summary of a run: selected, one count per outcome, events created, runs queued, dry_run. */
export type Summary<Name extends string> = {selected: number} & Record<Name, number> & {
    events_created: number
    runs_queued: number
    dry_run: boolean
    /** A run stopped early (a signal, a lost server): the selected items never taken. */
    not_reached?: number
    /** A filter selection with a states filter (complete's --from-state): what it matched in other states. */
    not_selected?: number
  }

/**
 * Counts per run: items per outcome, events created, runs queued, and warnings folded by text
 * (one inactive asset warns once with a count, not once per task instance of a backfill).
 * Generic over the writer's outcome names; which of them are problems is the writer's table.
 */
export class Tally<Name extends string = string> {
  selected = 0
  /** Failed items whose COMMIT was sent when the connection was lost: done or not, unknown. */
  commitUnknown = 0
  /** Failed items the server refused because it accepts no writes (SQLSTATE 25006): nothing written. */
  refusedReadOnly = 0
  eventsCreated = 0
  runsQueued = 0
  readonly counts = new Map<Name, number>()
  private readonly warningCounts = new Map<string, number>()

  constructor(private readonly outcomes: OutcomeExits<Name>) {
    for (const name of this.names()) this.counts.set(name, 0)
  }

  add(item: Countable<Name>): void {
    this.selected++
    this.counts.set(item.result.outcome, (this.counts.get(item.result.outcome) ?? 0) + 1)
    if (item.result.commitUnknown) this.commitUnknown++
    if (item.result.outcome === 'failed' && item.result.kind === 'read_only') this.refusedReadOnly++
    this.eventsCreated += item.events
    this.runsQueued += item.queued
    for (const warning of item.warnings) this.warningCounts.set(warning, (this.warningCounts.get(warning) ?? 0) + 1)
  }

  /** The worst exit code of the run. `not_found` is exit 4 only for task instances named explicitly. */
  exit(options: {explicit: boolean} = {explicit: true}): ExitCode {
    return worstItemExit(
      [...this.counts]
        .filter(([outcome, n]) => n > 0 && (options.explicit || outcome !== 'not_found'))
        .map(([outcome]) => this.outcomes[outcome]),
    )
  }

  warnings(): string[] {
    return [...this.warningCounts].map(([text, n]) => (n > 1 ? `${text} (${n} task instances)` : text))
  }

  summary(dryRun: boolean): Summary<Name> {
    const counts = Object.fromEntries(this.names().map((name) => [name, this.counts.get(name) ?? 0])) as Record<
      Name,
      number
    >
    return {
      selected: this.selected,
      ...counts,
      events_created: this.eventsCreated,
      runs_queued: this.runsQueued,
      dry_run: dryRun,
    }
  }

  private names(): Name[] {
    return Object.keys(this.outcomes) as Name[]
  }
}
