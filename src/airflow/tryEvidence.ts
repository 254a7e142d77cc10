/**
 * How a successful try whose events are missing came to be success, as far as the database can
 * tell: the strongest evidence there is (the store reads it; its SQL cites the Airflow code that
 * writes each row). Only positive evidence that the events existed makes them `lost`; a path that
 * sets SUCCESS without events on purpose makes them `deliberate`; everything else is `unknown`,
 * never guessed lost. An outlet whose event may be this try's (stamped between the previous try's
 * end and this one's start, named by no audit row) is `unattributed_event` whatever the try's
 * evidence says: neither lost nor deliberate can be told of that outlet, so it is `unknown`. It is
 * decided on its own: the try's other outlets keep the try's evidence, so one outlet's doubt never
 * hides another's certain loss.
 */
export const tryEvidenceKinds = [
  'unattributed_event',
  'worker_success',
  'airlock_events',
  'airlock_no_events',
  'marked_task',
  'marked_group',
  'marked_run',
  'dags_test',
  'unknown',
] as const

export type TryEvidenceKind = (typeof tryEvidenceKinds)[number]

export type TryVerdict = 'lost' | 'deliberate' | 'unknown'

export const verdictOf: Record<TryEvidenceKind, TryVerdict> = {
  unattributed_event: 'unknown',
  worker_success: 'lost',
  airlock_events: 'lost',
  airlock_no_events: 'deliberate',
  marked_task: 'deliberate',
  marked_group: 'deliberate',
  marked_run: 'deliberate',
  dags_test: 'deliberate',
  unknown: 'unknown',
}

/** The evidence with the `log` row it rests on (none for `unknown` and `dags_test`). */
export interface TryEvidence {
  kind: TryEvidenceKind
  log: {id: number; event: string; owner: string | null; dttm: Date | null} | null
}

/** Which kinds a replay writes: lost ones always; the others only when the operator asks. */
export function replayableKinds(options: {
  includeUnknown?: boolean | undefined
  includeMarkedSuccess?: boolean | undefined
}): TryEvidenceKind[] {
  return tryEvidenceKinds.filter((kind) => {
    const verdict = verdictOf[kind]
    return (
      verdict === 'lost' ||
      (verdict === 'unknown' && Boolean(options.includeUnknown)) ||
      (verdict === 'deliberate' && Boolean(options.includeMarkedSuccess))
    )
  })
}

const surfaces: Record<TryEvidenceKind, string> = {
  unattributed_event:
    "an event of this outlet was stamped after the previous try's last write and before this try's start, and no airlock audit row names it: it is this try's or the previous one's, and the database cannot tell (audit-events lists it as unattributed)",
  worker_success:
    "Airflow's worker reported this try success (its `success` log row): its events were written, then lost",
  airlock_events: "airlock wrote this try's events (its audit row names them): they were written, then lost",
  airlock_no_events: 'this try was marked success with airlock complete --no-events',
  marked_task:
    "this task instance was marked success through Airflow's REST API or UI (patch_task_instance), which emits no events",
  marked_group:
    "its task group was marked success through Airflow's REST API or UI (patch_task_group_instances), which emits no events",
  marked_run: "its dag run was marked success through Airflow's REST API or UI (patch_dag_run), which emits no events",
  dags_test: 'its run is an `airflow dags test` run, whose --mark-success-pattern tasks are set success without events',
  unknown:
    'nothing in the database says whether this try lost its events or was marked success without them (a bulk mark leaves no log row, and Airflow before 3.2 writes none for a worker success)',
}

/** The evidence as an operator reads it: what it means, and who and when when a log row says. */
export function describeEvidence(evidence: TryEvidence): string {
  const {log} = evidence
  const row = log
    ? ` (log row ${log.id}${log.owner ? ` by ${log.owner}` : ''}${log.dttm ? ` at ${log.dttm.toISOString()}` : ''})`
    : ''
  return surfaces[evidence.kind] + row
}
