import {performance} from 'node:perf_hooks'

import {type OutletAsset, type TaskInstanceContext, type TaskInstanceRef} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import type {DownstreamFacts} from '../store/airflowStore.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'
import {downstreamOf} from './downstream.js'
import {idNotFoundDetail, type ItemResult} from './outcomes.js'

/**
 * What a writer would do to one task instance, decided on reads alone: the outcome it would
 * reach before the lock and the outlets it would register. A writer plans with the same reads
 * its registration starts with, so the two cannot drift apart.
 */
export interface PlannedWrite<O extends {outcome: string}> {
  result: O
  /** The outlets that would get an event (each an active asset). */
  outlets: ReadonlyArray<OutletAsset & {assetId: number}>
  warnings: string[]
}

export interface Planner<O extends {outcome: string}, Input> {
  readsOutlets: boolean
  decideBeforeRegistering(ti: TaskInstanceContext): O | undefined
  plan(ex: Executor, ti: TaskInstanceContext, input: Input): Promise<PlannedWrite<O>>
}

/** Said with every plan: what only the write itself decides. */
export const planCaveat =
  'a plan reads, it writes nothing: the state is read without the row lock, and what the write decides on its own rows (consumers the release cannot queue, --strict-outlets, the recheck under the lock) is decided when it runs'

/**
 * The read-only plan of one item (`--plan`): the protocol's step 1 and the writer's decision on
 * reads, then the downstream preview as if its events were queued (each consumer's condition
 * against its queue rows and this item's outlets). Runs on SELECT alone: no transaction writes,
 * no row is locked. Reported as the dry-run outcome it predicts ("would_complete").
 */
export async function planProtocol<O extends {outcome: string}, Input>(
  airflow: Pick<AirflowDatabase, 'db' | 'store'>,
  ref: TaskInstanceRef,
  input: Input,
  planner: Planner<O, Input>,
  options: {downstream: boolean},
): Promise<ItemResult<O>> {
  const started = performance.now()
  const {store} = airflow
  const ex = airflow.db.executor
  let ti = await store.readTaskInstance(ex, ref, {withOutlets: planner.readsOutlets})
  if (!ti && 'tiId' in ref) {
    const key = await store.readArchivedTaskInstanceKey(ex, ref.tiId)
    if (key) ti = await store.readTaskInstance(ex, {key}, {withOutlets: planner.readsOutlets})
  }
  const item = (result: ItemResult<O>['result'], events = 0, queued = 0, warnings: string[] = []): ItemResult<O> => ({
    ref,
    ti: ti
      ? {id: ti.id, dagId: ti.dagId, runId: ti.runId, taskId: ti.taskId, mapIndex: ti.mapIndex, state: ti.state}
      : null,
    result,
    events,
    queued,
    timings: {registerMs: 0, lockWaitMs: 0, lockHoldMs: 0, stampToCommitMs: null, totalMs: performance.now() - started},
    attempts: 1,
    dryRun: true,
    warnings,
  })
  if (!ti) return item('tiId' in ref ? {outcome: 'not_found', detail: idNotFoundDetail} : {outcome: 'not_found'})
  const early = planner.decideBeforeRegistering(ti)
  if (early) return item(early)
  const planned = await planner.plan(ex, ti, input)
  const facts =
    planned.outlets.length === 0
      ? []
      : await store.readDownstream(
          ex,
          planned.outlets.map((o) => o.assetId),
          [],
        )
  const downstream = options.downstream ? downstreamOf(facts.map((dag) => withPlanned(dag, planned.outlets))) : []
  return {
    // No queue row count: which consumers a release queues (paused, stale, teams, partitioned) is
    // decided by the queue statement itself; the consumers are in the downstream preview.
    ...item(planned.result, planned.outlets.length, 0, planned.warnings),
    report: options.downstream ? {downstream} : {},
  }
}

/** A consumer's queue as it would be once this item's events are queued. */
function withPlanned(dag: DownstreamFacts, outlets: ReadonlyArray<OutletAsset>): DownstreamFacts {
  const queued = [...dag.queued.assets]
  for (const outlet of outlets) {
    if (!queued.some((q) => q.name === outlet.name && q.uri === outlet.uri))
      queued.push({name: outlet.name, uri: outlet.uri, active: outlet.active})
  }
  return {...dag, queued: {...dag.queued, assets: queued}}
}

/** A writer as a planner; one without a plan is a bug of the command that offered --plan. */
export function plannerOf<O extends {outcome: string}, Input>(writer: {
  readsOutlets: boolean
  decideBeforeRegistering: (ti: TaskInstanceContext) => O | undefined
  plan?: (ex: Executor, ti: TaskInstanceContext, input: Input) => Promise<PlannedWrite<O>>
}): Planner<O, Input> {
  const {plan, decideBeforeRegistering, readsOutlets} = writer
  if (!plan) throw new Error('this writer offers no plan')
  return {readsOutlets, decideBeforeRegistering, plan}
}
