import {runTransaction} from '../engine/transaction.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import {noLogSubject} from '../store/airflowStore.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'
import type {DuplicateGroup} from './auditEvents.js'

export interface GroupFix {
  kept: number
  removed: number[]
  refused_consumed: number[]
  outcome: 'removed' | 'refused_consumed' | 'failed'
  error?: string
}

/**
 * The guarded repair: one transaction per duplicate group on the transaction engine (SET LOCAL
 * timeouts, retries, dry run = rollback), removing only extras no dag run consumed, and
 * recording in Airflow's audit log exactly what was removed.
 */
export async function fixDuplicateGroups(
  airflow: Pick<AirflowDatabase, 'db' | 'store'>,
  groups: readonly DuplicateGroup[],
  options: {dryRun: boolean; lockTimeoutMs: number; statementTimeoutMs: number; airlockVersion: string},
): Promise<GroupFix[]> {
  const {db, store} = airflow
  const identity = auditIdentity()
  const fixes: GroupFix[] = []
  for (const group of groups) {
    let refused: number[] = []
    const {result} = await runTransaction<{outcome: 'removed'; removed: number[]} | {outcome: 'refused_consumed'}>(db, {
      locals: {
        lockTimeoutMs: options.lockTimeoutMs,
        statementTimeoutMs: options.statementTimeoutMs,
        applicationName: `airlock:audit-fix:${group.kept}`,
      },
      dryRun: options.dryRun,
      unknownCommitAdvice: 'run audit-events again to see what is left',
      async run(tx) {
        const {removed, consumed} = await store.removeDuplicateEvents(tx, group.extras)
        refused = consumed
        if (removed.length === 0) return {rollback: {outcome: 'refused_consumed'}}
        const extra = {
          host_name: identity.host_name,
          airlock: {
            version: options.airlockVersion,
            command: 'audit-events --fix',
            os_user: identity.os_user,
            kept_event_id: group.kept,
            removed_event_ids: removed,
            left_consumed: consumed,
          },
        }
        await store.insertLogRow(tx, {...noLogSubject, owners: identity.os_user}, 'airlock.audit-events.fix', JSON.stringify(extra))
        return {commit: {outcome: 'removed', removed}}
      },
      async wasCommitted(ex, outcome) {
        return outcome.outcome === 'removed' && (await store.countEvents(ex, outcome.removed)) === 0
      },
    })
    if (result.outcome === 'failed') fixes.push({kept: group.kept, removed: [], refused_consumed: [], outcome: 'failed', error: result.message})
    else if (result.outcome === 'removed') fixes.push({kept: group.kept, removed: result.removed, refused_consumed: refused, outcome: 'removed'})
    else fixes.push({kept: group.kept, removed: [], refused_consumed: refused, outcome: 'refused_consumed'})
  }

  return fixes
}
