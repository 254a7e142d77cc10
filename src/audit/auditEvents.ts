import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import {selectTaskInstances} from '../complete/selection.js'
import {classifyEventsForKeys, type ClassifiedEvent, type EventFilter} from '../db/classifyEventsForKeys.js'
import {readQueueOrphans} from '../db/readQueueOrphans.js'
import {countExternalEvents, readEventSourceKeys} from '../db/readEventSourceKeys.js'

export const eventClasses = ['ok', 'external', 'orphan_missing_ti', 'orphan_not_success', 'superseded_by_rerun', 'duplicate', 'missing_events', 'queue_orphan'] as const
export type AuditClass = (typeof eventClasses)[number]
/** Classes that are findings; ok, external and superseded_by_rerun are legitimate. */
export const findingClasses: readonly AuditClass[] = ['orphan_missing_ti', 'orphan_not_success', 'duplicate', 'missing_events', 'queue_orphan']
export const defaultFailOn: readonly AuditClass[] = ['duplicate', 'orphan_missing_ti', 'orphan_not_success', 'missing_events']

export interface Finding {
  class: AuditClass
  event_id: number | null
  ti_id: string | null
  asset: string | null
  source_dag_id: string | null
  source_run_id: string | null
  source_task_id: string | null
  source_map_index: number | null
  timestamp: string | null
  kept_id: number | null
  consumed: boolean | null
  evidence: string
  suggestion: string | null
}

export interface DuplicateGroup {
  kept: number
  extras: number[]
}

export interface EventAuditFilter extends EventFilter {
  sourceDagId?: string | undefined
}

// Keys per page: 100 task instances' events classified per statement keeps each page small.
const keyPage = 100

/**
 * Classifies every event in the selection (each exactly one class, with its evidence), finds
 * successful task instances missing their events and orphaned queue rows. Pages over source task
 * instance keys so every duplicate group is seen whole and memory stays flat; findings are handed
 * to `onFinding` as they are found.
 */
export async function auditEvents(
  db: Knex,
  options: {filter: EventAuditFilter; windowSeconds: number; capabilities: Capabilities; collectGroups: boolean},
  onFinding: (finding: Finding) => void,
): Promise<{counts: Record<AuditClass, number>; groups: DuplicateGroup[]}> {
  const counts = Object.fromEntries(eventClasses.map((c) => [c, 0])) as Record<AuditClass, number>
  const groups = new Map<number, number[]>()
  const {filter} = options
  counts.external = await countExternalEvents(db, filter)

  let after: TaskInstanceKey | null = null
  for (;;) {
    const keys = await readEventSourceKeys(db, after, keyPage, filter)
    if (keys.length === 0) break
    for (const event of await classifyEventsForKeys(db, keys, filter, options.windowSeconds, options.capabilities)) {
      counts[event.class]++
      if (event.class === 'ok' || event.class === 'superseded_by_rerun') continue
      onFinding(eventFinding(event))
      if (event.class === 'duplicate' && options.collectGroups) groups.set(event.kept_id!, [...(groups.get(event.kept_id!) ?? []), event.id])
    }

    after = keys.at(-1)!
    if (keys.length < keyPage) break
  }

  const selection = {dagId: filter.sourceDagId, runIds: [], taskIds: [], since: filter.since, until: filter.until, timeColumn: 'end_date' as const, states: ['success'], missingEventsOnly: true}
  if (filter.assets.length === 0) {
    for await (const ref of selectTaskInstances(db, selection)) {
      counts.missing_events++
      const tiId = (ref as {tiId: string}).tiId
      onFinding({...blank('missing_events'), ti_id: tiId, evidence: 'successful task instance: an active declared outlet has no event since its last start', suggestion: `airlock replay-events --ti-id ${tiId}`})
    }
  }

  for (const orphan of await readQueueOrphans(db, options.capabilities)) {
    counts.queue_orphan++
    onFinding({...blank('queue_orphan'), evidence: `${orphan.kind}: ${orphan.detail}`})
  }

  return {counts, groups: [...groups].map(([kept, extras]) => ({kept, extras}))}
}

const blank = (cls: AuditClass): Finding => ({
  class: cls, event_id: null, ti_id: null, asset: null, source_dag_id: null, source_run_id: null, source_task_id: null, source_map_index: null, timestamp: null, kept_id: null, consumed: null, evidence: '', suggestion: null,
})

function eventFinding(event: ClassifiedEvent): Finding {
  const key = `${event.source_dag_id}/${event.source_run_id}/${event.source_task_id}[${event.source_map_index ?? -1}]`
  const evidence = {
    orphan_missing_ti: `no task_instance or task_instance_history row for ${key}`,
    orphan_not_success: `no try of ${key} succeeded (current or archived)`,
    duplicate: `same asset, extra and partition key as event ${event.kept_id} (kept), emitted for the same successful try`,
    external: '',
  }[event.class as 'orphan_missing_ti' | 'orphan_not_success' | 'duplicate' | 'external']
  return {
    class: event.class,
    event_id: event.id,
    ti_id: null,
    asset: event.asset_name,
    source_dag_id: event.source_dag_id,
    source_run_id: event.source_run_id,
    source_task_id: event.source_task_id,
    source_map_index: event.source_map_index,
    timestamp: event.timestamp.toISOString(),
    kept_id: event.kept_id,
    consumed: event.consumed,
    evidence: evidence + (event.consumed ? '; consumed by a dag run' : ''),
    suggestion: event.class === 'duplicate' ? (event.consumed ? 'consumed: left alone' : 'airlock audit-events --fix removes it') : null,
  }
}
