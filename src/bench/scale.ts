import {replayableKinds} from '../airflow/tryEvidence.js'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {performance} from 'node:perf_hooks'

import type {Executor, Statement} from '../engine/engine.js'
import {analyzeDatabase} from '../worlds/admin.js'
import {floorExport, openFloorClient} from '../worlds/rawFloor.js'
import {fillScaleWorld, scaleSeed, type ScaleWorldFacts} from '../worlds/scaleWorld.js'
import {clearQueue, fillConsumerQueue} from '../worlds/explainWorld.js'
import {exportPageSize} from '../export/exportEvents.js'
import {scanPageSize} from '../selection/selection.js'
import type {TaskInstanceFilter} from '../store/families/selection.js'
import {timeCommand, type ScaleCommandRow} from './commandRow.js'
import {runQueueScanFloor} from './explainAll.js'
import {timePostBackfill} from './postBackfill.js'
import type {ScratchServer} from './scratch.js'

/**
 * `bench --scale`: a production-sized world (a million task instances and ten million events by
 * default, seeded set-based), each reading command run over it as an operator runs it (a child
 * process: wall time, rows/s, peak RSS), and EXPLAIN (ANALYZE) of the statements behind them,
 * naming every sequential scan of a large table that is left.
 */
export interface ScalePlan {
  taskInstances: number
  eventsPerTi: number
  /** Task instances of the post-backfill world (timePostBackfill); 0 skips it. */
  backfillTis?: number
}

export type {ScaleCommandRow} from './commandRow.js'

export interface ScaleExplainRow {
  what: string
  ms: number
  /** Sequential scans in the plan reading 1,000 rows or more: table and rows read. */
  seqScans: Array<{table: string; rows: number}>
  /** Index scans in the plan: index and the times it was entered. */
  indexes: Array<{index: string; loops: number}>
  why: string
}

export interface ScaleReport {
  world: ScaleWorldFacts & {dags: number; seedSeconds: number}
  /** What the audit found against what the world planted. */
  audit: {counts: Record<string, number>; planted: ScaleWorldFacts['planted']}
  commands: ScaleCommandRow[]
  /** export-events beside its floor, the same lines through one COPY … TO STDOUT (floorExport), run back to back. */
  exportFloor: {lines: number; floorSeconds: number; exportSeconds: number}
  /** explain --all beside its floor (queueScanFloor.ts: the queue and the references scanned), both child processes; rows: the queue's. */
  explainFloor: {rows: number; scanSeconds: number; explainSeconds: number}
  explain: ScaleExplainRow[]
}

type Scratch = Awaited<ReturnType<ScratchServer['create']>>

export async function runScale(
  server: ScratchServer,
  plan: ScalePlan,
  progress: (line: string) => void,
): Promise<ScaleReport> {
  const seed = scaleSeed(plan.taskInstances)
  progress(
    `scale: seeding ${seed.dags * seed.runs * seed.tasks} task instances in ${seed.dags} DAGs, ${plan.eventsPerTi} events each…`,
  )
  const started = Date.now()
  const scratch = await server.create({seed, poolSize: 2})
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-bench-scale-'))
  let dropped = false
  try {
    const facts = await fillScaleWorld(scratch.db.knex, {
      eventsPerTi: plan.eventsPerTi,
      retryEvery: 100,
      duplicateEvery: 1000,
      missingEvery: 2000,
      orphans: 1000,
    })
    await analyzeDatabase(scratch.db.knex)
    const world = {...facts, dags: seed.dags, seedSeconds: (Date.now() - started) / 1000}
    const {commands, summary, day, exportFloor, explainFloor} = await timeCommands(scratch, facts, dir, progress)
    progress('scale: EXPLAIN (ANALYZE) of the statements behind them…')
    const explain = await explainStatements(scratch, day)
    await scratch.drop()
    dropped = true
    if (plan.backfillTis) commands.push(...(await timePostBackfill(server, plan.backfillTis, progress)))
    return {
      world,
      audit: {counts: summary.counts, planted: facts.planted},
      commands,
      exportFloor,
      explainFloor,
      explain,
    }
  } finally {
    await fs.rm(dir, {recursive: true, force: true})
    if (!dropped) await scratch.drop()
  }
}

/** Each command over the world as an operator runs it, timed as a whole process with its peak RSS. */
async function timeCommands(
  scratch: Scratch,
  facts: ScaleWorldFacts,
  dir: string,
  progress: (line: string) => void,
): Promise<{
  commands: ScaleCommandRow[]
  summary: {counts: Record<string, number>}
  day: Day
  exportFloor: ScaleReport['exportFloor']
  explainFloor: ScaleReport['explainFloor']
}> {
  const url = scratch.url
  const commands: ScaleCommandRow[] = []
  const run = (
    key: string,
    what: string,
    args: string[],
    rows: number,
    accepted: number[] = [0],
    stdoutFile?: string,
  ) => timeCommand(commands, what, args, rows, {key, accepted, progress, ...(stdoutFile ? {stdoutFile} : {})})

  // Exit 6: the planted findings.
  const auditOut = path.join(dir, 'audit.ndjson')
  await run(
    'audit-events',
    `audit-events over ${facts.events} events (--ndjson)`,
    ['audit-events', '--database-url', url, '--ndjson'],
    facts.events,
    [6],
    auditOut,
  )
  const summary = JSON.parse((await fs.readFile(auditOut, 'utf8')).trimEnd().split('\n').at(-1)!) as {
    counts: Record<string, number>
  }
  await fs.rm(auditOut)
  await run(
    'export-events',
    `export-events of ${facts.events} events`,
    ['export-events', '--database-url', url, '--output', path.join(dir, 'export.ndjson')],
    facts.events,
  )
  await fs.rm(path.join(dir, 'export.ndjson'), {force: true})
  const exportFloor = await timeExportFloor(url, path.join(dir, 'floor.ndjson'), commands.at(-1)!.seconds, progress)
  const explainFloor = await timeExplainAll(scratch, commands, progress)
  // A dry run over a window, across every DAG (--all-dags needs a filter to mean it).
  const overWindow = (command: string, since: Date, until?: Date) => [
    command,
    '--database-url',
    url,
    '--all-dags',
    '--since',
    since.toISOString(),
    ...(until ? ['--until', until.toISOString()] : []),
    '--dry-run',
    '--yes',
    '--ndjson',
  ]
  await run(
    'replay-events --dry-run, every task instance',
    `replay-events missing mode over all ${facts.taskInstances} task instances (--dry-run)`,
    overWindow('replay-events', new Date(0)),
    facts.taskInstances,
  )
  // One day of end dates: a twentieth of the world.
  const day = await oneDay(scratch.db.executor)
  await run(
    'replay-events --dry-run, one day',
    `replay-events missing mode, one day of end dates (${day.tis} task instances, --dry-run)`,
    overWindow('replay-events', day.since, day.until),
    day.tis,
  )
  await run(
    'complete --dry-run, one day of runs',
    `complete, the newest day of runs by run_after (${day.runTis} running task instances, --dry-run)`,
    overWindow('complete', day.runSince, day.runUntil),
    day.runTis,
  )
  return {commands, summary, day, exportFloor, explainFloor}
}

/**
 * explain --all over a queue that holds a row for every asset each consumer is scheduled on (one
 * asset short, so each waits), beside its floor run the same way (a child process): a plain scan
 * of the queue and the references. The rows go again after: the commands after it are timed on
 * the world as it was.
 */
async function timeExplainAll(
  scratch: Scratch,
  commands: ScaleCommandRow[],
  progress: (line: string) => void,
): Promise<ScaleReport['explainFloor']> {
  const queue = await fillConsumerQueue(scratch.db.knex)
  await timeCommand(
    commands,
    `explain --all over ${queue.dags} consumer DAGs, ${queue.rows} queue rows (--ndjson)`,
    ['explain', '--database-url', scratch.url, '--all', '--ndjson'],
    queue.rows,
    {key: 'explain --all', progress},
  )
  const explainSeconds = commands.at(-1)!.seconds
  const scanSeconds = (await runQueueScanFloor(scratch.url)).seconds
  await clearQueue(scratch.db.knex)
  return {rows: queue.rows, scanSeconds, explainSeconds}
}

/** The export's floor right after the export itself, into a file on the same disk, which is then removed. */
async function timeExportFloor(
  url: string,
  file: string,
  exportSeconds: number,
  progress: (line: string) => void,
): Promise<ScaleReport['exportFloor']> {
  progress('scale: the export floor, one COPY … TO STDOUT of the same lines…')
  const client = await openFloorClient(url)
  try {
    const started = performance.now()
    const {lines} = await floorExport(client, file)
    return {lines, floorSeconds: (performance.now() - started) / 1000, exportSeconds}
  } finally {
    await client.end()
    await fs.rm(file, {force: true})
  }
}

interface Day {
  since: Date
  until: Date
  tis: number
  runSince: Date
  runUntil: Date
  runTis: number
}

async function oneDay(ex: Executor): Promise<Day> {
  const [row] = await ex.query<{end_day: Date; run_day: Date; tis: string; run_tis: string}>({
    text: `with d as (select date_trunc('day', max(end_date)) as end_day, date_trunc('day', max(r.run_after)) as run_day
                        from task_instance, (select max(run_after) as run_after from dag_run) r)
           select d.end_day, d.run_day,
                  (select count(*) from task_instance where end_date >= d.end_day and end_date < d.end_day + interval '1 day') as tis,
                  (select count(*) from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
                    where dr.run_after >= d.run_day and dr.run_after < d.run_day + interval '1 day') as run_tis
             from d`,
  })
  const day = 86_400_000
  return {
    since: row!.end_day,
    until: new Date(row!.end_day.getTime() + day),
    tis: Number(row!.tis),
    runSince: row!.run_day,
    runUntil: new Date(row!.run_day.getTime() + day),
    runTis: Number(row!.run_tis),
  }
}

/**
 * Runs the store's own statements under EXPLAIN (ANALYZE, FORMAT JSON) through an executor that
 * rewrites each one: what is measured is exactly the text the commands send.
 */
async function explainStatements(scratch: Scratch, day: Day): Promise<ScaleExplainRow[]> {
  const {store} = scratch.airflow
  const rows: ScaleExplainRow[] = []
  const explainOf = async (what: string, why: string, work: (ex: Executor) => Promise<unknown>) => {
    rows.push(await explained(scratch, what, why, work))
  }

  const all = {assets: []}
  const missing: TaskInstanceFilter = {
    runIds: [],
    taskIds: [],
    timeColumn: 'end_date',
    states: ['success'],
    missingEventsOnly: true,
    evidence: replayableKinds({}),
  }
  await explainOf(
    'audit-events: count of sourced and external events',
    'one scan for the total the progress line counts toward',
    (ex) => store.countEventSources(ex, all),
  )
  await explainOf(
    'audit-events: the classification pass (one statement)',
    'Airflow has no index on the source columns: the pass reads asset_event in full, once for the keys and once for the events, and sorts once',
    // The explaining executor answers the DECLARE with its plan and every FETCH with no rows.
    (ex) => store.streamClassifiedEvents(ex, all, 600, 5000).next(),
  )
  await explainOf('export-events: one page of 5,000 events', 'keyset on asset_event_pkey', (ex) =>
    store.readEventLinePage(ex, {assets: [], afterId: 0, limit: exportPageSize}),
  )
  await explainOf(
    'missing events: the first page over every task instance',
    "no index on end_date: every successful task instance is read (a sequential scan or ti_state, as the planner prefers), its outlets joined by hash; each then reads its try's audit rows (idx_log_task_instance, idx_log_event) and probes its own events (asset_event_pkey for the ids an audit row names, else idx_asset_id_timestamp)",
    (ex) => store.selectTaskInstancePage(ex, missing, undefined, scanPageSize),
  )
  await explainOf(
    'missing events: one day of end dates',
    'task_instance has no index on end_date: the day is filtered out of every successful task instance, the probes only for the day',
    (ex) => store.selectTaskInstancePage(ex, {...missing, since: day.since, until: day.until}, undefined, scanPageSize),
  )
  await explainOf(
    'complete --since/--until: one page of runs, then their task instances',
    'idx_dag_run_run_after, then ti_dag_run per run',
    async (ex) => {
      const filter: TaskInstanceFilter = {
        runIds: [],
        taskIds: [],
        since: day.runSince,
        until: day.runUntil,
        timeColumn: 'run_after',
      }
      await store.selectRunPage(ex, filter, undefined, 200)
      const runs = await scratch.db.executor.query<{dag_id: string; run_id: string}>({
        text: 'select dag_id, run_id from dag_run where run_after >= $1 and run_after < $2 order by run_after, id limit 200',
        values: [day.runSince, day.runUntil],
      })
      await store.selectTaskInstanceIdsOfRuns(
        ex,
        filter,
        runs.map((r) => ({dagId: r.dag_id, runId: r.run_id})),
        undefined,
        1000,
      )
    },
  )
  return rows
}

/** One piece of work's statements under EXPLAIN ANALYZE: total time, big sequential scans, index entries. */
async function explained(
  scratch: Scratch,
  what: string,
  why: string,
  work: (ex: Executor) => Promise<unknown>,
): Promise<ScaleExplainRow> {
  const plans: PlanNode[] = []
  let ms = 0
  const ex: Executor = {
    async query<Row>(statement: Statement): Promise<Row[]> {
      const text = statement.text.replace(/^declare \w+ no scroll cursor for /, '')
      if (/^(set local|fetch|close)\b/.test(text)) return []
      const [result] = await scratch.db.executor.query<{
        'QUERY PLAN': Array<{Plan: PlanNode; 'Execution Time': number}>
      }>({
        text: `explain (analyze, format json) ${text}`,
        values: statement.values,
      })
      const plan = result!['QUERY PLAN'][0]!
      plans.push(plan.Plan)
      ms += plan['Execution Time']
      return []
    },
  }
  await work(ex)
  const nodes = plans.flatMap(flatten)
  return {
    what,
    ms,
    seqScans: nodes
      .filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] !== undefined)
      // Rows read: those returned and those the scan's filter dropped, over every loop.
      .map((n) => ({
        table: n['Relation Name']!,
        rows: Math.round(((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1)),
      }))
      .filter((scan) => scan.rows >= 1000),
    indexes: nodes
      .filter((n) => n['Index Name'] !== undefined)
      .map((n) => ({index: n['Index Name']!, loops: n['Actual Loops'] ?? 1})),
    why,
  }
}

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  Plans?: PlanNode[]
}

const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)]
