import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import type {StoredState, TaskInstanceContext, TaskInstanceState} from '../airflow/taskInstance.js'
import {insertTaskLogRow} from '../db/insertTaskLogRow.js'
import {logRowExists} from '../db/logRowExists.js'
import {markTaskInstanceSuccess} from '../db/markTaskInstanceSuccess.js'
import type {CompleteOutcome} from '../protocol/outcomes.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import type {Writer} from '../protocol/protocol.js'
import {emitOutletEvents, emptyRegistration, queueEventConsumers, type Registration} from './registerOutletEvents.js'
import type {OutletEventInput} from './workItem.js'

export interface CompleteSettings {
  capabilities: Capabilities
  /** States a TI may be in to be completed (default: running). Never includes success. */
  fromStates: readonly TaskInstanceState[]
  emitEvents: boolean
  /** JSON text of the extra for events without one of their own. */
  defaultExtra: string
  endDate: Date | null
  airlockVersion: string
}

type CompleteRegistration = Registration & {logId: number}

/**
 * `airlock complete` as a protocol writer: what Airflow's success path writes, in the same terms.
 *
 * The audit `log` row is written with the registration, before the lock: it commits or vanishes
 * with the state change all the same, and the row lock is then held for the UPDATE alone (the
 * brief: "the lock is held only for the state update"); bench/results shows the hold at the raw
 * FOR UPDATE + UPDATE + COMMIT floor. The try number the row names is checked under the lock by
 * the protocol (a changed try means a stale read and a retry from step 1).
 */
export function completeWriter(settings: CompleteSettings): Writer<CompleteOutcome, {outletEvents: OutletEventInput[]}, CompleteRegistration, {logId: number}> {
  const expected = new Set<string | null>(settings.fromStates)
  const decide = (state: string | null): CompleteOutcome | 'commit' => {
    if (expected.has(state)) return 'commit'
    if (state === 'success') return {outcome: 'already_success'}
    return {outcome: 'conflict', previousState: state as StoredState}
  }

  const {host_name, os_user} = auditIdentity()
  // Airflow's audit log shows this row: say who did it, from where, and how.
  const auditExtra = (previousState: string | null, events: number) =>
    JSON.stringify({host_name, airlock: {version: settings.airlockVersion, command: 'complete', os_user, previous_state: previousState, events}})

  return {
    verb: 'complete',
    readsOutlets: settings.emitEvents,
    committed: {outcome: 'completed'},
    decideBeforeRegistering(ti) {
      const decision = decide(ti.state)
      return decision === 'commit' ? undefined : decision
    },
    async register(trx, ti, input) {
      if (!settings.emitEvents) return {...emptyRegistration(), ...(await insertTaskLogRow(trx, ti, 'success', auditExtra(ti.state, 0)))}
      const emitted = await emitOutletEvents(trx, ti, {outletEvents: input.outletEvents, defaultExtra: settings.defaultExtra}, settings.capabilities)
      const {logId} = await insertTaskLogRow(trx, ti, 'success', auditExtra(ti.state, emitted.events.length))
      return {...(await queueEventConsumers(trx, ti, emitted, settings.capabilities)), logId}
    },
    async decideUnderLock(_trx, lockedState) {
      return decide(lockedState)
    },
    async apply(conn, ti, registration) {
      await markTaskInstanceSuccess(conn, ti.id, settings.endDate)
      return {logId: registration.logId}
    },
    counts(registration) {
      return {events: registration.events.length, queued: registration.consumers.filter((c) => c.kind === 'queued').length, warnings: registration.warnings}
    },
    wasCommitted: (knex: Knex, _ti: TaskInstanceContext, _registration: CompleteRegistration, receipt) => logRowExists(knex, receipt.logId),
  }
}
