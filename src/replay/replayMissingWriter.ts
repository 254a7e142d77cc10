import {activeOutlets, type StoredState, type TaskInstanceContext} from '../airflow/taskInstance.js'
import {describeEvidence, replayableKinds, verdictOf, type TryEvidence} from '../airflow/tryEvidence.js'
import {auditIdentity, extraAroundEventIds} from '../protocol/auditIdentity.js'
import {queueEventConsumers, type EventRegistrationStore, type Registration} from '../protocol/eventRegistration.js'
import {RetryFromStart, type Writer} from '../protocol/protocol.js'
import type {Executor} from '../engine/engine.js'
import type {PlannedWrite} from '../protocol/plan.js'
import type {SelectionStore} from '../store/families/selection.js'

/** The store families replay-events' missing mode uses. */
export type ReplayMissingStore = SelectionStore & EventRegistrationStore

export type ReplayOutcome =
  | {outcome: 'replayed'}
  | {outcome: 'nothing_missing'}
  /** The try succeeded without events on purpose (marked success through the REST API or UI, a dags test, complete --no-events): nothing replayed. */
  | {outcome: 'not_emitted'; detail: string}
  /** Nothing says whether the events were lost or never meant to be (a bulk mark; Airflow before 3.2): nothing replayed. */
  | {outcome: 'unknown'; detail: string}
  /** The task instance is not (or no longer) success: nothing replayed. */
  | {outcome: 'changed'; previousState: StoredState}

export interface ReplaySettings {
  /** JSON text of the extra of replayed events. Provenance goes to the log row, not here: consumers read extras. */
  defaultExtra: string
  airlockVersion: string
  /** Who replays, for the audit row's `owner` (--actor; default: the OS user). */
  actor?: string | undefined
  /** Replay for tries that succeeded without events on purpose too (--include-marked-success). */
  includeMarkedSuccess?: boolean | undefined
  /** Replay for tries the database cannot tell lost from deliberate (--include-unknown). */
  includeUnknown?: boolean | undefined
  /** The downstream preview of each item (--no-downstream: off). Default on. */
  downstream?: boolean | undefined
}

type ReplayRegistration = Registration & {missing: number[]; logId: number | null; refused: ReplayOutcome | null}

/** log.event of a replay; varchar(60) in Airflow. */
export const replayLogEvent = 'airlock.replay-events'

/**
 * replay-events, missing mode, as a protocol writer: expected state `success`; registers an event
 * for each active declared outlet that has none of this try, when the database says the events
 * were lost (fresh UTC timestamps, never backdated), queues their consumers, and writes the
 * provenance into the audit log. A try marked success without events on purpose is
 * `not_emitted`, one the database cannot tell about `unknown`: replaying either would start
 * downstream DAGs nobody asked for, so each is written only when the operator asks
 * (--include-marked-success, --include-unknown). Under the lock it rechecks that the task
 * instance is still success, the events still missing and the evidence unchanged.
 */
export function replayMissingWriter(
  store: ReplayMissingStore,
  settings: ReplaySettings,
): Writer<ReplayOutcome, unknown, ReplayRegistration, {logId: number}> {
  const identity = auditIdentity()
  const changed = (state: StoredState): ReplayOutcome => ({outcome: 'changed', previousState: state})
  const replayable = new Set(replayableKinds(settings))
  const refusal = (evidence: TryEvidence) => refusalOf(replayable, evidence)
  return {
    verb: 'replay',
    readsOutlets: true,
    committed: {outcome: 'replayed'},
    decideBeforeRegistering: (ti) => (ti.state === 'success' ? undefined : changed(ti.state)),
    // --plan: register()'s own reads (the missing outlets and the try's evidence), nothing written.
    plan: (ex, ti) => planReplay(store, ex, ti, refusal),
    async register(tx, ti) {
      const active = activeOutlets(ti)
      const {assetIds: missing, evidence} = await store.readMissingOutlets(tx, ti, [
        ...new Set(active.map((o) => o.assetId)),
      ])
      const nothing = {events: [], consumers: [], warnings: [], downstream: [], missing, logId: null}
      if (missing.length === 0) return {...nothing, refused: null}
      const refused = refusal(evidence)
      if (refused) return {...nothing, refused}
      const names = [...new Set(active.filter((o) => missing.includes(o.assetId)).map((o) => o.name))]
      // A silent outlet's event carries the run's partition key, as Airflow's would have.
      const {events, logId} = await store.insertAssetEvents(
        tx,
        ti,
        missing.map((assetId) => ({assetId, extra: settings.defaultExtra, partitionKey: ti.partitionKey})),
        {
          event: replayLogEvent,
          tryNumber: ti.tryNumber,
          logicalDate: ti.logicalDate,
          owner: settings.actor ?? identity.os_user,
          extra: extraAroundEventIds((eventIds) => replayAuditExtra(settings, identity, ti, names, eventIds, evidence)),
        },
      )
      const registration = await queueEventConsumers(
        store,
        tx,
        ti,
        {events, aliasesOfEvent: new Map(), warnings: []},
        {downstream: settings.downstream ?? true},
      )
      return {...registration, missing, logId, refused: null}
    },
    decideAfterRegistering(registration) {
      if (registration.refused) return registration.refused
      return registration.missing.length === 0 ? {outcome: 'nothing_missing'} : undefined
    },
    async decideUnderLock(tx, lockedState, ti, registration) {
      if (lockedState !== 'success') return changed(lockedState)
      const {assetIds: stillMissing, evidence} = await store.readMissingOutlets(tx, ti, registration.missing, {
        eventIds: registration.events.map((e) => e.eventId),
        logId: registration.logId,
      })
      // A mark-success logged since the unlocked read (its row commits before the state change).
      const refused = refusal(evidence)
      if (refused) return refused
      if (stillMissing.length === registration.missing.length) return 'commit'
      if (stillMissing.length === 0) return {outcome: 'nothing_missing'}
      // Another replayer committed part of the set: start over from a fresh read.
      throw new RetryFromStart('other sessions kept replaying part of these events; run again')
    },
    // No state change: the lock only serialises replayers of this task instance.
    apply: (_tx, _ti, registration) => Promise.resolve({logId: registration.logId!}),
    counts: (registration) => ({
      events: registration.events.length,
      queued: registration.consumers.filter((c) => c.kind === 'queued').length,
      warnings: registration.warnings,
      report: {
        ...(registration.logId === null ? {} : {log_id: registration.logId}),
        downstream: registration.downstream,
      },
    }),
    wasCommitted: (ex, _ti, _registration, receipt) => store.logRowExists(ex, receipt.logId),
  }
}

/** What the evidence decides, when it does not allow the replay. */
function refusalOf(replayable: ReadonlySet<TryEvidence['kind']>, evidence: TryEvidence): ReplayOutcome | null {
  if (replayable.has(evidence.kind)) return null
  const why = describeEvidence(evidence)
  return verdictOf[evidence.kind] === 'deliberate'
    ? {
        outcome: 'not_emitted',
        detail: `${why}; --include-marked-success replays them anyway (their consumers will run)`,
      }
    : {outcome: 'unknown', detail: `${why}; --include-unknown replays them (their consumers will run)`}
}

/** The audit row's extra: what was replayed, for which try, on what evidence (audit-events reads event_ids). */
function replayAuditExtra(
  settings: ReplaySettings,
  identity: {host_name: string; os_user: string},
  ti: TaskInstanceContext,
  assets: string[],
  /** The ids' array, or the stand-in extraAroundEventIds writes them in place of. */
  eventIds: unknown,
  evidence: TryEvidence,
) {
  return {
    host_name: identity.host_name,
    airlock: {
      version: settings.airlockVersion,
      command: 'replay-events',
      mode: 'missing',
      os_user: identity.os_user,
      ti: tiKey(ti),
      assets,
      event_ids: eventIds,
      evidence: evidence.kind,
      // airlock undo deletes the events above and the queue rows this transaction created (their
      // row version's xmin is this row's): nothing else to record.
      before: {version: 1},
    },
  }
}

const tiKey = (ti: TaskInstanceContext) => ({
  dag_id: ti.dagId,
  run_id: ti.runId,
  task_id: ti.taskId,
  map_index: ti.mapIndex,
  try_number: ti.tryNumber,
})

/** replay's plan: the active outlets this try has no event of, when its evidence allows a replay. */
async function planReplay(
  store: ReplayMissingStore,
  ex: Executor,
  ti: TaskInstanceContext,
  refusal: (evidence: TryEvidence) => ReplayOutcome | null,
): Promise<PlannedWrite<ReplayOutcome>> {
  const active = activeOutlets(ti)
  const {assetIds: missing, evidence} = await store.readMissingOutlets(ex, ti, [
    ...new Set(active.map((o) => o.assetId)),
  ])
  if (missing.length === 0) return {result: {outcome: 'nothing_missing'}, outlets: [], warnings: []}
  const refused = refusal(evidence)
  if (refused) return {result: refused, outlets: [], warnings: []}
  const outlets = [...new Map(active.filter((o) => missing.includes(o.assetId)).map((o) => [o.assetId, o])).values()]
  return {result: {outcome: 'replayed'}, outlets, warnings: []}
}
