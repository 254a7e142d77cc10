import type {AirflowSchema} from '../airflow/schema.js'
import {describeEvidence, verdictOf, type TryVerdict} from '../airflow/tryEvidence.js'
import {readLimits} from '../engine/engine.js'
import {retryingReads} from '../engine/retry.js'
import {selectTaskInstances} from '../selection/selection.js'
import type {ClassifiedEvent, EventAuditStore} from '../store/families/audit.js'
import type {EventFilter} from '../store/types.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {SelectedTaskInstance, SelectionStore} from '../store/families/selection.js'

/** The store families audit-events uses: its own reads, and the selection of tries missing events. */
type AuditEventsStore = EventAuditStore & SelectionStore

export const eventClasses = [
  'ok',
  'external',
  'orphan_missing_ti',
  'orphan_not_success',
  'superseded_by_rerun',
  'duplicate',
  'duplicate_unknown',
  'unattributed',
  'missing_events',
  'missing_unknown',
  'not_emitted',
  'queue_orphan',
] as const
export type AuditClass = (typeof eventClasses)[number]
/** Classes that are findings; ok, external, superseded_by_rerun and not_emitted are legitimate. */
export const findingClasses: readonly AuditClass[] = [
  'orphan_missing_ti',
  'orphan_not_success',
  'duplicate',
  'duplicate_unknown',
  'unattributed',
  'missing_events',
  'missing_unknown',
  'queue_orphan',
]
export const defaultFailOn: readonly AuditClass[] = [
  'duplicate',
  'orphan_missing_ti',
  'orphan_not_success',
  'missing_events',
]

/** The audit class of a successful try missing its events, by what its evidence says. */
const missingClassOf: Record<TryVerdict, AuditClass> = {
  lost: 'missing_events',
  unknown: 'missing_unknown',
  deliberate: 'not_emitted',
}

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
  /** Extras a dag run had consumed when the audit read them: they stay whatever --fix decides. */
  consumed: number
}

export type EventAuditFilter = EventFilter

/** Rows per FETCH of the classification cursor: one batch in memory at a time. */
export const classifyBatch = 5000

/**
 * How the classification pass reads: one transaction holding one cursor. Its first FETCH waits for
 * the whole sort (about 35 s for 10 million events on two cores), so the statement timeout is an
 * hour, not the five minutes of other reads; between FETCHes airlock only writes findings, so
 * five idle minutes mean a reader that stopped (a paused pager), and the server ends the session.
 */
export const classifyPassLimits = {
  lockTimeoutMs: readLimits.lockTimeoutMs,
  statementTimeoutMs: 3_600_000,
  idleInTransactionTimeoutMs: 300_000,
}

export interface AuditProgress {
  /** Events with a source task instance in the selection: what the pass classifies. */
  total: number
  /** Classified so far; 0 while the server reads and sorts. */
  done: number
}

/**
 * Classifies every event in the selection (each exactly one class, with its evidence), finds
 * successful task instances missing their events and orphaned queue rows. The events are classified
 * in one streamed pass (a server-side cursor over one statement: Airflow has no index on the source
 * columns, so anything paged by source key would scan the table once per page); findings are
 * handed to `onFinding` as they arrive and memory holds one batch.
 */
export async function auditEvents(
  airflow: Pick<AirflowDatabase<AuditEventsStore>, 'db' | 'store' | 'schema'>,
  options: {
    filter: EventAuditFilter
    windowSeconds: number
    collectGroups: boolean
    batch?: number
    onProgress?: (progress: AuditProgress) => void
    /** What the audit does next, after the classification pass (for the progress line). */
    onStage?: (text: string) => void
  },
  onFinding: (finding: Finding) => void,
): Promise<{counts: Record<AuditClass, number>; groups: DuplicateGroup[]}> {
  const counts = Object.fromEntries(eventClasses.map((c) => [c, 0])) as Record<AuditClass, number>
  const groups = new Map<number, {extras: number[]; consumed: number}>()
  const {filter} = options
  const {store, db} = airflow
  const pool = db.executor
  const fixSays = fixSuggestion(airflow.schema.capabilities)
  const sources = await store.countEventSources(pool, filter)
  counts.external = sources.external
  const progress = options.onProgress ?? (() => undefined)
  progress({total: sources.sourced, done: 0})

  if (sources.sourced > 0) {
    let done = 0
    await db.transaction({...classifyPassLimits, applicationName: 'airlock:audit-events'}, async (tx) => {
      for await (const batch of store.streamClassifiedEvents(
        tx,
        filter,
        options.windowSeconds,
        options.batch ?? classifyBatch,
      )) {
        for (const event of batch) {
          counts[event.class]++
          if (event.class === 'ok' || event.class === 'superseded_by_rerun') continue
          onFinding(eventFinding(event, fixSays))
          if (event.class === 'duplicate' && options.collectGroups) collectDuplicate(groups, event)
        }

        done += batch.length
        progress({total: sources.sourced, done})
      }
    })
  }

  // The same selection as replay-events' missing mode, each missing outlet of a try with its own
  // evidence (as the replay decides it): missing_events is exactly what a replay writes by default
  // (the events were written, then lost), missing_unknown what it writes only with
  // --include-unknown, and an outlet of a try marked success on purpose is not_emitted. An outlet
  // whose event may be the try's is missing_unknown on its own: the try's other outlets keep the
  // try's evidence, so one outlet's doubt never hides another's certain loss.
  const selection = {
    dagId: filter.sourceDagId,
    runIds: [],
    taskIds: [],
    since: filter.since,
    until: filter.until,
    timeColumn: 'end_date' as const,
    states: ['success'],
    missingEventsOnly: true,
  }
  if (filter.assets.length === 0) {
    options.onStage?.('looking for successful task instances missing their events…')
    for await (const {tiId, row} of selectTaskInstances(store, retryingReads(db), selection)) {
      for (const finding of missingFindings(tiId, row)) {
        counts[finding.class]++
        if (finding.class !== 'not_emitted') onFinding(finding)
      }
    }
  }

  for (const orphan of await store.readQueueOrphans(pool)) {
    counts.queue_orphan++
    onFinding({...blank('queue_orphan'), evidence: `${orphan.kind}: ${orphan.detail}`})
  }

  return {counts, groups: [...groups].map(([kept, group]) => ({kept, ...group}))}
}

/**
 * A selected try's missing outlets as findings, one per outlet on its own evidence: an absent one
 * on the try's, a doubtful one (an event may be the try's) as unattributed_event.
 */
function missingFindings(tiId: string, row: SelectedTaskInstance | undefined): Finding[] {
  const tryKind = row?.evidence ?? 'unknown'
  // The page reads its outlets in the statement that selected it, so a row has one at least;
  // without them, one finding on the try's evidence.
  const read = row?.missingOutlets ?? []
  const outlets: Array<{asset: string | null; doubtful: boolean}> =
    read.length > 0 ? read : [{asset: null, doubtful: false}]
  return outlets.map((outlet) => {
    const kind = outlet.doubtful ? 'unattributed_event' : tryKind
    const cls = missingClassOf[verdictOf[kind]]
    const which = outlet.asset === null ? 'an active declared outlet' : `active declared outlet ${outlet.asset}`
    return {
      ...blank(cls),
      ti_id: tiId,
      asset: outlet.asset,
      source_dag_id: row?.dagId ?? null,
      source_run_id: row?.runId ?? null,
      source_task_id: row?.taskId ?? null,
      source_map_index: row?.mapIndex ?? null,
      evidence: `${which} has no event of its last try; ${describeEvidence({kind, log: null})}`,
      suggestion:
        cls === 'missing_events'
          ? `airlock replay-events --ti-id ${tiId}`
          : `airlock replay-events --include-unknown --ti-id ${tiId}`,
    }
  })
}

/** --fix's groups: each duplicate under the event its group keeps, consumed ones counted. */
function collectDuplicate(groups: Map<number, {extras: number[]; consumed: number}>, event: ClassifiedEvent): void {
  if (event.keptId === null) return
  const group = groups.get(event.keptId) ?? {extras: [], consumed: 0}
  group.extras.push(event.id)
  if (event.consumed) group.consumed++
  groups.set(event.keptId, group)
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

/**
 * What --fix will do with a duplicate, as far as the release lets the audit say: it leaves one a
 * run can still take (a consumer with a partitioned timetable, 3.2+; from 3.4 a queue row naming
 * it), which only its own read under its locks can tell.
 */
function fixSuggestion({
  partitionedTimetables,
  queueShape,
}: Pick<AirflowSchema['capabilities'], 'partitionedTimetables' | 'queueShape'>): string {
  const pending = [
    ...(partitionedTimetables ? ['a consumer with a partitioned timetable'] : []),
    ...(queueShape === 'per_event' ? ['a queue row naming it'] : []),
  ]
  return pending.length === 0
    ? 'airlock audit-events --fix removes it'
    : `airlock audit-events --fix removes it, unless a run can still take it (${pending.join(', or ')})`
}

function eventFinding(event: ClassifiedEvent, fixSays: string): Finding {
  const {source} = event
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
    evidence: eventEvidence(event) + (event.consumed ? '; consumed by a dag run' : ''),
    suggestion:
      event.class === 'duplicate'
        ? event.consumed
          ? 'consumed: left alone'
          : fixSays
        : event.class === 'unattributed'
          ? 'never removed by airlock: find out which try wrote it (the task logs of both tries) before deleting it'
          : event.class === 'duplicate_unknown'
            ? "never removed by airlock: compare the task's outlets in the DAG file the try ran (an asset declared directly and by Asset.ref gets one event per declaration) before deleting it"
            : null,
  }
}

/** Why an event is in its class, in the terms of the try it belongs to (store/postgres/attribution.ts). */
function eventEvidence(event: ClassifiedEvent): string {
  const {source, attribution} = event
  const key = `${source.dagId}/${source.runId}/${source.taskId}[${source.mapIndex ?? -1}]`
  const {tryNumber, candidate, basis, successTry} = attribution
  switch (event.class) {
    case 'orphan_missing_ti':
      return `no task_instance or task_instance_history row for ${key}`
    case 'orphan_not_success':
      return successTry === null
        ? `no try of ${key} succeeded (current or archived)`
        : `it belongs to try ${tryNumber} of ${key} (${basisText(basis)}), which did not succeed; the last successful try is ${successTry}`
    case 'unattributed':
      if (basis === 'unknown_try')
        return `an airlock audit row names it without a try (a re-emitted copy of an event of ${key} whose own try could not be told): it may be try ${candidate}'s or an earlier one's`
      return basis === 'conflict'
        ? `airlock audit rows of more than one try of ${key} name it (the latest: try ${candidate}): which try it belongs to cannot be told`
        : `stamped after the last write of the try before try ${candidate} of ${key} and before try ${candidate} started, and no airlock audit row names it: a late copy of the earlier try's event or try ${candidate}'s own, the database cannot tell`
    case 'duplicate':
      return `same asset, extra, partition key and aliases as event ${event.keptId} (kept), both of try ${tryNumber} (the last successful one)${declaredText(event.declared)}`
    case 'duplicate_unknown':
      return `same asset, extra, partition key and aliases as event ${event.keptId} (kept), both of try ${tryNumber} (the last successful one), but the database cannot tell whether the try's outlets called for it (an asset declared directly and by Asset.ref gets one event per declaration): ${event.declared && !event.declared.known ? event.declared.reason : 'unknown'}`
    default:
      return ''
  }
}

/** How many events of that content the try's declared outlets call for, when the serialized DAG says. */
const declaredText = (declared: ClassifiedEvent['declared']): string =>
  declared?.known
    ? `; its declared outlets call for ${declared.count} event${declared.count === 1 ? '' : 's'} of that content and it is beyond them`
    : ''

const basisText = (basis: ClassifiedEvent['attribution']['basis']): string =>
  ({
    named: 'an airlock audit row of that try names it',
    window: "stamped between that try's start and its last write",
    only_try: 'its only try',
    gap: 'unattributed',
    conflict: 'unattributed',
    unknown_try: 'unattributed',
  })[basis ?? 'only_try']
