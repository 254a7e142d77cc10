import {runBatch} from '../batch/pool.js'
import type {PreparedBatch} from '../batch/prepared.js'
import {Tally} from '../batch/tally.js'
import {runTransaction, type Failed} from '../engine/transaction.js'
import {ExitCode} from '../exitCodes.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import {lostServer} from '../protocol/outcomes.js'
import {noLogSubject, type AuditLogStore} from '../store/families/audit.js'
import type {PendingReason, EventStore} from '../store/families/events.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {DuplicateGroup} from './auditEvents.js'

/** The store families audit-events --fix uses. */
export type DuplicateFixStore = EventStore & AuditLogStore

export interface GroupFix {
  kept: number
  removed: number[]
  refused_consumed: number[]
  /** Left because a run could still take them where the fix's DAG lock does not reach (pending_reason). */
  refused_pending: number[]
  /**
   * Why refused_pending were left: `partitioned_consumer` (a consumer's partitioned timetable,
   * whose partition path airlock does not lock) or `queued` (3.4: a queue row names them, and a
   * scheduler may have read that id before taking the DAG lock); null when none were.
   */
  pending_reason: PendingReason | null
  /** Left because complete's audit row names them: their try's own events. */
  refused_named: number[]
  /** Left because they are no longer the kept event's duplicates (or it is gone). */
  changed: number[]
  /**
   * removed: some extras deleted; kept: none could be (consumed, named or pending);
   * skipped_busy: another session (a scheduler, another fixer) held an event or a consumer DAG;
   * changed: the kept event is gone since the audit read it (run the audit again).
   */
  outcome: 'removed' | 'kept' | 'skipped_busy' | 'changed' | 'failed'
  error?: string
}

/** Every outcome of a group's repair and the exit code it maps to. */
export const fixOutcomes = {
  removed: ExitCode.ok,
  kept: ExitCode.ok,
  skipped_busy: ExitCode.ok,
  changed: ExitCode.ok,
  failed: ExitCode.partialFailure,
} as const

export type FixOutcomeName = keyof typeof fixOutcomes

/**
 * The guarded repair made ready: one transaction per duplicate group on the transaction engine
 * (SET LOCAL timeouts, retries, dry run = rollback), deciding under its locks, never on the
 * audit's earlier read (store.removeDuplicateEvents): the kept event still there and still their
 * original, no extra a try's audit row names, every consumer DAG row held so the scheduler skips
 * them, no run that took an extra; never waiting on a lock the scheduler holds; recording in
 * Airflow's audit log exactly what was removed and why the rest was left. A delete is asked about
 * whatever its size.
 */
export function prepareDuplicateFix(
  airflow: Pick<AirflowDatabase<DuplicateFixStore>, 'db' | 'store'>,
  groups: readonly DuplicateGroup[],
  options: {dryRun: boolean; lockTimeoutMs: number; statementTimeoutMs: number; airlockVersion: string},
): PreparedBatch<GroupFix, FixOutcomeName> {
  // The question counts what the repair can delete: the extras no run had consumed when the audit
  // read them (the dry run's figure, barring a run or another fixer in between); consumed ones stay.
  const deletable = groups.reduce((n, g) => n + g.extras.length - g.consumed, 0)
  const consumed = groups.reduce((n, g) => n + g.consumed, 0)
  return {
    count: deletable,
    prompt: {
      action: 'delete',
      noun: `unconsumed duplicate event${deletable === 1 ? '' : 's'} in ${groups.length} group${groups.length === 1 ? '' : 's'} (each group keeps its first event${consumed > 0 ? `; ${consumed} consumed duplicate${consumed === 1 ? '' : 's'} stay` : ''}; each is re-checked with its consumer DAGs locked)`,
      always: true,
    },
    label: 'audit-events --fix',
    doneOutcomes: ['removed', 'kept', 'skipped_busy', 'changed'],
    explicit: false,
    dryRun: options.dryRun,
    warnings: [],
    async run({shouldStop, onItem}) {
      const tally = new Tally(fixOutcomes)
      const {interrupted, lost} = await runBatch(groups, (group) => fixGroup(airflow, group, options), {
        concurrency: 1,
        shouldStop,
        lostServer: ({failure}) => failure !== undefined && lostServer({result: failure}),
        onResult({fix, failure}) {
          tally.add({result: {outcome: fix.outcome, kind: failure?.kind}, events: 0, queued: 0, warnings: []})
          onItem(fix, tally)
        },
      })
      return {tally, interrupted, lost}
    },
  }
}

async function fixGroup(
  airflow: Pick<AirflowDatabase<DuplicateFixStore>, 'db' | 'store'>,
  group: DuplicateGroup,
  options: {dryRun: boolean; lockTimeoutMs: number; statementTimeoutMs: number; airlockVersion: string},
): Promise<{fix: GroupFix; failure?: Failed}> {
  const {db, store} = airflow
  const identity = auditIdentity()
  let seen = {
    consumed: [] as number[],
    pending: [] as number[],
    pendingReason: null as PendingReason | null,
    named: [] as number[],
    changed: [] as number[],
  }
  const {result} = await runTransaction<
    {outcome: 'removed'; removed: number[]} | {outcome: 'kept'} | {outcome: 'skipped_busy'} | {outcome: 'changed'}
  >(db, {
    locals: {
      lockTimeoutMs: options.lockTimeoutMs,
      statementTimeoutMs: options.statementTimeoutMs,
      applicationName: `airlock:audit-fix:${group.kept}`,
    },
    dryRun: options.dryRun,
    unknownCommitAdvice: 'run audit-events again to see what is left',
    async run(tx) {
      const outcome = await store.removeDuplicateEvents(tx, group.kept, group.extras)
      const {removed, removedRows, consumed, pending, pendingReason, busy, changed, named} = outcome
      seen = {consumed, pending, pendingReason, named, changed}
      if (busy.length > 0) return {rollback: {outcome: 'skipped_busy'}}
      if (removed.length === 0)
        return {rollback: {outcome: changed.length === group.extras.length ? 'changed' : 'kept'}}
      const extra = {
        host_name: identity.host_name,
        airlock: {
          version: options.airlockVersion,
          command: 'audit-events --fix',
          os_user: identity.os_user,
          kept_event_id: group.kept,
          removed_event_ids: removed,
          left_consumed: consumed,
          left_pending: pending,
          left_pending_reason: pendingReason,
          left_named: named,
          left_changed: changed,
          // What restores them (a future undo): each removed row whole, with its alias links.
          // Versioned, since the shape of asset_event moves with Airflow's releases.
          before: {version: 1, removed_events: removedRows},
        },
      }
      await store.insertLogRow(
        tx,
        {...noLogSubject, owners: identity.os_user},
        'airlock.audit-events.fix',
        JSON.stringify(extra),
      )
      return {commit: {outcome: 'removed', removed}}
    },
    async wasCommitted(ex, outcome) {
      return outcome.outcome === 'removed' && (await store.countEvents(ex, outcome.removed)) === 0
    },
  })
  const base = {
    kept: group.kept,
    removed: [] as number[],
    refused_consumed: seen.consumed,
    refused_pending: seen.pending,
    pending_reason: seen.pendingReason,
    refused_named: seen.named,
    changed: seen.changed,
  }
  const none = {refused_consumed: [], refused_pending: [], pending_reason: null, refused_named: [], changed: []}
  if (result.outcome === 'failed')
    return {fix: {...base, ...none, outcome: 'failed', error: result.message}, failure: result}
  if (result.outcome === 'removed') return {fix: {...base, removed: result.removed, outcome: 'removed'}}
  if (result.outcome === 'skipped_busy') return {fix: {...base, ...none, outcome: 'skipped_busy'}}
  return {fix: {...base, outcome: result.outcome}}
}
