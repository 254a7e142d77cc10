import os from 'node:os'

import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import type {StoredState, TaskInstanceContext, TaskInstanceState} from '../airflow/taskInstance.js'
import {markTaskInstanceSuccess} from '../db/markTaskInstanceSuccess.js'
import type {CompleteOutcome} from '../protocol/outcomes.js'
import type {Writer} from '../protocol/protocol.js'
import {emptyRegistration, registerOutletEvents, type Registration} from './registerOutletEvents.js'
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

/** `airlock complete` as a protocol writer: what Airflow's success path writes, in the same terms. */
export function completeWriter(settings: CompleteSettings): Writer<CompleteOutcome, {outletEvents: OutletEventInput[]}, Registration, {logId: number} | undefined> {
  const expected = new Set<string | null>(settings.fromStates)
  const decide = (state: string | null): CompleteOutcome | 'commit' => {
    if (expected.has(state)) return 'commit'
    if (state === 'success') return {outcome: 'already_success'}
    return {outcome: 'conflict', previousState: state as StoredState}
  }

  const host = os.hostname()
  const osUser = safeUsername()

  return {
    verb: 'complete',
    committed: {outcome: 'completed'},
    decideBeforeRegistering(ti) {
      const decision = decide(ti.state)
      return decision === 'commit' ? undefined : decision
    },
    register(trx, ti, input) {
      if (!settings.emitEvents) return Promise.resolve(emptyRegistration())
      return registerOutletEvents(trx, ti, {outletEvents: input.outletEvents, defaultExtra: settings.defaultExtra}, settings.capabilities)
    },
    async decideUnderLock(_trx, lockedState) {
      return decide(lockedState)
    },
    apply(trx, ti, registration) {
      const extra = {
        host_name: host,
        // Airflow's audit log shows this row; say who did it, from where, and how.
        airlock: {version: settings.airlockVersion, command: 'complete', os_user: osUser, previous_state: ti.state, events: registration.events.length},
      }
      return markTaskInstanceSuccess(trx, ti.id, settings.endDate, {logicalDate: ti.logicalDate, owner: ti.owners, extra: JSON.stringify(extra)})
    },
    counts(registration) {
      return {events: registration.events.length, queued: registration.consumers.filter((c) => c.kind === 'queued').length, warnings: registration.warnings}
    },
    async wasCommitted(knex: Knex, _ti: TaskInstanceContext, _registration: Registration, receipt) {
      if (!receipt) return false
      const {rows} = await knex.raw<{rows: unknown[]}>('select 1 from log where id = ?', [receipt.logId])
      return rows.length > 0
    },
  }
}

function safeUsername(): string {
  try {
    return os.userInfo().username
  } catch {
    return process.env.USER ?? 'unknown'
  }
}
