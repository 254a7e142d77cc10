import {describeOutlet, type StoredState} from '../airflow/taskInstance.js'
import {ExitCode} from '../exitCodes.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import {consumerDags, emitOutletEvents, emptyRegistration, queueEventConsumers, type Registration} from '../protocol/eventRegistration.js'
import type {Writer} from '../protocol/protocol.js'
import type {OutletEventInput} from '../selection/workItem.js'
import type {AirflowStore} from '../store/airflowStore.js'

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

/** Every outcome of a complete item and the exit code it maps to (the worst of a run wins). */
export const completeOutcomes = {
  completed: ExitCode.ok,
  already_success: ExitCode.ok,
  conflict: ExitCode.conflict,
  inactive_outlet: ExitCode.conflict,
  unsupported_consumer: ExitCode.conflict,
  invalid_end_date: ExitCode.conflict,
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
  /** JSON text of the extra for events without one of their own. */
  defaultExtra: string
  endDate: Date | null
  /** Record --end-date even before the task instance's start_date (duration then 0). */
  forceEndDate?: boolean | undefined
  airlockVersion: string
  /** Who marks it success, for the audit row's `owner` (--actor; default: the OS user). */
  actor?: string | undefined
}

type CompleteRegistration = Registration & {logId: number}

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
  store: AirflowStore,
  settings: CompleteSettings,
): Writer<CompleteOutcome, {outletEvents: OutletEventInput[]}, CompleteRegistration, {logId: number}> {
  const expected = new Set<StoredState>(settings.fromStates)
  const decide = (state: StoredState): CompleteOutcome | 'commit' => {
    if (expected.has(state)) return 'commit'
    if (state === 'success') return {outcome: 'already_success'}
    return {outcome: 'conflict', previousState: state}
  }

  const {host_name, os_user} = auditIdentity()
  // The audit row says who acted, as the rows Airflow writes for an operator's action name that
  // user: the operator, not the DAG's owners.
  const owner = settings.actor ?? os_user
  // Airflow's audit log shows this row: say who did it, from where, and how. event_ids names this
  // try's events without relying on clocks (replay-events and audit-events read it).
  const auditExtra = (previousState: StoredState, eventIds: readonly number[]) =>
    JSON.stringify({
      host_name,
      airlock: {
        version: settings.airlockVersion,
        command: 'complete',
        os_user,
        previous_state: previousState,
        events: eventIds.length,
        event_ids: eventIds,
      },
    })

  return {
    verb: 'complete',
    readsOutlets: settings.emitEvents,
    committed: {outcome: 'completed'},
    decideBeforeRegistering(ti) {
      const decision = decide(ti.state)
      if (decision !== 'commit') return decision
      if (settings.endDate && ti.startDate && settings.endDate < ti.startDate && !settings.forceEndDate) {
        return {
          outcome: 'invalid_end_date',
          detail: `--end-date ${settings.endDate.toISOString()} is before this task instance's start_date ${ti.startDate.toISOString()}; --force-end-date records it anyway (duration 0)`,
        }
      }
      const inactive = settings.strictOutlets && settings.emitEvents ? ti.outlets.filter((o) => !o.active) : []
      if (inactive.length === 0) return undefined
      return {outcome: 'inactive_outlet', detail: `outlet assets not active: ${inactive.map(describeOutlet).join(', ')}`}
    },
    async register(tx, ti, input) {
      if (!settings.emitEvents)
        return {...emptyRegistration(), ...(await store.insertLogRow(tx, {...ti, owners: owner}, 'success', auditExtra(ti.state, [])))}
      const emitted = await emitOutletEvents(store, tx, ti, {outletEvents: input.outletEvents, defaultExtra: settings.defaultExtra})
      const {logId} = await store.insertLogRow(
        tx,
        {...ti, owners: owner},
        'success',
        auditExtra(
          ti.state,
          emitted.events.map((e) => e.eventId),
        ),
      )
      return {...(await queueEventConsumers(store, tx, ti, emitted)), logId}
    },
    decideAfterRegistering(registration) {
      if (settings.allowUnqueuedConsumers) return undefined
      const partitioned = consumerDags(registration.consumers, 'partition_mapper')
      if (partitioned.length === 0) return undefined
      return {
        outcome: 'unsupported_consumer',
        detail: `consumer DAGs with a partitioned timetable, fed an event with a partition key: ${partitioned.join(', ')}; Airflow queues them through their partition mapper (asset_partition_dag_run, partitioned_asset_key_log), which airlock cannot run; --allow-unqueued-consumers completes without queueing them`,
      }
    },
    decideUnderLock: (_tx, lockedState) => Promise.resolve(decide(lockedState)),
    async apply(tx, ti, registration) {
      await store.markTaskInstanceSuccess(tx, ti.id, settings.endDate)
      return {logId: registration.logId}
    },
    counts(registration) {
      return {
        events: registration.events.length,
        queued: registration.consumers.filter((c) => c.kind === 'queued').length,
        warnings: registration.warnings,
      }
    },
    wasCommitted: (ex, _ti, _registration, receipt) => store.logRowExists(ex, receipt.logId),
  }
}
