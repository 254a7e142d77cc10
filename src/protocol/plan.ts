import {performance} from 'node:perf_hooks'

import type {OutletAsset, TaskInstanceContext, TaskInstanceRef} from '../airflow/taskInstance.js'
import type {Executor} from '../engine/engine.js'
import type {ConsumerDecision, RegistrationStore} from '../store/families/registration.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {queueEventConsumers} from './eventRegistration.js'
import {idNotFoundDetail, type ItemResult} from './outcomes.js'
import type {StoreCapabilities} from '../store/types.js'
import type {TaskInstanceStore} from '../store/families/taskInstances.js'
import type {AuditLogStore} from '../store/families/audit.js'

/** The store families a plan uses. */
export type PlanStore = StoreCapabilities & TaskInstanceStore & RegistrationStore & AuditLogStore

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
  /** Events the write would emit through aliases (each asset once, with every alias it goes through). */
  aliasEvents?: ReadonlyArray<{assetId: number; aliasIds: readonly number[]}>
  /** The writer's refusal once it knows how its consumers are queued (decideAfterRegistering's, on the plan). */
  refuseAfterQueue?: (consumers: readonly ConsumerDecision[]) => O | undefined
}

export interface Planner<O extends {outcome: string}, Input> {
  readsOutlets: boolean
  decideBeforeRegistering(ti: TaskInstanceContext): O | undefined
  plan(ex: Executor, ti: TaskInstanceContext, input: Input): Promise<PlannedWrite<O>>
}

/** Said with every plan: what only the write itself decides. */
export const planCaveat =
  'a plan reads, it writes nothing: the state is read without the row lock (the write reads it again and rechecks it under the lock), and the outlet_events of an input are resolved when written'

/**
 * The read-only plan of one item (`--plan`): the protocol's step 1 and the writer's decision on
 * reads, then which consumers its events would queue, decided by the write's own queue statement
 * run on SELECT alone (the release's paused, partition and team rules, as the write applies
 * them), and the downstream preview over the queue that would leave. No transaction writes, no
 * row is locked. Reported as the dry-run outcome it predicts ("would_complete").
 */
export async function planProtocol<O extends {outcome: string}, Input>(
  airflow: Pick<AirflowDatabase<PlanStore>, 'db' | 'store'>,
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
  // The write's own decision of which consumers it queues (queueEventConsumers, on SELECT alone):
  // the events as they would be written, each with a stand-in id and the partition key it would carry.
  const partitionKey = store.capabilities.eventPartitionKey ? ti.partitionKey : null
  const planEvents = [
    ...planned.outlets.map((o) => ({assetId: o.assetId, aliasIds: [] as readonly number[]})),
    ...(planned.aliasEvents ?? []),
  ].map((e, index) => ({...e, eventId: -(index + 1)}))
  const queued = await queueEventConsumers(
    store,
    ex,
    ti,
    {
      events: planEvents.map((e) => ({eventId: e.eventId, assetId: e.assetId, partitionKey})),
      aliasesOfEvent: new Map(planEvents.filter((e) => e.aliasIds.length > 0).map((e) => [e.eventId, [...e.aliasIds]])),
      warnings: [],
    },
    {downstream: options.downstream, plan: true},
  )
  const refused = planned.refuseAfterQueue?.(queued.consumers)
  const warnings = [...planned.warnings, ...queued.warnings]
  if (refused) return item(refused, planEvents.length, 0, warnings)
  return {
    ...item(planned.result, planEvents.length, queued.consumers.filter((c) => c.kind === 'queued').length, warnings),
    report: options.downstream ? {downstream: queued.downstream} : {},
  }
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
