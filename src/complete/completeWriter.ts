import {activeOutlets, describeOutlet, type StoredState, type TaskInstanceContext} from '../airflow/taskInstance.js'
import {ExitCode} from '../exitCodes.js'
import {auditIdentity, beforeImageStandIn, clearImageStandIn, extraAroundEventIds} from '../protocol/auditIdentity.js'
import {
  consumerDags,
  emitOutletEvents,
  emptyRegistration,
  queueEventConsumers,
  type Registration,
} from '../protocol/eventRegistration.js'
import type {PlannedWrite} from '../protocol/plan.js'
import {RetryFromStart, type Writer} from '../protocol/protocol.js'
import type {OutletEventInput} from '../selection/workItem.js'
import type {Executor} from '../engine/engine.js'
import type {AuditRow, ConsumerDecision, RegistrationStore} from '../store/families/registration.js'
import {assetKey, type StoreCapabilities} from '../store/types.js'
import {applyClear, planClear, recheckClear, type ClearPlan, type ClearReport} from './continueRun.js'
import type {TaskInstanceStore} from '../store/families/taskInstances.js'
import type {AuditLogStore} from '../store/families/audit.js'
import type {EventStore} from '../store/families/events.js'
import type {ClearStore} from '../store/families/clear.js'

/** The store families complete uses. */
export type CompleteStore = StoreCapabilities &
  TaskInstanceStore &
  RegistrationStore &
  AuditLogStore &
  EventStore &
  ClearStore

/** What `complete` reports per task instance (besides the protocol's not_found and failed). */
export type CompleteOutcome =
  | {outcome: 'completed'}
  | {outcome: 'already_success'}
  | {outcome: 'conflict'; previousState: StoredState}
  /** --strict-outlets: a declared outlet asset is not active, as Airflow would fail the task instance. */
  | {outcome: 'inactive_outlet'; detail: string}
  /** A consumer is partition-aware: Airflow queues it through its partition mapper, which airlock cannot run. */
  | {outcome: 'unsupported_consumer'; detail: string}
  /** --end-date is before the task instance's start_date (a negative duration); --force-end-date records it anyway. */
  | {outcome: 'invalid_end_date'; detail: string}
  /** --continue-run: a task instance to clear, or the run, changed between the read and the locks; nothing written. */
  | {outcome: 'downstream_changed'; detail: string}
  /** --continue-run: a clear airlock does not reproduce (human-in-the-loop records, cross-DAG markers, …); nothing written. */
  | {outcome: 'unsupported_downstream'; detail: string}
  /** A mapped task downstream expands over this task's return value, which only a worker writes (task_map); nothing written. */
  | {outcome: 'mapped_downstream'; detail: string}

/** Every outcome of a complete item and the exit code it maps to (the worst of a run wins). */
export const completeOutcomes = {
  completed: ExitCode.ok,
  already_success: ExitCode.ok,
  conflict: ExitCode.conflict,
  inactive_outlet: ExitCode.conflict,
  unsupported_consumer: ExitCode.conflict,
  invalid_end_date: ExitCode.conflict,
  // Transient: the scheduler kept changing what to clear; running again is safe.
  downstream_changed: ExitCode.partialFailure,
  unsupported_downstream: ExitCode.conflict,
  mapped_downstream: ExitCode.conflict,
  not_found: ExitCode.notFound,
  failed: ExitCode.partialFailure,
} as const

export interface CompleteSettings {
  /** States a TI may be in to be completed (default: running). Never includes success. */
  fromStates: readonly StoredState[]
  emitEvents: boolean
  /**
   * Refuse (roll back, outcome inactive_outlet) a task instance with an inactive outlet asset,
   * where Airflow's `register_asset_changes_in_db` raises and the task fails; by default the
   * event is skipped with a warning.
   */
  strictOutlets?: boolean
  /**
   * Complete even when a consumer has a partitioned timetable (it is then not queued, with a
   * warning); by default such a task instance is rolled back (unsupported_consumer).
   */
  allowUnqueuedConsumers?: boolean
  /** Complete even when a mapped task downstream cannot expand without this task's return value (it will end upstream_failed). */
  allowMappedDownstream?: boolean
  /** The downstream preview of each item (--no-downstream: off). Default on. */
  downstream?: boolean
  /** JSON text of the extra for events without one of their own. */
  defaultExtra: string
  endDate: Date | null
  /** Record --end-date even before the task instance's start_date (duration then 0). */
  forceEndDate?: boolean | undefined
  airlockVersion: string
  /** Who marks it success, for the audit row's `owner` (--actor; default: the OS user). */
  actor?: string | undefined
  /** --continue-run: clear the failed downstream and re-queue the run, as Airflow's mark-success does; the release whose clear to follow. */
  continueRun?: {behaviourVersion: string} | undefined
}

/**
 * A worker's success pushes the task's return value as an XCom and, for a task whose output a
 * mapped task downstream expands over, its length as a `task_map` row, in the XCom route of the
 * execution API (`set_xcom`, api_fastapi/execution_api/routes/xcoms.py: `TaskMap(length=…, keys=None)`
 * when the worker sends `mapped_length`, which task-sdk's `_push_xcom_if_needed` does when
 * `iter_mapped_dependants()` finds one). airlock has no return value to write: without the row, the
 * scheduler cannot expand the mapped task ("Cannot expand … missing upstream values") and sets it
 * UPSTREAM_FAILED. So such a task instance is refused unless the operator accepts that.
 */
function mappedDownstream(dependants: readonly string[]): CompleteOutcome {
  return {
    outcome: 'mapped_downstream',
    detail: `mapped task${dependants.length === 1 ? '' : 's'} ${dependants.join(', ')} expand${dependants.length === 1 ? 's' : ''} over this task's return value, which only a worker writes (task_map and its XCom); completed by airlock, ${dependants.length === 1 ? 'it' : 'they'} would end upstream_failed. --allow-mapped-downstream completes it anyway`,
  }
}

type CompleteRegistration = Registration & {
  logId: number
  /** The transaction id of the task instance's row version its before-image was read from. */
  imageXmin: string | null
  clear?: ClearPlan
  cleared?: ClearReport
  stateCleared: number
}

/**
 * `airlock complete` as a protocol writer: what Airflow's success path writes, in the same terms.
 *
 * The audit `log` row is written with the registration, before the lock: it commits or vanishes
 * with the state change all the same, and the row lock is then held for the UPDATE alone (the
 * benchmark shows the hold at the raw FOR UPDATE + UPDATE + COMMIT floor). The try number the row
 * names is checked under the lock by the protocol (a changed try means a stale read and a retry
 * from step 1).
 */
export function completeWriter(
  store: CompleteStore,
  settings: CompleteSettings,
): Writer<CompleteOutcome, {outletEvents: OutletEventInput[]}, CompleteRegistration, {logId: number}> {
  const expected = new Set<StoredState>(settings.fromStates)
  const decide = (state: StoredState): CompleteOutcome | 'commit' => {
    if (expected.has(state)) return 'commit'
    if (state === 'success') return {outcome: 'already_success'}
    return {outcome: 'conflict', previousState: state}
  }

  const audit = completeAudit(settings)

  return {
    verb: 'complete',
    // The serialized DAG also says which mapped tasks wait for this one's return value.
    readsOutlets: true,
    // Its read, events, queue (with the preview), lock and update settle on their generic plans
    // after five executions per connection (pg_prepared_statements' generic_plans and
    // custom_plans, at 10 and 600 outlets); the five custom plans before that cost a bulk run
    // about a tenth of the server's CPU per completion (docs/bench.md, bulk throughput).
    genericPlans: true,
    committed: {outcome: 'completed'},
    decideBeforeRegistering: (ti) => refuseBeforeRegistering(settings, ti, decide),
    async register(tx, ti, input) {
      const clear = settings.continueRun
        ? await planClear(store, tx, ti, settings.continueRun.behaviourVersion)
        : undefined
      // [state_store] clear_on_success (3.3+): the success clears the task's stored state; before
      // the lock, like every other write of the registration, so it commits or vanishes with it.
      const stateCleared = store.capabilities.clearTaskStateOnSuccess ? await store.clearTaskState(tx, ti) : 0
      const row = audit.row(ti, clear, stateCleared)
      if (!settings.emitEvents) {
        // Only the audit row: the events statement with no event writes it, with its before-image.
        const {logId, imageXmin} = await store.insertAssetEvents(tx, ti, [], row(0))
        return {...emptyRegistration(), logId, imageXmin, warnings: clear?.warnings ?? [], clear, stateCleared}
      }
      const emitted = await emitOutletEvents(
        store,
        tx,
        ti,
        {outletEvents: input.outletEvents, defaultExtra: settings.defaultExtra},
        row,
      )
      const queued = await queueEventConsumers(store, tx, ti, emitted, {downstream: settings.downstream ?? true})
      const warnings = [...queued.warnings, ...(clear?.warnings ?? [])]
      return {...queued, warnings, logId: emitted.logId, imageXmin: emitted.imageXmin, clear, stateCleared}
    },
    // --plan: what register() would write, on reads alone (the declared outlets it emits for,
    // and the input's emissions through aliases whose alias and asset exist).
    plan: (ex, ti, input) => planComplete(store, ex, settings, ti, input),
    decideAfterRegistering: (registration) => refuseAfterRegistering(settings, registration),
    async decideUnderLock(tx, lockedState, ti, registration, locked) {
      const decision = decide(lockedState)
      if (decision !== 'commit') return decision
      // The before-image was read before the lock: written to since (a heartbeat, another write),
      // it would not be the row this success replaces. Read and registered again.
      if (registration.imageXmin !== null && locked.xmin !== registration.imageXmin)
        throw new RetryFromStart(
          'the task instance row was written to between the registration and the lock, on every attempt',
        )
      if (!registration.clear) return decision
      // Then the task instances to clear in key order and the run: the protocol's lock order. A
      // change since the read (the scheduler, or another item of this run that cleared them
      // first) means a fresh plan: the item starts again, and ends downstream_changed only when
      // every attempt found a change.
      const changed = await recheckClear(store, tx, ti, registration.clear)
      if (changed) throw new RetryFromStart(changed, {outcome: 'downstream_changed', detail: changed})
      return 'commit'
    },
    apply: (tx, ti, registration) => applyCompletion(store, settings, tx, ti, registration),
    counts(registration) {
      return {
        events: registration.events.length,
        queued: registration.consumers.filter((c) => c.kind === 'queued').length,
        warnings: registration.warnings,
        report: {
          log_id: registration.logId,
          downstream: registration.downstream,
          ...(registration.cleared ? {continue_run: registration.cleared} : {}),
          ...(registration.stateCleared > 0 ? {task_state_cleared: registration.stateCleared} : {}),
        },
      }
    },
    wasCommitted: (ex, _ti, _registration, receipt) => store.logRowExists(ex, receipt.logId),
  }
}

/**
 * Step 4's commit branch: the success, with the before-image airlock undo reads written into the
 * audit row by the same statement, then --continue-run's clear.
 */
async function applyCompletion(
  store: CompleteStore,
  settings: CompleteSettings,
  tx: Executor,
  ti: TaskInstanceContext,
  registration: CompleteRegistration,
): Promise<{logId: number}> {
  await store.markTaskInstanceSuccess(tx, ti.id, settings.endDate)
  if (registration.clear) registration.cleared = await applyClear(store, tx, registration.clear, registration.logId)
  return {logId: registration.logId}
}

/**
 * complete's audit row. It says who acted, as the rows Airflow writes for an operator's action
 * name that user: the operator, not the DAG's owners; `row` is the one written with the events.
 */
function completeAudit(settings: CompleteSettings) {
  const identity = auditIdentity()
  const owner = settings.actor ?? identity.os_user
  const extra = (previousState: StoredState, events: number, eventIds: unknown, clear?: ClearPlan) =>
    completeAuditExtra(settings.airlockVersion, identity, previousState, events, eventIds, clear)
  return {
    owner,
    extra,
    row:
      (ti: TaskInstanceContext, clear: ClearPlan | undefined, stateCleared: number) =>
      (events: number): AuditRow => ({
        event: 'success',
        tryNumber: ti.tryNumber,
        logicalDate: ti.logicalDate,
        owner,
        extra: extraAroundEventIds((eventIds) => extra(ti.state, events, eventIds, clear)),
        // What airlock undo restores: the task instance as the events statement reads it (checked
        // under the lock by its row version), what the writer knows itself, and a place for the
        // clear's image, which applyClear fills under its locks.
        image: {
          tiId: ti.id,
          standIn: JSON.stringify(beforeImageStandIn),
          fields: {
            ...(stateCleared > 0 ? {task_state_cleared: stateCleared} : {}),
            ...(clear ? {continue_run: clearImageStandIn} : {}),
          },
        },
      }),
  }
}

/**
 * Airflow's audit log shows this row: say who did it, from where, and how. event_ids names this
 * try's events without relying on clocks (replay-events and audit-events read it). With
 * --continue-run it names what the clear takes: the plan is checked under the locks, so a
 * committed row names exactly what was cleared.
 */
function completeAuditExtra(
  airlockVersion: string,
  {host_name, os_user}: {host_name: string; os_user: string},
  previousState: StoredState,
  events: number,
  /** The ids' array, or the stand-in extraAroundEventIds writes them in place of. */
  eventIds: unknown,
  clear?: ClearPlan,
): unknown {
  return {
    host_name,
    airlock: {
      version: airlockVersion,
      command: clear ? 'complete --continue-run' : 'complete',
      os_user,
      previous_state: previousState,
      events,
      event_ids: eventIds,
      // What airlock undo restores, put here by the statement that writes this row (AuditRow.image).
      before: beforeImageStandIn,
      ...(clear
        ? {
            continue_run: {
              dag_run_id: clear.run.id,
              dag_run_previous_state: clear.run.state,
              cleared: clear.targets.map((t) => ({
                ti_id: t.id,
                task_id: t.taskId,
                map_index: t.mapIndex,
                state: t.state,
              })),
            },
          }
        : {}),
    },
  }
}

/** Step 1's early exits: a state not asked for, an end date before the start, mapped downstream, inactive outlets. */
function refuseBeforeRegistering(
  settings: CompleteSettings,
  ti: TaskInstanceContext,
  decide: (state: StoredState) => CompleteOutcome | 'commit',
): CompleteOutcome | undefined {
  const decision = decide(ti.state)
  if (decision !== 'commit') return decision
  if (settings.endDate && ti.startDate && settings.endDate < ti.startDate && !settings.forceEndDate) {
    return {
      outcome: 'invalid_end_date',
      detail: `--end-date ${settings.endDate.toISOString()} is before this task instance's start_date ${ti.startDate.toISOString()}; --force-end-date records it anyway (duration 0)`,
    }
  }
  if (ti.mappedDependants.length > 0 && !settings.allowMappedDownstream) return mappedDownstream(ti.mappedDependants)
  const inactive = settings.strictOutlets && settings.emitEvents ? ti.outlets.filter((o) => !o.active) : []
  if (inactive.length === 0) return undefined
  return {
    outcome: 'inactive_outlet',
    detail: `outlet assets not active: ${inactive.map(describeOutlet).join(', ')}`,
  }
}

/** After registering, before the lock: a clear airlock cannot do, or consumers only a partition mapper queues. */
function refuseAfterRegistering(
  settings: CompleteSettings,
  registration: CompleteRegistration,
): CompleteOutcome | undefined {
  if (registration.clear?.refusal) return {outcome: 'unsupported_downstream', detail: registration.clear.refusal}
  return refusePartitionMapped(settings, registration.consumers)
}

/** Consumers only a partition mapper queues: refused unless --allow-unqueued-consumers (the write's and the plan's rule). */
function refusePartitionMapped(
  settings: CompleteSettings,
  consumers: readonly ConsumerDecision[],
): CompleteOutcome | undefined {
  if (settings.allowUnqueuedConsumers) return undefined
  const partitioned = consumerDags(consumers, 'partition_mapper')
  if (partitioned.length === 0) return undefined
  return {
    outcome: 'unsupported_consumer',
    detail: `consumer DAGs with a partitioned timetable, fed an event with a partition key: ${partitioned.join(', ')}; Airflow queues them through their partition mapper (asset_partition_dag_run, partitioned_asset_key_log), which airlock cannot run; --allow-unqueued-consumers completes without queueing them`,
  }
}

/** One event per asset, as registration writes it (two refs to one asset are one outlet). */
function uniqueByAsset<T extends {assetId: number}>(outlets: readonly T[]): T[] {
  return [...new Map(outlets.map((o) => [o.assetId, o])).values()]
}

/**
 * complete's plan: the active declared outlets get an event each, and the input's emissions
 * through an alias the task declares get one per (asset, alias) whose asset and alias exist (the
 * queue decision needs their ids). An alias target that does not exist yet is created by the
 * write, and partition keys chosen per event are written by it too: the plan says so.
 */
async function planComplete(
  store: CompleteStore,
  ex: Executor,
  settings: CompleteSettings,
  ti: TaskInstanceContext,
  input: {outletEvents: OutletEventInput[]},
): Promise<PlannedWrite<CompleteOutcome>> {
  const outlets = settings.emitEvents ? uniqueByAsset(activeOutlets(ti)) : []
  const inactive = settings.emitEvents ? ti.outlets.filter((o) => !o.active) : []
  const keyed = input.outletEvents.filter((e) => e.partitionKeys && !e.alias).length
  const aliases = settings.emitEvents ? await planAliasEmissions(store, ex, ti, input.outletEvents) : noAliases
  return {
    result: {outcome: 'completed'},
    outlets,
    aliasEvents: aliases.events,
    refuseAfterQueue: (consumers) => refusePartitionMapped(settings, consumers),
    warnings: [
      ...inactive.map((o) => `no event for ${describeOutlet(o)}: it is not an active asset`),
      ...aliases.warnings,
      ...(keyed > 0
        ? [
            `${keyed} outlet_events of the input choose partition keys: their events are resolved when written, not planned`,
          ]
        : []),
      ...(settings.continueRun ? ['--continue-run: the downstream clear is planned when written'] : []),
    ],
  }
}

const noAliases = {events: [], warnings: []}

/** The emissions through aliases the write would make, by the ids they would queue with. */
async function planAliasEmissions(
  store: CompleteStore,
  ex: Executor,
  ti: TaskInstanceContext,
  entries: readonly OutletEventInput[],
): Promise<{events: Array<{assetId: number; aliasIds: number[]}>; warnings: string[]}> {
  const throughAlias = entries.filter((e): e is OutletEventInput & {alias: string} => e.alias !== undefined)
  if (throughAlias.length === 0) return noAliases
  const warnings: string[] = []
  const undeclared = throughAlias.filter(
    (e) => ti.outletsFrom === 'serialized_dag' && !ti.declaredAliases.includes(e.alias),
  )
  if (undeclared.length > 0)
    warnings.push(
      `outlet_events emit through ${[...new Set(undeclared.map((e) => e.alias))].join(', ')}, which the task does not declare: the write refuses the item`,
    )
  const strings = [...new Set(throughAlias.flatMap((e) => (typeof e.asset === 'string' ? [e.asset] : [])))]
  const byString = await store.findAssetsByNameOrUri(ex, strings)
  const targets = throughAlias.flatMap((e) => {
    if (undeclared.includes(e)) return []
    if (typeof e.asset !== 'string') return [{alias: e.alias, name: e.asset.name, uri: e.asset.uri}]
    const found = byString.get(e.asset) ?? []
    return found.length === 1 ? [{alias: e.alias, ...found[0]!}] : []
  })
  const ids = await store.resolveAssetsAndAliases(
    ex,
    targets.map((t) => ({name: t.name, uri: t.uri})),
    [...new Set(targets.map((t) => t.alias))],
  )
  const byAsset = new Map<number, Set<number>>()
  for (const target of targets) {
    const assetId = ids.assetIds.get(assetKey(target))
    const aliasId = ids.aliasIds.get(target.alias)
    if (assetId === undefined) {
      warnings.push(
        `${target.name} (${target.uri}) through alias ${target.alias} does not exist yet: the write creates it; its consumers are not planned`,
      )
      continue
    }
    // An alias with no row yet has no consumer scheduled on it; the asset's own consumers still count.
    const aliasIdsOf = byAsset.get(assetId) ?? new Set<number>()
    if (aliasId !== undefined) aliasIdsOf.add(aliasId)
    byAsset.set(assetId, aliasIdsOf)
  }
  return {events: [...byAsset].map(([assetId, aliasIds]) => ({assetId, aliasIds: [...aliasIds]})), warnings}
}
