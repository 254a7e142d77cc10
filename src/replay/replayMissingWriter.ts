import {activeOutlets, type StoredState, type TaskInstanceContext} from '../airflow/taskInstance.js'
import {describeEvidence, replayableKinds, verdictOf, type TryEvidence} from '../airflow/tryEvidence.js'
import {auditIdentity, extraAroundEventIds} from '../protocol/auditIdentity.js'
import {queueEventConsumers, type EventRegistrationStore, type Registration} from '../protocol/eventRegistration.js'
import {RetryFromStart, type Writer} from '../protocol/protocol.js'
import type {Executor} from '../engine/engine.js'
import type {PlannedWrite} from '../protocol/plan.js'
import type {MissingOutlets, SelectionStore} from '../store/families/selection.js'

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

type ReplayRegistration = Registration & {
  /** The outlets this replay writes (missing, and replayable on their own evidence). */
  missing: number[]
  logId: number | null
  refused: ReplayOutcome | null
  /** Missing outlets left unwritten beside the written ones, each with why (its refusal's outcome). */
  left: Array<{asset: string; outcome: 'not_emitted' | 'unknown'}>
}

/** log.event of a replay; varchar(60) in Airflow. */
export const replayLogEvent = 'airlock.replay-events'

/**
 * replay-events, missing mode, as a protocol writer: expected state `success`; registers an event
 * for each active declared outlet that has none of this try, when the database says the events
 * were lost (fresh UTC timestamps, never backdated), queues their consumers, and writes the
 * provenance into the audit log. A try marked success without events on purpose is
 * `not_emitted`, one the database cannot tell about `unknown`: replaying either would start
 * downstream DAGs nobody asked for, so each is written only when the operator asks
 * (--include-marked-success, --include-unknown). Each missing outlet is decided on its own
 * (decideOutlets): an outlet whose event may be this try's is `unknown` by itself, and the try's
 * other outlets are decided on the try's evidence, so a certain loss is replayed beside a doubtful
 * outlet, which is left and named. Under the lock it rechecks that the task instance is still
 * success, the events still missing and the evidence unchanged.
 */
export function replayMissingWriter(
  store: ReplayMissingStore,
  settings: ReplaySettings,
): Writer<ReplayOutcome, unknown, ReplayRegistration, {logId: number}> {
  const identity = auditIdentity()
  const changed = (state: StoredState): ReplayOutcome => ({outcome: 'changed', previousState: state})
  const replayable = new Set(replayableKinds(settings))
  const decide = (read: MissingOutlets, names: ReadonlyMap<number, string>) => decideOutlets(replayable, read, names)
  return {
    verb: 'replay',
    readsOutlets: true,
    committed: {outcome: 'replayed'},
    decideBeforeRegistering: (ti) => (ti.state === 'success' ? undefined : changed(ti.state)),
    // --plan: register()'s own reads (the missing outlets and the try's evidence), nothing written.
    plan: (ex, ti) => planReplay(store, ex, ti, decide),
    async register(tx, ti) {
      const active = activeOutlets(ti)
      const read = await store.readMissingOutlets(tx, ti, [...new Set(active.map((o) => o.assetId))])
      const {write: missing, left, refused, warnings} = decide(read, namesOf(active))
      const nothing = {events: [], consumers: [], warnings: [], downstream: [], missing, logId: null, left}
      if (read.assetIds.length === 0) return {...nothing, refused: null}
      if (refused) return {...nothing, refused}
      const {logId, ...registration} = await writeEvents(store, settings, identity, tx, ti, read, missing)
      return {
        ...registration,
        warnings: [...registration.warnings, ...warnings],
        missing,
        logId,
        refused: null,
        left,
      }
    },
    decideAfterRegistering(registration) {
      if (registration.refused) return registration.refused
      return registration.missing.length === 0 ? {outcome: 'nothing_missing'} : undefined
    },
    async decideUnderLock(tx, lockedState, ti, registration) {
      if (lockedState !== 'success') return changed(lockedState)
      const read = await store.readMissingOutlets(tx, ti, registration.missing, {
        eventIds: registration.events.map((e) => e.eventId),
        logId: registration.logId,
      })
      // Each outlet decided again: a mark-success logged since the unlocked read (its row commits
      // before the state change) refuses what it decides.
      const {write, refused} = decide(read, namesOf(activeOutlets(ti)))
      if (write.length === registration.missing.length) return 'commit'
      if (read.assetIds.length === 0) return {outcome: 'nothing_missing'}
      if (refused) return refused
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
        ...(registration.left.length === 0 ? {} : {not_replayed: registration.left}),
        downstream: registration.downstream,
      },
    }),
    wasCommitted: (ex, _ti, _registration, receipt) => store.logRowExists(ex, receipt.logId),
  }
}

/** An outcome that refuses a replay on the evidence. */
type Refusal = Extract<ReplayOutcome, {outcome: 'not_emitted' | 'unknown'}>

const namesOf = (outlets: ReadonlyArray<{assetId: number; name: string}>): Map<number, string> =>
  new Map(outlets.map((o) => [o.assetId, o.name]))

/** The evidence of a doubtful outlet: an event may be this try's, so nothing can be told. */
const doubtfulEvidence: TryEvidence = {kind: 'unattributed_event', log: null}

/** What refuses the absent outlets (the try's evidence) and the doubtful ones, when it does. */
function refusalsOf(
  replayable: ReadonlySet<TryEvidence['kind']>,
  read: MissingOutlets,
): {absent: Refusal | null; doubtful: Refusal | null} {
  return {absent: refusalOf(replayable, read.evidence), doubtful: refusalOf(replayable, doubtfulEvidence)}
}

/**
 * Which missing outlets the replay writes, outlet by outlet: an outlet with no event of the try
 * on the try's evidence, one whose event may be the try's as `unattributed_event` (unknown) on its
 * own. `left`: the missing outlets not written. `refused`: when nothing is written, why (the
 * absent outlets' refusal, the doubtful ones', or both named).
 */
function decideOutlets(
  replayable: ReadonlySet<TryEvidence['kind']>,
  read: MissingOutlets,
  names: ReadonlyMap<number, string>,
): {write: number[]; left: ReplayRegistration['left']; refused: ReplayOutcome | null; warnings: string[]} {
  const refusals = refusalsOf(replayable, read)
  const refusalOfOutlet = (id: number) => (read.doubtful.includes(id) ? refusals.doubtful : refusals.absent)
  const write = read.assetIds.filter((id) => refusalOfOutlet(id) === null)
  const left = read.assetIds.flatMap((id) => {
    const refused = refusalOfOutlet(id)
    return refused === null ? [] : [{asset: names.get(id) ?? `asset ${id}`, outcome: refused.outcome}]
  })
  if (write.length > 0 || read.assetIds.length === 0)
    return {write, left, refused: null, warnings: leftWarnings(left, refusals)}
  const absent = read.assetIds.filter((id) => !read.doubtful.includes(id))
  if (absent.length === 0) return {write, left, refused: refusals.doubtful, warnings: []}
  if (read.doubtful.length === 0) return {write, left, refused: refusals.absent, warnings: []}
  // Both kinds left: unknown (the doubt needs a decision), each part named with its own reason.
  const named = (ids: readonly number[]) => ids.map((id) => names.get(id) ?? `asset ${id}`).join(', ')
  return {
    write,
    left,
    refused: {
      outcome: 'unknown',
      detail: `${named(absent)}: ${detailOf(refusals.absent)}; ${named(read.doubtful)}: ${detailOf(refusals.doubtful)}`,
    },
    warnings: [],
  }
}

const detailOf = (refusal: Refusal | null): string => refusal?.detail ?? ''

/**
 * A replay's notes on the missing outlets it left beside the ones it wrote: with something
 * written, a left outlet is either doubtful (unknown) or absent on deliberate evidence.
 */
function leftWarnings(left: ReplayRegistration['left'], refusals: ReturnType<typeof refusalsOf>): string[] {
  return (['unknown', 'not_emitted'] as const).flatMap((outcome) => {
    const assets = left.filter((o) => o.outcome === outcome).map((o) => o.asset)
    if (assets.length === 0) return []
    const why = detailOf(outcome === 'unknown' ? refusals.doubtful : refusals.absent)
    return [`not replayed, ${outcome}: ${assets.join(', ')} (${why})`]
  })
}

/** What the evidence decides, when it does not allow the replay. */
function refusalOf(replayable: ReadonlySet<TryEvidence['kind']>, evidence: TryEvidence): Refusal | null {
  if (replayable.has(evidence.kind)) return null
  const why = describeEvidence(evidence)
  return verdictOf[evidence.kind] === 'deliberate'
    ? {
        outcome: 'not_emitted',
        detail: `${why}; --include-marked-success replays them anyway (their consumers will run)`,
      }
    : {outcome: 'unknown', detail: `${why}; --include-unknown replays them (their consumers will run)`}
}

/**
 * The replay's write of the outlets decided replayable: their events, the audit row naming them
 * and on what evidence (doubtful ones, written only with --include-unknown, named as such), and
 * their consumers queued.
 */
async function writeEvents(
  store: ReplayMissingStore,
  settings: ReplaySettings,
  identity: {host_name: string; os_user: string},
  tx: Executor,
  ti: TaskInstanceContext,
  read: MissingOutlets,
  missing: readonly number[],
): Promise<Registration & {logId: number}> {
  const written = activeOutlets(ti).filter((o) => missing.includes(o.assetId))
  const names = [...new Set(written.map((o) => o.name))]
  const doubtful = [...new Set(written.filter((o) => read.doubtful.includes(o.assetId)).map((o) => o.name))]
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
      extra: extraAroundEventIds((eventIds) =>
        replayAuditExtra(settings, identity, ti, names, eventIds, read.evidence, doubtful),
      ),
    },
  )
  const registration = await queueEventConsumers(
    store,
    tx,
    ti,
    {events, aliasesOfEvent: new Map(), warnings: []},
    {downstream: settings.downstream ?? true},
  )
  return {...registration, logId}
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
  /** Outlets written although an event may be this try's (--include-unknown): unattributed_event. */
  doubtful: string[],
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
      ...(doubtful.length === 0 ? {} : {unattributed_event: doubtful}),
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

/** replay's plan: the active outlets this try has no event of, each as its evidence allows. */
async function planReplay(
  store: ReplayMissingStore,
  ex: Executor,
  ti: TaskInstanceContext,
  decide: (read: MissingOutlets, names: ReadonlyMap<number, string>) => ReturnType<typeof decideOutlets>,
): Promise<PlannedWrite<ReplayOutcome>> {
  const active = activeOutlets(ti)
  const read = await store.readMissingOutlets(ex, ti, [...new Set(active.map((o) => o.assetId))])
  if (read.assetIds.length === 0) return {result: {outcome: 'nothing_missing'}, outlets: [], warnings: []}
  const {write, refused, warnings} = decide(read, namesOf(active))
  if (refused) return {result: refused, outlets: [], warnings: []}
  const outlets = [...new Map(active.filter((o) => write.includes(o.assetId)).map((o) => [o.assetId, o])).values()]
  return {result: {outcome: 'replayed'}, outlets, warnings}
}
