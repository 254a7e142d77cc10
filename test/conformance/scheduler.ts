import type {Knex} from 'knex'

import {compareVersions} from '../../src/airflow/revisions.js'
import type {AirflowSchema} from '../../src/airflow/schema.js'

/**
 * One pass of the scheduler's asset-triggered run creation, transcribed per release for the
 * conformance suite: `DagModel.dags_needing_dagruns` (airflow-core/src/airflow/models/dag.py) then
 * `SchedulerJobRunner._create_dag_runs_asset_triggered`
 * (airflow-core/src/airflow/jobs/scheduler_job_runner.py). It shows what a consumer DAG does with
 * the queue rows and events a success left behind: which run it gets and which events that run
 * consumes.
 *
 * Readiness is the consumer's own condition from its latest serialized DAG
 * (`ser_dag.dag.timetable.asset_condition.evaluate(statuses)`, `AssetEvaluator` in
 * airflow-core/src/airflow/assets/evaluation.py): statuses are the queued assets by (name, uri);
 * an asset is true when queued, an `asset_ref` resolves by name or uri to an active asset, an
 * alias is true when any asset linked to it is, `asset_all` / `asset_any` take all / any of their
 * objects. A DAG excluded (paused, stale, import errors, max_active_runs reached by queued and
 * running runs, and from 3.2 the cached `exceeds_max_non_backfill` flag) gets no run; the DAG rows are read `FOR NO KEY UPDATE SKIP LOCKED` (`with_row_locks(…,
 * of=DagModel, skip_locked=True)`, key_share by default since apache/airflow #42082), so a DAG row
 * another session holds in a conflicting mode is passed over this loop.
 */

export interface CreatedRun {
  dagId: string
  runId: string
  runAfter: Date
  /** dagrun_asset_event rows of the run, by event id. */
  eventIds: number[]
}

interface QueueRow {
  asset_id: number
  target_dag_id: string
  created_at: Date
  asset_event_id?: number
  name: string
  uri: string
  /** max(created_at) of the DAG's queue rows, as text to the microsecond. */
  triggered_text: string
  /** 3.4 before_lock: the referenced event's timestamp, as the first read found it. */
  event_timestamp?: Date
}

const key = (name: string, uri: string) => JSON.stringify([name, uri])

/**
 * Where a 3.4 run's event ids come from. `under_lock` (the default, what this transcription does):
 * the DAG's queue rows read again under its DAG row lock (FOR UPDATE SKIP LOCKED, as 3.2's
 * #60773 does) and their events read after it, so an event deleted before the lock is simply not
 * there. `before_lock`: the ids (and their timestamps) of the first, unlocked queue read, linked
 * to the run after the DAG row lock without reading `asset_event` again: the order an
 * implementation that carries `dags_needing_dagruns`' rows into `_create_dag_runs_asset_triggered`
 * would have. Main's 3.4 code (apache/airflow #70972) could not be read here
 * (docs/audit-events.md), so which order 3.4 has is not established; `before_lock` exists so the
 * repair is tested against the worse one.
 */
export type PerEventIds = 'under_lock' | 'before_lock'

export async function createAssetTriggeredRuns(
  knex: Knex,
  schema: AirflowSchema,
  /**
   * Called once the queue rows are read, before any DAG row is locked: a second scheduler can run
   * its whole loop here, as in the HA race of apache/airflow #54491 and #63507 (the queue is read
   * without a lock, so this loop goes on with rows the other one already consumed).
   */
  afterQueueRead?: () => Promise<void>,
  options: {perEventIds?: PerEventIds} = {},
): Promise<CreatedRun[]> {
  return knex.transaction(async (trx) => {
    // dags_needing_dagruns: every ADRQ row, statuses keyed by AssetUniqueKey(name, uri).
    const beforeLock = schema.capabilities.queueShape === 'per_event' && options.perEventIds === 'before_lock'
    const {rows: queue} = await trx.raw<{rows: QueueRow[]}>(
      // triggered_date comes from this read (`triggered_date_by_dag`), to the microsecond: a
      // JavaScript Date keeps milliseconds, and an event stamped in the same millisecond as its
      // queue row fell outside the truncated window. before_lock: each row's event timestamp too.
      `select q.*, a.name, a.uri, (max(q.created_at) over (partition by q.target_dag_id))::text as triggered_text
              ${beforeLock ? ', (select e."timestamp" from asset_event e where e.id = q.asset_event_id) as event_timestamp' : ''}
         from asset_dag_run_queue q join asset a on a.id = q.asset_id order by q.target_dag_id, q.asset_id`,
    )
    await afterQueueRead?.()
    const byDag = new Map<string, QueueRow[]>()
    for (const row of queue) byDag.set(row.target_dag_id, [...(byDag.get(row.target_dag_id) ?? []), row])

    const runs: CreatedRun[] = []
    for (const [dagId, rows] of byDag) {
      const statuses = new Set(rows.map((r) => key(r.name, r.uri)))
      const condition = await conditionOf(trx, dagId)
      if (condition === undefined || !(await evaluate(trx, condition, statuses))) continue
      // The exclusion list and the final DagModel query: a paused or stale DAG, one with import
      // errors, or one already at max_active_runs (queued + running) gets no run; its rows stay.
      // 3.2+ (apache/airflow #60006): `exceeds_max_non_backfill == expression.false()` in the same
      // WHERE clause, the scheduler's cached cap flag, whatever the DAG's runs are now.
      const flag = schema.capabilities.maxRunsFlag ? 'and d.exceeds_max_non_backfill is false' : ''
      const {rows: dags} = await trx.raw<{rows: Array<{eligible: boolean}>}>(
        // `is_paused == false()` and `has_import_errors == false()`: a NULL flag excludes the DAG too.
        `select d.is_paused is false and d.is_stale is false and d.has_import_errors is false ${flag}
                and (select count(*) from dag_run r where r.dag_id = d.dag_id and r.state in ('queued', 'running')) < d.max_active_runs as eligible
           from dag d where d.dag_id = ? for no key update of d skip locked`,
        [dagId],
      )
      if (!dags[0]?.eligible) continue

      // 3.2+ (apache/airflow #60773, "Add row lock to ADRQ before Dag run creation"; its release
      // from the thread of #68045, unverified): the DAG's queue rows are read again FOR UPDATE
      // SKIP LOCKED, newest first, triggered_date from them; none left (another scheduler took
      // them) is no run.
      // before_lock: the rows of the first read are the run's, whatever happened to them since.
      const locked = beforeLock
        ? rows
        : compareVersions(schema.behaviourVersion, '3.2.0') >= 0
          ? await lockQueue(trx, dagId)
          : rows
      if (locked.length === 0) continue
      const run =
        schema.capabilities.queueShape === 'per_event'
          ? beforeLock
            ? await perEventRunFromRead(trx, dagId, locked)
            : await perEventRun(trx, dagId, locked)
          : await windowRun(trx, schema, dagId, locked)
      if (run) runs.push(run)
    }

    return runs
  })
}

/** The DAG's queue rows, locked as 3.2's `_create_dag_runs_asset_triggered` locks them (`with_row_locks(…, skip_locked=True, key_share=False)`). */
async function lockQueue(trx: Knex.Transaction, dagId: string): Promise<QueueRow[]> {
  const {rows} = await trx.raw<{rows: QueueRow[]}>(
    `select q.*, a.name, a.uri, (max(q.created_at) over ())::text as triggered_text
       from (select * from asset_dag_run_queue where target_dag_id = ? order by created_at desc for update skip locked) as q
       join asset a on a.id = q.asset_id
      order by q.asset_id`,
    [dagId],
  )
  return rows
}

/** `dag.timetable.__var.asset_condition` of the DAG's latest serialized DAG (undefined: none, or not asset-scheduled). */
async function conditionOf(trx: Knex.Transaction, dagId: string): Promise<unknown> {
  const {rows} = await trx.raw<{rows: Array<{data: unknown}>}>(
    `select sd.data from serialized_dag sd where sd.dag_id = ? order by sd.created_at desc limit 1`,
    [dagId],
  )
  const data = rows[0]?.data
  const document = (typeof data === 'string' ? JSON.parse(data) : data) as
    {dag?: {timetable?: {__var?: {asset_condition?: unknown}}}} | undefined
  return document?.dag?.timetable?.__var?.asset_condition
}

/** AssetEvaluator.run on an encoded condition (flat, or with its fields under `__var`). */
async function evaluate(trx: Knex.Transaction, encoded: unknown, statuses: ReadonlySet<string>): Promise<boolean> {
  const node = encoded as {__type?: string; __var?: Record<string, unknown>} & Record<string, unknown>
  const fields = node.__var ?? node
  switch (node.__type) {
    case 'asset':
      return statuses.has(key(String(fields.name), String(fields.uri)))
    case 'asset_ref': {
      // resolve_ref_to_asset: the active asset of that name (or uri); unresolved is false.
      const column = fields.name !== undefined ? 'name' : 'uri'
      const {rows} = await trx.raw<{rows: Array<{name: string; uri: string}>}>(
        `select a.name, a.uri from asset a join asset_active aa on aa.name = a.name and aa.uri = a.uri where a.${column} = ?`,
        [String(fields[column])],
      )
      return rows.some((r) => statuses.has(key(r.name, r.uri)))
    }
    case 'asset_alias': {
      // expand_alias_to_assets: the assets linked to the alias.
      const {rows} = await trx.raw<{rows: Array<{name: string; uri: string}>}>(
        `select a.name, a.uri from asset_alias al join asset_alias_asset l on l.alias_id = al.id join asset a on a.id = l.asset_id where al.name = ?`,
        [String(fields.name)],
      )
      return rows.some((r) => statuses.has(key(r.name, r.uri)))
    }
    case 'asset_all':
    case 'asset_any': {
      const results: boolean[] = []
      for (const child of (fields.objects as unknown[] | undefined) ?? [])
        results.push(await evaluate(trx, child, statuses))
      return node.__type === 'asset_all' ? results.every(Boolean) : results.some(Boolean)
    }
    default:
      return false
  }
}

/**
 * Before 3.4: triggered_date = max(created_at) of the DAG's queue rows; the run consumes the events
 * of its id-referenced assets (3.1+: and of its aliases, apache/airflow #50182) in
 * (previous asset-triggered run's run_after [3.3, catchup off: else the DAG's first schedule
 * reference], triggered_date]; then the DAG's queue rows are deleted
 * (3.0/3.1 all of them; 3.2 the rows it locked FOR UPDATE SKIP LOCKED, the same rows here).
 */
async function windowRun(
  trx: Knex.Transaction,
  schema: AirflowSchema,
  dagId: string,
  rows: QueueRow[],
): Promise<CreatedRun> {
  const aliasBranch =
    compareVersions(schema.behaviourVersion, '3.1.0') < 0
      ? ''
      : `or e.id in (select l.event_id from asset_alias_asset_event l join dag_schedule_asset_alias_reference r on r.alias_id = l.alias_id where r.dag_id = :dag)`
  // 3.3 (read in 3.3.2's `_create_dag_runs_asset_triggered`, apache/airflow #68749): with no
  // previous run and the serialized DAG's `catchup` off, the window starts at the DAG's earliest
  // schedule reference.
  const catchupFloor =
    compareVersions(schema.behaviourVersion, '3.3.0') >= 0
      ? `(select min(r.created_at) from dag_schedule_asset_reference r, serialized_dag sd
           where r.dag_id = :dag and sd.id = (select s.id from serialized_dag s where s.dag_id = :dag order by s.created_at desc limit 1)
             and coalesce((sd.data -> 'dag' ->> 'catchup') = 'true', false) is false),`
      : ''
  // triggered_date as the queue read found it: a loop that read the queue before another
  // scheduler consumed it goes on with that instant (the HA race of apache/airflow #54491).
  const {rows: events} = await trx.raw<{rows: Array<{id: number}>}>(
    `with triggered as (
       select :triggered::timestamptz as at
     ), previous as (
       select max(run_after) as run_after from dag_run, triggered where dag_id = :dag and run_type = 'asset_triggered' and run_after < triggered.at
     )
     select e.id from asset_event e, previous, triggered
      where (e.asset_id in (select asset_id from dag_schedule_asset_reference where dag_id = :dag) ${aliasBranch})
        and e."timestamp" <= triggered.at
        and e."timestamp" > coalesce(previous.run_after, ${catchupFloor} '-infinity')
      order by e."timestamp", e.id`,
    {dag: dagId, triggered: rows[0]!.triggered_text},
  )
  const run = await createRun(
    trx,
    dagId,
    rows[0]!.triggered_text,
    events.map((e) => e.id),
  )
  await trx.raw(`delete from asset_dag_run_queue where target_dag_id = ? and asset_id = any(?)`, [
    dagId,
    rows.map((r) => r.asset_id),
  ])
  return run
}

/**
 * 3.4 (apache/airflow #70972): the run consumes the events its queue rows reference, minus those a
 * run of this DAG already consumed; run_after = their latest timestamp; the rows read are deleted
 * whether or not a run was created.
 */
async function perEventRun(trx: Knex.Transaction, dagId: string, rows: QueueRow[]): Promise<CreatedRun | undefined> {
  const {rows: events} = await trx.raw<{rows: Array<{id: number; timestamp: Date}>}>(
    `select e.id, e."timestamp" from asset_event e
      where e.id = any(:ids)
        and not exists (select 1 from dagrun_asset_event c join dag_run r on r.id = c.dag_run_id where r.dag_id = :dag and c.event_id = e.id)
      order by e."timestamp", e.id`,
    {ids: rows.map((r) => r.asset_event_id!), dag: dagId},
  )
  const run =
    events.length > 0
      ? await createRun(
          trx,
          dagId,
          new Date(Math.max(...events.map((e) => e.timestamp.getTime()))),
          events.map((e) => e.id),
        )
      : undefined
  await trx.raw(`delete from asset_dag_run_queue where target_dag_id = ? and asset_event_id = any(?)`, [
    dagId,
    rows.map((r) => r.asset_event_id!),
  ])
  return run
}

/**
 * 3.4 with `before_lock` ids: the events the first queue read named (minus those a run of this
 * DAG already consumed, read now), linked without reading `asset_event` again; run_after = their
 * latest timestamp as that read found it; the rows read are deleted.
 */
async function perEventRunFromRead(
  trx: Knex.Transaction,
  dagId: string,
  rows: QueueRow[],
): Promise<CreatedRun | undefined> {
  const {rows: taken} = await trx.raw<{rows: Array<{event_id: number}>}>(
    `select c.event_id from dagrun_asset_event c join dag_run r on r.id = c.dag_run_id where r.dag_id = ? and c.event_id = any(?)`,
    [dagId, rows.map((r) => r.asset_event_id!)],
  )
  const consumed = new Set(taken.map((t) => t.event_id))
  const events = rows
    .filter((r) => !consumed.has(r.asset_event_id!))
    .map((r) => ({id: r.asset_event_id!, timestamp: r.event_timestamp!}))
    .sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime() || a.id - b.id)
  const run =
    events.length > 0
      ? await createRun(
          trx,
          dagId,
          new Date(Math.max(...events.map((e) => e.timestamp.getTime()))),
          events.map((e) => e.id),
        )
      : undefined
  await trx.raw(`delete from asset_dag_run_queue where target_dag_id = ? and asset_event_id = any(?)`, [
    dagId,
    rows.map((r) => r.asset_event_id!),
  ])
  return run
}

/** dag.create_dagrun for an asset-triggered run, and its consumed_asset_events. */
async function createRun(
  trx: Knex.Transaction,
  dagId: string,
  /** The instant, or its text to the microsecond (run_after = triggered_date exactly, as Airflow writes it). */
  runAfterAt: Date | string,
  eventIds: number[],
): Promise<CreatedRun> {
  const runAfter = new Date(runAfterAt)
  const runId = `asset_triggered__${runAfter.toISOString().replace('Z', '+00:00')}_${Math.random().toString(36).slice(2, 10)}`
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>(
    `insert into dag_run (dag_id, run_id, logical_date, run_after, conf, state, queued_at, run_type, triggered_by, clear_number, log_template_id, created_dag_version_id)
     values (?, ?, null, ?::timestamptz, '{}', 'queued', clock_timestamp(), 'asset_triggered', 'ASSET', 0, (select max(id) from log_template),
             (select id from dag_version where dag_id = ? order by created_at desc limit 1))
     returning id`,
    [dagId, runId, runAfterAt, dagId],
  )
  const runPk = rows[0]!.id
  if (eventIds.length > 0)
    await trx('dagrun_asset_event').insert(eventIds.map((eventId) => ({dag_run_id: runPk, event_id: eventId})))
  return {dagId, runId, runAfter, eventIds}
}
