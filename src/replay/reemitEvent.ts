import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import {runTransaction, type Failed} from '../engine/transaction.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import type {EventContent, EventStore} from '../store/families/events.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {replayLogEvent} from './replayMissingWriter.js'
import type {RegistrationStore} from '../store/families/registration.js'
import type {AuditLogStore} from '../store/families/audit.js'

/** The store families an event emitted again uses. */
export type ReemitStore = EventStore & RegistrationStore & AuditLogStore

/** One event to emit again: by id (its stored content) or from an export line. */
export interface EventSpec extends EventContent {
  /** "event 42" or "line 7", for messages and the audit row. */
  label: string
  assetName: string
  assetUri: string
  aliasIds: number[]
  originalEventId: number | null
  /** When the original was stamped: with its id, what decides which try it (and so the copy) belongs to. */
  originalTimestamp: Date
  logicalDate: Date | null
  owners: string | null
  /** --skip-existing: skip when the same content exists at or after this time. */
  skipIfSince: Date | null
  /** Alias names of an export line that do not exist here (the event is emitted without them). */
  unknownAliases?: string[]
}

export type EventReplayOutcome =
  | {outcome: 'replayed'; newEventId: number; logId: number; queued: number}
  | {outcome: 'skipped_existing'; existingEventId: number}

export interface EventReplaySettings {
  mode: 'event-id' | 'file'
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  airlockVersion: string
  /** Who replays, for the audit row's `owner` (--actor; default: the OS user). */
  actor?: string | undefined
}

/** An event that could not be emitted here (its id does not exist, its asset is unknown). */
export type UnresolvedOutcome = {outcome: 'not_found' | 'unknown_asset'; message: string}

/**
 * What an event item names, resolved or not: the event id asked for (--event-id), the asset, the
 * source task instance. A missing id names no asset; a file line names the asset it asked for.
 */
export interface EventNames {
  eventId: number | null
  asset: string | null
  source: TaskInstanceKey | null
}

export interface EventItem {
  /** "event 42" or "<file> line 7". */
  label: string
  names: EventNames
  result: EventReplayOutcome | UnresolvedOutcome | Failed
  events: number
  queued: number
  warnings: string[]
  totalMs: number
}

/**
 * Re-emits one event as a new one: same asset, extra, partition key and source attribution, a
 * fresh timestamp, the same alias links, its consumers queued again (so a downstream DAG runs), and
 * the provenance in Airflow's audit log.
 */
export async function reemitEvent(
  airflow: Pick<AirflowDatabase<ReemitStore>, 'db' | 'store'>,
  spec: EventSpec,
  settings: EventReplaySettings,
): Promise<EventItem> {
  const {db, store} = airflow
  const identity = auditIdentity()
  const {result, totalMs} = await runTransaction<EventReplayOutcome>(db, {
    locals: {
      lockTimeoutMs: settings.lockTimeoutMs,
      statementTimeoutMs: settings.statementTimeoutMs,
      applicationName: `airlock:replay:event:${spec.originalEventId ?? spec.label}`,
    },
    dryRun: settings.dryRun,
    unknownCommitAdvice: 'check for the new event before running again (or run with --skip-existing)',
    async run(tx) {
      if (spec.skipIfSince) {
        const existing = await store.findMatchingEvent(tx, spec, spec.skipIfSince)
        if (existing !== undefined) return {rollback: {outcome: 'skipped_existing', existingEventId: existing}}
      }

      // The copy belongs to the try its original belongs to, and its audit row says so: stamped
      // now, after that try's last write, it would otherwise pass for a later try's event (an
      // audit would then count a rerun's own event as its duplicate, or a rerun's lost event as
      // present). Unknown when the evidence cannot tell: the row then names no try.
      const tryNumber = spec.source
        ? await store.readEventTry(tx, spec.source, spec.originalEventId, spec.originalTimestamp)
        : null
      const newEventId = await store.insertEventCopy(tx, spec)
      await store.insertAliasEventLinks(
        tx,
        spec.aliasIds.map((aliasId) => ({aliasId, eventId: newEventId})),
      )
      const source = spec.source
      // One entry per alias the event went through, so every alias's consumers are queued.
      const throughAliases =
        spec.aliasIds.length > 0
          ? spec.aliasIds.map((aliasId) => ({eventId: newEventId, assetId: spec.assetId, aliasId}))
          : [{eventId: newEventId, assetId: spec.assetId, aliasId: null}]
      const {decisions} = await store.queueConsumers(
        tx,
        throughAliases,
        spec.partitionKey,
        source?.dagId && source.taskId ? {dagId: source.dagId, taskId: source.taskId} : null,
        null,
      )
      const extra = reemitAuditExtra(spec, settings, identity, newEventId, tryNumber)
      const {logId} = await store.insertLogRow(
        tx,
        {
          dagId: source?.dagId ?? null,
          taskId: source?.taskId ?? null,
          runId: source?.runId ?? null,
          mapIndex: source?.mapIndex ?? null,
          tryNumber,
          logicalDate: spec.logicalDate,
          owners: settings.actor ?? identity.os_user,
        },
        replayLogEvent,
        JSON.stringify(extra),
      )
      return {
        commit: {outcome: 'replayed', newEventId, logId, queued: decisions.filter((d) => d.kind === 'queued').length},
      }
    },
    async wasCommitted(ex, outcome) {
      return outcome.outcome === 'replayed' && (await store.countEvents(ex, [outcome.newEventId])) > 0
    },
  })
  const warnings = (spec.unknownAliases ?? []).map(
    (alias) => `${spec.label}: asset alias ${alias} does not exist here; the event is emitted without that link`,
  )
  const replayed = result.outcome === 'replayed' ? result : undefined
  return {
    label: spec.label,
    names: {eventId: spec.originalEventId, asset: spec.assetName, source: spec.source},
    result,
    events: replayed ? 1 : 0,
    queued: replayed?.queued ?? 0,
    warnings,
    totalMs,
  }
}

/**
 * The audit row's extra of a re-emitted event: what was copied, from where, and the try the copy
 * belongs to (`event_ids` with the row's try_number name it, as complete's and replay's rows do).
 */
function reemitAuditExtra(
  spec: EventSpec,
  settings: EventReplaySettings,
  identity: {host_name: string; os_user: string},
  newEventId: number,
  tryNumber: number | null,
) {
  return {
    host_name: identity.host_name,
    airlock: {
      version: settings.airlockVersion,
      command: 'replay-events',
      mode: settings.mode,
      os_user: identity.os_user,
      from: spec.label,
      source_event_id: spec.originalEventId,
      new_event_id: newEventId,
      event_ids: [newEventId],
      try_number: tryNumber,
      asset: spec.assetName,
      // airlock undo deletes the new event and the queue rows this transaction created.
      before: {version: 1},
    },
  }
}
