import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import {selectTaskInstances} from '../selection/selection.js'
import type {ClassifiedEvent, EventFilter} from '../store/airflowStore.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'

export const eventClasses = [
  'ok',
  'external',
  'orphan_missing_ti',
  'orphan_not_success',
  'superseded_by_rerun',
  'duplicate',
  'missing_events',
  'queue_orphan',
] as const
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

export type EventAuditFilter = EventFilter

/**
 * How many source keys the next page takes: each page costs a scan of asset_event (Airflow has no
 * index on the source columns) plus the classification, so few large pages beat many small ones
 * (on 1M events: 100 keys a page, about 1,000 events/s; 10,000 keys, about 8,000 events/s), while
 * a page's events stay about `targetEvents` in memory whatever a key holds: the page grows while
 * keys are light and shrinks when they are heavy.
 */
export function nextKeyPage(keys: number, events: number, bounds = {targetEvents: 50_000, min: 10, max: 20_000}): number {
  const perKey = Math.max(1, events / Math.max(1, keys))
  return Math.max(bounds.min, Math.min(bounds.max, Math.floor(bounds.targetEvents / perKey)))
}

const firstKeyPage = 1000

/**
 * Classifies every event in the selection (each exactly one class, with its evidence), finds
 * successful task instances missing their events and orphaned queue rows. Pages over source task
 * instance keys so every duplicate group is seen whole and memory stays flat; findings are handed
 * to `onFinding` as they are found.
 */
export async function auditEvents(
  airflow: Pick<AirflowDatabase, 'db' | 'store'>,
  options: {filter: EventAuditFilter; windowSeconds: number; collectGroups: boolean; firstKeyPage?: number},
  onFinding: (finding: Finding) => void,
): Promise<{counts: Record<AuditClass, number>; groups: DuplicateGroup[]}> {
  const counts = Object.fromEntries(eventClasses.map((c) => [c, 0])) as Record<AuditClass, number>
  const groups = new Map<number, number[]>()
  const {filter} = options
  const {store} = airflow
  const pool = airflow.db.executor
  counts.external = await store.countExternalEvents(pool, filter)

  let after: TaskInstanceKey | null = null
  let keyPage = options.firstKeyPage ?? firstKeyPage
  for (;;) {
    const keys = await store.readEventSourceKeys(pool, after, keyPage, filter)
    if (keys.length === 0) break
    const classified = await store.classifyEventsForKeys(pool, keys, filter, options.windowSeconds)
    for (const event of classified) {
      counts[event.class]++
      if (event.class === 'ok' || event.class === 'superseded_by_rerun') continue
      onFinding(eventFinding(event))
      if (event.class === 'duplicate' && options.collectGroups && event.keptId !== null)
        groups.set(event.keptId, [...(groups.get(event.keptId) ?? []), event.id])
    }

    after = keys.at(-1)!
    if (keys.length < keyPage) break
    keyPage = nextKeyPage(keys.length, classified.length)
  }

  const selection = {
    dagId: filter.sourceDagId,
    runIds: [],
    taskIds: [],
    since: filter.since,
    until: filter.until,
    timeColumn: 'end_date' as const,
    states: ['success'],
    missingEventsOnly: true,
    // A try marked success without events on purpose is not missing anything.
    excludeDeliberatelySilent: true,
  }
  if (filter.assets.length === 0) {
    for await (const ref of selectTaskInstances(store, pool, selection)) {
      counts.missing_events++
      const {tiId} = ref
      onFinding({
        ...blank('missing_events'),
        ti_id: tiId,
        evidence:
          'successful task instance: an active declared outlet has no event of its last try, and nothing says it succeeded without events on purpose',
        suggestion: `airlock replay-events --ti-id ${tiId}`,
      })
    }
  }

  for (const orphan of await store.readQueueOrphans(pool)) {
    counts.queue_orphan++
    onFinding({...blank('queue_orphan'), evidence: `${orphan.kind}: ${orphan.detail}`})
  }

  return {counts, groups: [...groups].map(([kept, extras]) => ({kept, extras}))}
}

const blank = (cls: AuditClass): Finding => ({
  class: cls,
  event_id: null,
  ti_id: null,
  asset: null,
  source_dag_id: null,
  source_run_id: null,
  source_task_id: null,
  source_map_index: null,
  timestamp: null,
  kept_id: null,
  consumed: null,
  evidence: '',
  suggestion: null,
})

function eventFinding(event: ClassifiedEvent): Finding {
  const {source} = event
  const key = `${source.dagId}/${source.runId}/${source.taskId}[${source.mapIndex ?? -1}]`
  const evidence = {
    orphan_missing_ti: `no task_instance or task_instance_history row for ${key}`,
    orphan_not_success: `no try of ${key} succeeded (current or archived)`,
    duplicate: `same asset, extra and partition key as event ${event.keptId} (kept), emitted for the same successful try`,
    external: '',
  }[event.class as 'orphan_missing_ti' | 'orphan_not_success' | 'duplicate' | 'external']
  return {
    class: event.class,
    event_id: event.id,
    ti_id: null,
    asset: event.assetName,
    source_dag_id: source.dagId,
    source_run_id: source.runId,
    source_task_id: source.taskId,
    source_map_index: source.mapIndex,
    timestamp: event.timestamp.toISOString(),
    kept_id: event.keptId,
    consumed: event.consumed,
    evidence: evidence + (event.consumed ? '; consumed by a dag run' : ''),
    suggestion: event.class === 'duplicate' ? (event.consumed ? 'consumed: left alone' : 'airlock audit-events --fix removes it') : null,
  }
}
