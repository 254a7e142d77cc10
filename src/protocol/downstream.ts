import {evaluateCondition} from '../airflow/assetCondition.js'
import type {DownstreamFacts} from '../store/airflowStore.js'

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
  /** The assets (names; refs and aliases as written) its condition still misses. */
  waiting_for: string[]
  blocked_by?: DownstreamBlock
  /** The assets of its condition the queue satisfies, this completion's included. */
  satisfied: string[]
  /** How many assets (refs, aliases) its condition names. */
  assets: number
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
      return {dag_id: dag.dagId, ready: false, waiting_for: [], blocked_by: 'partitioned', satisfied: [], assets: 0}
    }
    const result = evaluateCondition(dag.condition, dag.queued)
    const always: DownstreamBlock | undefined = dag.paused
      ? 'paused'
      : dag.stale
        ? 'stale'
        : dag.importErrors
          ? 'import_errors'
          : undefined
    const atLimit = dag.maxActiveRuns !== null && dag.activeRuns >= dag.maxActiveRuns
    const blocked = always ?? (result.met && atLimit ? 'max_active_runs' : undefined)
    return {
      dag_id: dag.dagId,
      ready: result.met && blocked === undefined,
      waiting_for: result.waitingFor,
      ...(blocked ? {blocked_by: blocked} : {}),
      satisfied: result.satisfied,
      assets: result.leaves.length,
    }
  })
}

/** Consumers over a whole batch: what the operator reads after the outcome table. */
export interface DownstreamSummary extends Downstream {
  /** Items whose events reach it. */
  items: number
}

/**
 * Folds each item's preview into one line per consumer DAG: ready when an item found it ready
 * (it runs once that item committed) or when the items together satisfy every asset it names and
 * nothing blocks it (a dry run's items each see only their own rows); otherwise what no item
 * satisfied is what it waits for. Memory is one entry per consumer, whatever the item count.
 */
export class DownstreamFold {
  private readonly byDag = new Map<string, DownstreamSummary>()

  add(previews: readonly Downstream[]): void {
    for (const preview of previews) {
      const seen = this.byDag.get(preview.dag_id)
      if (!seen) {
        this.byDag.set(preview.dag_id, {...preview, satisfied: [...preview.satisfied], items: 1})
        continue
      }
      seen.items++
      seen.satisfied = [...new Set([...seen.satisfied, ...preview.satisfied])].sort()
      seen.assets = Math.max(seen.assets, preview.assets)
      seen.waiting_for = [...new Set([...seen.waiting_for, ...preview.waiting_for])]
        .filter((asset) => !seen.satisfied.includes(asset))
        .sort()
      seen.ready ||= preview.ready
      const blocked = preview.blocked_by ?? seen.blocked_by
      if (blocked) seen.blocked_by = blocked
    }
  }

  summary(): DownstreamSummary[] {
    return [...this.byDag.values()]
      .map((dag) => {
        const ready = dag.ready || (dag.waiting_for.length === 0 && dag.blocked_by === undefined && dag.assets > 0)
        const {blocked_by, ...rest} = dag
        return {
          ...rest,
          ready,
          waiting_for: ready ? [] : dag.waiting_for,
          ...(!ready && blocked_by ? {blocked_by} : {}),
        }
      })
      .sort((a, b) => a.dag_id.localeCompare(b.dag_id))
  }
}
