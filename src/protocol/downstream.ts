import {parseCondition, previewMarks, previewQueue, remark, type ConditionTree} from '../airflow/assetCondition.js'
import type {DownstreamFacts} from '../store/families/downstream.js'

/**
 * Why the scheduler will not create a run for a consumer DAG: its exclusions
 * (`dags_needing_dagruns` and `_create_dag_runs_asset_triggered`: paused, stale, import errors,
 * `max_active_runs` reached by queued and running runs), or a partitioned timetable, whose runs
 * come from its partition mapper (asset_partition_dag_run), which airlock does not evaluate.
 */
export type DownstreamBlock = 'paused' | 'stale' | 'import_errors' | 'max_active_runs' | 'partitioned'

/** One consumer DAG a completion's events reach, as the scheduler's next step will see it. */
export interface Downstream {
  dag_id: string
  /** `dags_needing_dagruns` picks it up once this commits: the scheduler creates its run. */
  ready: boolean
  /**
   * The assets (names; refs and aliases as written) its condition still misses, the fewest that
   * would make it true: the first `listedLeaves` of them, in the condition's order.
   */
  waiting_for: string[]
  /** How many it misses in all. */
  waiting_for_count: number
  blocked_by?: DownstreamBlock
  /** Why, where the block needs saying (the scheduler's cached cap flag). */
  reason?: string
  /** The assets of its condition the queue satisfies, this completion's included: the first `listedLeaves`. */
  satisfied: string[]
  /** How many it satisfies in all. */
  satisfied_count: number
  /** How many assets (refs, aliases) its condition names. */
  assets: number
}

/**
 * How many leaves a preview names in `waiting_for` and in `satisfied`; the counts say the rest. A
 * consumer scheduled on 24,600 assets would otherwise list them on every item (megabytes per item
 * in NDJSON), and the lists cost more than the decision.
 */
export const listedLeaves = 20

/**
 * What a preview was decided from, kept beside it for the batch's fold and never printed: the
 * condition's tree, the exclusion that blocks whatever the condition, and whether the DAG is at
 * its active-run cap. A non-enumerable property, so JSON and spreads leave it out.
 */
interface DownstreamBasis {
  tree: ConditionTree | undefined
  /** Which of the tree's leaves, by position, the queue satisfies. */
  marks: Uint8Array
  always: DownstreamBlock | undefined
  reason?: string | undefined
  atLimit: boolean
}

/**
 * What the 3.2+ flag means, from the scheduler's code (`SchedulerJobRunner._set_exceeds_max_active_runs`,
 * airflow-core/src/airflow/jobs/scheduler_job_runner.py; `DagModelOperation.update_dags` in
 * dag_processing/collection.py; apache/airflow #60006, #73032).
 */
export const maxRunsFlagReason =
  "the scheduler's cached flag dag.exceeds_max_non_backfill says max_active_runs is reached, and the scheduler passes the DAG over while it is set; it is recomputed when a run is created, when a scheduled, manual or asset-triggered run finishes, and when the DAG processor parses the file (other run types finishing leave it set: apache/airflow #73032)"

const basisKey = 'basis'

function withBasis(preview: Downstream, basis: DownstreamBasis): Downstream {
  return Object.defineProperty(preview, basisKey, {value: basis, enumerable: false, configurable: true})
}

/**
 * The basis, taken off the preview: once folded it is the fold's, and an item kept for --json
 * would otherwise hold a byte per leaf of every consumer (74 KB an item for three consumers of
 * 24,600 assets).
 */
function takeBasis(preview: Downstream): DownstreamBasis | undefined {
  const basis = (preview as unknown as Record<string, DownstreamBasis | undefined>)[basisKey]
  if (basis) Reflect.deleteProperty(preview, basisKey)
  return basis
}

/** What keeps a DAG whose condition is evaluated from getting its run. */
export type ExclusionBlock = Exclude<DownstreamBlock, 'partitioned'>

/** What `dags_needing_dagruns` reads about a DAG besides its queue. */
export type ExclusionFacts = Pick<
  DownstreamFacts,
  'paused' | 'stale' | 'importErrors' | 'maxRunsFlag' | 'maxActiveRuns' | 'activeRuns'
>

/**
 * The exclusions of `dags_needing_dagruns` (airflow-core/src/airflow/models/dag.py), one rule for
 * the preview and for `explain`: `always`, what its WHERE clause leaves out whatever the condition
 * (paused, stale, import errors; from 3.2 the cached `exceeds_max_non_backfill` flag); `atLimit`,
 * its `exclusion_list` (QUEUED and RUNNING runs of every type at `max_active_runs`, a NULL cap no
 * limit), which matters only once the condition holds; `blocked`, the one that applies now.
 */
export function exclusionsOf(
  dag: ExclusionFacts,
  met: boolean,
): {always: ExclusionBlock | undefined; atLimit: boolean; blocked: ExclusionBlock | undefined} {
  const always: ExclusionBlock | undefined = dag.paused
    ? 'paused'
    : dag.stale
      ? 'stale'
      : dag.importErrors
        ? 'import_errors'
        : dag.maxRunsFlag
          ? 'max_active_runs'
          : undefined
  const atLimit = dag.maxActiveRuns !== null && dag.activeRuns >= dag.maxActiveRuns
  return {always, atLimit, blocked: always ?? (met && atLimit ? 'max_active_runs' : undefined)}
}

/**
 * The scheduler's decision per consumer: its own condition against its queue rows, then the
 * exclusions. A paused, stale or import-error DAG is blocked whatever its condition (it gets no
 * run while so); `max_active_runs` blocks only a DAG whose condition holds (the next loop after a
 * run ends creates it). `null` max_active_runs (never written by a DAG processor) is no limit.
 */
export function downstreamOf(facts: readonly DownstreamFacts[]): Downstream[] {
  return facts.map((dag) => {
    if (dag.partitioned) {
      return {
        dag_id: dag.dagId,
        ready: false,
        waiting_for: [],
        waiting_for_count: 0,
        blocked_by: 'partitioned',
        satisfied: [],
        satisfied_count: 0,
        assets: 0,
      }
    }
    const tree = parseCondition(dag.condition)
    const result = previewQueue(tree, dag.queued, listedLeaves)
    const {always, atLimit, blocked} = exclusionsOf(dag, result.met)
    const reason = always === 'max_active_runs' ? maxRunsFlagReason : undefined
    return withBasis(
      {
        dag_id: dag.dagId,
        ready: result.met && blocked === undefined,
        waiting_for: result.waitingFor,
        waiting_for_count: result.waitingForCount,
        ...(blocked ? {blocked_by: blocked} : {}),
        ...(reason ? {reason} : {}),
        satisfied: result.satisfied,
        satisfied_count: result.satisfiedCount,
        assets: result.leaves,
      },
      {tree, marks: result.marks, always, reason, atLimit},
    )
  })
}

/** Consumers over a whole batch: what the operator reads after the outcome table. */
export interface DownstreamSummary extends Downstream {
  /** Items whose events reach it. */
  items: number
}

interface Folded {
  summary: DownstreamSummary
  basis: DownstreamBasis | undefined
}

/**
 * Folds each item's preview into one line per consumer DAG. Ready when an item found it ready (it
 * runs once that item committed), or when its condition, evaluated over the leaves the items
 * satisfy together (a dry run's items each see only their own rows), holds and nothing blocks
 * it; otherwise it waits for the fewest leaves that would make that combined queue true. Memory is
 * one entry per consumer (a byte per leaf of its condition), whatever the item count.
 */
export class DownstreamFold {
  private readonly byDag = new Map<string, Folded>()

  add(previews: readonly Downstream[]): void {
    for (const preview of previews) {
      const basis = takeBasis(preview)
      const seen = this.byDag.get(preview.dag_id)
      if (!seen) {
        this.byDag.set(preview.dag_id, {
          summary: {...preview, items: 1},
          basis,
        })
        continue
      }
      const dag = seen.summary
      dag.items++
      dag.assets = Math.max(dag.assets, preview.assets)
      dag.ready ||= preview.ready
      const blocked = preview.blocked_by ?? dag.blocked_by
      if (blocked) dag.blocked_by = blocked
      if (!basis) continue
      // The latest item's condition (a DAG re-parsed mid-batch: what the earlier items satisfied
      // carried over by label); a block or a cap any item saw.
      // The fold's own copy: remark returns it unchanged for the same tree.
      const union = seen.basis
        ? remark(seen.basis.tree, seen.basis.marks, basis.tree)
        : new Uint8Array(basis.marks.length)
      for (let i = 0; i < union.length; i++) union[i]! |= basis.marks[i]!
      seen.basis = {
        tree: basis.tree,
        marks: union,
        always: seen.basis?.always ?? basis.always,
        reason: seen.basis?.always ? seen.basis.reason : basis.reason,
        atLimit: (seen.basis?.atLimit ?? false) || basis.atLimit,
      }
    }
  }

  summary(): DownstreamSummary[] {
    return [...this.byDag.values()]
      .map(({summary: dag, basis}) => {
        if (!basis || dag.blocked_by === 'partitioned') {
          // Not evaluated (a partitioned timetable): as the items said.
          const {blocked_by, ...rest} = dag
          return {...rest, ...(blocked_by ? {blocked_by} : {})}
        }
        const result = previewMarks(basis.tree, basis.marks, listedLeaves)
        const blocked = basis.always ?? (result.met && basis.atLimit ? 'max_active_runs' : undefined)
        const ready = dag.ready || (result.met && blocked === undefined)
        return {
          dag_id: dag.dag_id,
          ready,
          waiting_for: ready ? [] : result.waitingFor,
          waiting_for_count: ready ? 0 : result.waitingForCount,
          ...(!ready && blocked ? {blocked_by: blocked} : {}),
          ...(!ready && blocked && blocked === basis.always && basis.reason ? {reason: basis.reason} : {}),
          satisfied: result.satisfied,
          satisfied_count: result.satisfiedCount,
          assets: dag.assets,
          items: dag.items,
        }
      })
      .sort((a, b) => a.dag_id.localeCompare(b.dag_id))
  }
}
