import type {TaskInstanceContext, TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {TryEvidence, TryEvidenceKind} from '../../airflow/tryEvidence.js'
import type {Executor} from '../../engine/engine.js'

/**
 * Which task instances a command names (postgres/selection.ts): keyset pages, counts and the
 * breakdown, the names nothing carries, and the outlets a try lacks events for.
 */
export interface SelectionStore {
  /** One keyset page of the selection's task instances (id > after, ORDER BY id), with their run and state. */
  selectTaskInstancePage(
    ex: Executor,
    filter: TaskInstanceFilter,
    after: string | undefined,
    limit: number,
  ): Promise<SelectedTaskInstance[]>
  /** One keyset page of the runs of a run_after range, in (run_after, id) order. */
  selectRunPage(
    ex: Executor,
    filter: TaskInstanceFilter,
    after: {runAfter: Date; id: number} | undefined,
    limit: number,
  ): Promise<Array<{id: number; dagId: string; runId: string; runAfter: Date}>>
  /** One keyset page of the task instances of those runs, in (their order, id) order; `n` is the run's place in the page (1-based). */
  selectTaskInstanceIdsOfRuns(
    ex: Executor,
    filter: TaskInstanceFilter,
    runs: ReadonlyArray<{dagId: string; runId: string}>,
    after: {n: number; id: string} | undefined,
    limit: number,
  ): Promise<Array<{n: number; id: string; key: TaskInstanceKey}>>
  countTaskInstances(ex: Executor, filter: TaskInstanceFilter): Promise<number>
  /** The selection's task instances counted by state (NULL: no state yet), in state order. */
  countTaskInstancesByState(
    ex: Executor,
    filter: TaskInstanceFilter,
  ): Promise<Array<{state: string | null; count: number}>>
  /** The selection grouped by DAG, run and state (at most `maxGroups` groups, in key order). */
  summarizeTaskInstances(
    ex: Executor,
    filter: TaskInstanceFilter & {limit?: number | undefined},
    maxGroups: number,
  ): Promise<SelectionGroup[]>
  /** Whether any event names this DAG as its source (a DAG deleted since keeps its events). */
  hasEventsFromDag(ex: Executor, dagId: string): Promise<boolean>
  /** Every dag_id of the dag table (for "did you mean"). */
  readDagIds(ex: Executor): Promise<string[]>
  /** The named run ids and task ids no task instance or run of the DAG carries. */
  readUnknownSelectors(
    ex: Executor,
    dagId: string | undefined,
    named: {runIds: readonly string[]; taskIds: readonly string[]},
  ): Promise<UnknownSelectors>
  /**
   * Which of the given assets have no event of this task instance's try (and of those, which may
   * have one: doubtful), and the strongest evidence of how the try came to be success (lost
   * events, or marked success without them), which decides the others.
   * `ignore`: the events and log row the calling transaction wrote itself (a recheck).
   */
  readMissingOutlets(
    ex: Executor,
    ti: TaskInstanceContext,
    assetIds: readonly number[],
    ignore?: {eventIds: readonly number[]; logId: number | null},
  ): Promise<MissingOutlets>
}

export interface TaskInstanceFilter {
  dagId?: string | undefined
  runIds: readonly string[]
  taskIds: readonly string[]
  mapIndex?: number | undefined
  since?: Date | undefined
  until?: Date | undefined
  /** What since/until compare: the run's run_after (complete) or the TI's end_date (replay-events). */
  timeColumn?: 'run_after' | 'end_date' | undefined
  /** Only task instances in these states (null: no state yet). */
  states?: ReadonlyArray<string | null> | undefined
  /** Only task instances with an active declared outlet lacking an event since their start_date. */
  missingEventsOnly?: boolean | undefined
  /** With missingEventsOnly: only tries whose strongest evidence is one of these kinds (see TryEvidence). */
  evidence?: readonly TryEvidenceKind[] | undefined
  /** Shard K of N: a stable hash partition of the ids. */
  shard?: {index: number; count: number} | undefined
}

/** Whether a selection is a range of runs by run_after: it is then paged run by run (selectRunPage), in (run_after, run, id) order. */
export const rangeOfRuns = (filter: TaskInstanceFilter): boolean =>
  filter.timeColumn !== 'end_date' && Boolean(filter.since || filter.until)

/** A task instance of a selection page: enough to name it and list it in the selection's breakdown. */
export interface SelectedTaskInstance {
  id: string
  dagId: string
  runId: string
  taskId: string
  mapIndex: number
  state: string | null
  /** A missing-events page: the strongest evidence of how its try came to be success. */
  evidence?: TryEvidenceKind
  /**
   * A missing-events page: the active declared outlets with no event of its try, each on its own
   * evidence: an absent one on the try's (`evidence`), a doubtful one (an event may be this try's:
   * unattributed_event) on none.
   */
  missingOutlets?: Array<{assetId: number; asset: string; doubtful: boolean}>
}

/** Run and task ids a selection names that nothing carries, with the ids a typo may have meant. */
export interface UnknownSelectors {
  runIds: string[]
  taskIds: string[]
  runCandidates: string[]
  taskCandidates: string[]
}

/** The outlets of a try that have no event, and what the database says about why. */
export interface MissingOutlets {
  assetIds: number[]
  /** Of assetIds, those with an event that may be this try's (unattributed_event, whatever `evidence` says). */
  doubtful: number[]
  /** The try's evidence: it decides the outlets of assetIds that are not doubtful. */
  evidence: TryEvidence
}

/** How many selected task instances one run holds in one state (NULL: no state yet). */
export interface SelectionGroup {
  dagId: string
  runId: string
  state: string | null
  count: number
}
