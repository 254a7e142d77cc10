import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import {insertTaskLogRow} from '../db/insertTaskLogRow.js'
import {removeDuplicateEvents} from '../db/removeDuplicateEvents.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import {runEventWrite} from '../protocol/eventWrite.js'
import type {DuplicateGroup} from './auditEvents.js'

export interface GroupFix {
  kept: number
  removed: number[]
  refused_consumed: number[]
  outcome: 'removed' | 'refused_consumed' | 'failed'
  error?: string
}

/**
 * The guarded repair: one transaction per duplicate group through the protocol's event-write path
 * (SET LOCAL timeouts, retries, dry run = rollback), removing only extras no dag run consumed, and
 * recording in Airflow's audit log exactly what was removed.
 */
export async function fixDuplicateGroups(
  db: Knex,
  groups: readonly DuplicateGroup[],
  options: {capabilities: Capabilities; partitionTables: boolean; dryRun: boolean; lockTimeoutMs: number; statementTimeoutMs: number; airlockVersion: string},
): Promise<GroupFix[]> {
  const identity = auditIdentity()
  const fixes: GroupFix[] = []
  for (const group of groups) {
    let refused: number[] = []
    const {result} = await runEventWrite<{outcome: 'removed'; removed: number[]} | {outcome: 'refused_consumed'}>(
      db,
      {
        committedOutcome: 'removed',
        async run(trx) {
          const {removed, consumed} = await removeDuplicateEvents(trx, group.extras, options.partitionTables)
          refused = consumed
          if (removed.length === 0) return {outcome: 'refused_consumed'}
          const extra = {host_name: identity.host_name, airlock: {version: options.airlockVersion, command: 'audit-events --fix', os_user: identity.os_user, kept_event_id: group.kept, removed_event_ids: removed, left_consumed: consumed}}
          await insertTaskLogRow(trx, {dagId: null, taskId: null, runId: null, mapIndex: null, tryNumber: null, logicalDate: null, owners: null}, 'airlock.audit-events.fix', JSON.stringify(extra))
          return {outcome: 'removed', removed}
        },
        async wasCommitted(knex, outcome) {
          if (outcome.outcome !== 'removed') return false
          const {rows} = await knex.raw<{rows: unknown[]}>('select 1 from asset_event where id = any(?::int[])', [outcome.removed])
          return rows.length === 0
        },
      },
      {applicationName: `airlock:audit-fix:${group.kept}`, lockTimeoutMs: options.lockTimeoutMs, statementTimeoutMs: options.statementTimeoutMs, dryRun: options.dryRun},
    )
    if (result.outcome === 'failed') fixes.push({kept: group.kept, removed: [], refused_consumed: [], outcome: 'failed', error: result.message})
    else if (result.outcome === 'removed') fixes.push({kept: group.kept, removed: result.removed, refused_consumed: refused, outcome: 'removed'})
    else fixes.push({kept: group.kept, removed: [], refused_consumed: refused, outcome: 'refused_consumed'})
  }

  return fixes
}
