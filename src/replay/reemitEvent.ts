import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import {findMatchingEvent} from '../db/findMatchingEvent.js'
import {insertAliasEventLinks} from '../db/insertAliasEventLinks.js'
import {insertEventCopy, type EventContent} from '../db/insertEventCopy.js'
import {insertTaskLogRow} from '../db/insertTaskLogRow.js'
import {driverConnectionOf} from '../db/driverConnection.js'
import {queueConsumers} from '../db/queueConsumers.js'
import {auditIdentity} from '../protocol/auditIdentity.js'
import {runEventWrite} from '../protocol/eventWrite.js'
import type {ProtocolOutcome} from '../protocol/outcomes.js'
import {replayLogEvent} from './replayMissingWriter.js'

/** One event to emit again: by id (its stored content) or from an export line. */
export interface EventSpec extends EventContent {
  /** "event 42" or "line 7", for messages and the audit row. */
  label: string
  assetName: string
  assetUri: string
  aliasIds: number[]
  originalEventId: number | null
  logicalDate: Date | null
  owners: string | null
  /** --skip-existing: skip when the same content exists at or after this time. */
  skipIfSince: Date | null
  /** Alias names of an export line that do not exist here (the event is emitted without them). */
  unknownAliases?: string[]
}

export type EventReplayOutcome = {outcome: 'replayed'; newEventId: number; queued: number} | {outcome: 'skipped_existing'; existingEventId: number}

export interface EventReplaySettings {
  capabilities: Capabilities
  mode: 'event-id' | 'file'
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  airlockVersion: string
}

export interface EventItem {
  spec: EventSpec
  result: ProtocolOutcome<EventReplayOutcome>
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
export async function reemitEvent(knex: Knex, spec: EventSpec, settings: EventReplaySettings): Promise<EventItem> {
  const identity = auditIdentity()
  const partitionColumn = settings.capabilities.eventPartitionKey
  const {result, totalMs} = await runEventWrite<EventReplayOutcome>(
    knex,
    {
      committedOutcome: 'replayed',
      async run(trx) {
        if (spec.skipIfSince) {
          const existing = await findMatchingEvent(trx, spec, spec.skipIfSince, partitionColumn)
          if (existing !== undefined) return {outcome: 'skipped_existing', existingEventId: existing}
        }

        const newEventId = await insertEventCopy(trx, spec, partitionColumn)
        await insertAliasEventLinks(trx, spec.aliasIds.map((aliasId) => ({aliasId, eventId: newEventId})))
        const extra = {
          host_name: identity.host_name,
          airlock: {version: settings.airlockVersion, command: 'replay-events', mode: settings.mode, os_user: identity.os_user, from: spec.label, source_event_id: spec.originalEventId, new_event_id: newEventId, asset: spec.assetName},
        }
        const source = spec.source
        await insertTaskLogRow(
          trx,
          {dagId: source?.dagId ?? null, taskId: source?.taskId ?? null, runId: source?.runId ?? null, mapIndex: source?.mapIndex ?? null, tryNumber: null, logicalDate: spec.logicalDate, owners: spec.owners},
          replayLogEvent,
          JSON.stringify(extra),
        )
        // One entry per alias the event went through, so every alias's consumers are queued.
        const throughAliases = spec.aliasIds.length > 0 ? spec.aliasIds.map((aliasId) => ({eventId: newEventId, assetId: spec.assetId, aliasId})) : [{eventId: newEventId, assetId: spec.assetId, aliasId: null}]
        const decisions = await queueConsumers(await driverConnectionOf(trx), throughAliases, {
          capabilities: settings.capabilities,
          eventPartitionKey: spec.partitionKey,
        })
        return {outcome: 'replayed', newEventId, queued: decisions.filter((d) => d.kind === 'queued').length}
      },
      async wasCommitted(db, outcome) {
        if (outcome.outcome !== 'replayed') return false
        const {rows} = await db.raw<{rows: unknown[]}>('select 1 from asset_event where id = ?', [outcome.newEventId])
        return rows.length > 0
      },
    },
    {applicationName: `airlock:replay:event:${spec.originalEventId ?? spec.label}`, lockTimeoutMs: settings.lockTimeoutMs, statementTimeoutMs: settings.statementTimeoutMs, dryRun: settings.dryRun},
  )
  const replayed = result.outcome === 'replayed'
  const warnings = (spec.unknownAliases ?? []).map((alias) => `${spec.label}: asset alias ${alias} does not exist here; the event is emitted without that link`)
  return {spec, result, events: replayed ? 1 : 0, queued: replayed ? (result as {queued: number}).queued : 0, warnings, totalMs}
}
