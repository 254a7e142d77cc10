import type {LockWaits} from '../protocol/lockWaits.js'
import type {NotSelected} from '../selection/itemSource.js'
import type {SelectionBreakdown} from '../selection/selection.js'
import type {RowHolder} from '../store/families/taskInstances.js'
import type {Tally} from './tally.js'

/** What the one running a batch gives it: when to stop, where each finished item goes, who waits for a lock. */
export interface BatchHooks<J, Name extends string> {
  /** Checked before each item is taken: true after SIGINT/SIGTERM. In-flight items finish. */
  shouldStop: () => boolean
  /** Each finished item in its JSON shape, with the tally so far. */
  onItem: (json: J, tally: Tally<Name>) => void
  /** Items waiting for their task instance's row lock, for the "who holds it" line. */
  lockWaits?: LockWaits | undefined
  /**
   * Fires with shouldStop (its reason names the signal): the items in flight start no new
   * attempt, and those waiting for a row lock give it up and roll back (ProtocolOptions.stop).
   */
  stop?: AbortSignal | undefined
}

/**
 * A write batch made ready by a feature (prepareComplete, prepareReplay, prepareDuplicateFix):
 * what it will act on and how to ask about it, and how to run it. Whoever runs it (the command
 * line's base command, the benchmark, a test) only asks, shows progress, handles interrupts and
 * renders; everything the batch does is here.
 */
export interface PreparedBatch<J extends {outcome: string}, Name extends string> {
  /** How many items it acts on: the question's number, the progress bar's total. */
  count: number
  /** A filter selection's runs and states, shown before the question and in a dry run's report. */
  breakdown?: SelectionBreakdown | undefined
  /** What a filter matched in states the writer does not take from (complete's --from-state): not items. */
  notSelected?: NotSelected | undefined
  /**
   * The question: "Mark 12 task instances as success?" is {action: 'mark', noun: 'task instances
   * as success'}. `changing`: how many of the items the write would change, where the selection
   * can tell (the rest it leaves as they are): the question's number, and none asked when 0.
   */
  prompt: {
    action: string
    noun: string
    /** Asked whatever the count (a delete). */ always?: boolean
    changing?: number | undefined
  }
  /** The progress line's label. */
  label: string
  /** Outcomes that are not problems: the human table lists the first items, then only problems. */
  doneOutcomes: readonly string[]
  /** Items named one by one: one that does not exist is exit 4. */
  explicit: boolean
  /** Every transaction rolls back. */
  dryRun: boolean
  /** --plan: nothing is written or locked, each item is decided on reads (dryRun is true too). */
  plan?: boolean | undefined
  /** What the operator should know before it runs (a task instance named twice, a DAG that matched nothing). */
  warnings: readonly string[]
  /** Progress lines before it runs (a checkpoint resumed). */
  notes?: readonly string[] | undefined
  /** Who holds a task instance's row: an item waiting for it longer than a second says so. */
  holderOf?: ((tiId: string) => Promise<RowHolder | undefined>) | undefined
  /**
   * `lost`: the server went away mid-batch; the items not yet taken were never reached.
   * `lineage`: what became of the COMMIT events the batch handed to its lineage outbox.
   */
  run(hooks: BatchHooks<J, Name>): Promise<{
    tally: Tally<Name>
    interrupted: boolean
    lost?: boolean
    lineage?: {delivery: LineageDeliveryReport; required: boolean} | undefined
  }>
}

/** What became of a batch's OpenLineage COMPLETE events (the lineage outbox's report). */
export interface LineageDeliveryReport {
  sent: number
  /** Sent whole, no answer: the backend may hold them; kept apart in the spool. */
  maybe_delivered: number
  failed: number
  not_tried: number
  /** Where the events not confirmed stay. */
  spool: string
  first_failure?: string
  /** Not sent because Airflow's provider would send none (its [openlineage] filters). */
  skipped?: number
}

/** The events the backend did not confirm, each kept in the spool. */
export const notConfirmed = (delivery: LineageDeliveryReport): number =>
  delivery.maybe_delivered + delivery.failed + delivery.not_tried

/** The settings every write batch shares: how many at once and each transaction's limits. */
export interface WriteOptions {
  concurrency: number
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  /** --plan: read-only, on SELECT alone (implies dryRun). */
  plan?: boolean | undefined
}
