import {formatKey} from '../airflow/taskInstance.js'
import type {Database, Executor} from '../engine/engine.js'
import {sleep} from '../engine/retry.js'
import {adviseOn, lockSettingNames, type SettingReport} from '../report/settingsAdvice.js'
import {percentile} from '../report/stats.js'
import type {CatalogStore, SessionRow} from '../store/families/catalog.js'
import {catalogFor} from '../store/openStore.js'
import {buildForest, taskInstanceTuple, tupleKey, walk, type LockNode, type TupleLookup} from './lockForest.js'
import {
  heldLabel,
  idleHolders,
  readRowLocks,
  rowLockCandidates,
  taskInstanceHolders,
  type IdleHolder,
  type RowLockStatus,
  type TaskInstanceHolder,
} from './lockHolders.js'

export type Severity = 'info' | 'warning' | 'critical'
export const severityRank: Record<Severity, number> = {info: 0, warning: 1, critical: 2}

export interface LockThresholds {
  warnWaitMs: number
  critWaitMs: number
  warnBlocked: number
  critIdleMs: number
}

/** Defaults as the established tools set them: a wait over 1 s is worth a look, over 30 s an incident. */
export const defaultThresholds: LockThresholds = {
  warnWaitMs: 1000,
  critWaitMs: 30_000,
  warnBlocked: 3,
  critIdleMs: 10_000,
}

export interface Finding {
  severity: Severity
  code: string
  pid: number | null
  message: string
}

export interface Aggregate {
  key: string
  /** by_task_instance: dag/run/task[map] of the task instance whose id is `key`, when known. */
  task_instance?: string | null
  samples: number
  max_wait_ms: number
  p95_wait_ms: number
}

export interface LockAudit {
  sampling: {samples: number; interval_ms: number; started_at: string; finished_at: string; shown_sample: number}
  visibility: {can_monitor: boolean; hidden_sessions: number; note: string | null; pgrowlocks: RowLockStatus}
  trees: LockNode[]
  queue_contention: Array<Pick<LockNode, 'pid' | 'wait_ms' | 'query' | 'application_name'>>
  /** Every session holding task_instance row locks, active or idle, waited on or not, with the rows it holds where known. */
  task_instance_holders: TaskInstanceHolder[]
  idle_in_transaction: IdleHolder[]
  aggregates: {by_task_instance: Aggregate[]; by_query: Aggregate[]; roots_seen: number; max_blocked: number}
  settings: SettingReport[]
  deadlocks: {total: number; delta: number}
  findings: Finding[]
  max_severity: Severity | null
}

/**
 * Samples the database's sessions `samples` times, `intervalMs` apart, and reports the blocking
 * forest of the worst sample, who holds task_instance row locks in it (which rows, from
 * pgrowlocks, read once after the samples unless `readRowLocks` is false), queue contention,
 * per-TI and per-query wait statistics across the window, and the settings that decide how long
 * any of it can last.
 */
export async function auditLocks(
  db: Database,
  options: {samples: number; intervalMs: number; thresholds: LockThresholds; readRowLocks?: boolean},
): Promise<LockAudit> {
  // Lock audits need no Airflow version: they read the server's catalog and sessions only.
  const catalog = catalogFor(db)
  const pool = db.executor
  const server = await catalog.readServerInfo(pool)
  const deadlocksBefore = await catalog.readDeadlockCount(pool)
  const started = new Date()
  const waits: Waits = {byTi: new Map(), byQuery: new Map(), tiKeys: new Map()}
  const rootsSeen = new Set<string>()
  let worst: {forest: LockNode[]; sessions: SessionRow[]; blocked: number; index: number} | null = null
  let last: SessionRow[] = []
  for (let index = 0; index < options.samples; index++) {
    if (index > 0) await sleep(options.intervalMs)
    const sessions = await catalog.readLockSnapshot(pool, server)
    const forest = buildForest(sessions, await lookupTuples(catalog, pool, sessions))
    await nameTaggedTaskInstances(catalog, pool, forest)
    last = sessions
    let blocked = 0
    for (const tree of forest) {
      rootsSeen.add(`${tree.pid}:${sessions.find((s) => s.pid === tree.pid)?.xact_start?.toISOString() ?? ''}`)
      blocked += countWaits(tree, waits)
    }

    if (!worst || blocked > worst.blocked) worst = {forest, sessions, blocked, index}
  }

  const finished = new Date()
  const trees = worst?.forest ?? []
  const sessions = worst?.sessions ?? last
  const rowLocks = await readRowLocks(db, catalog, rowLockCandidates(sessions), options.readRowLocks ?? true)
  const holders = await taskInstanceHolders(catalog, pool, sessions, trees, rowLocks)
  const settings = (await catalog.readSettings(pool, lockSettingNames)).map(adviseOn)
  const deadlocks = {total: await catalog.readDeadlockCount(pool), delta: 0}
  deadlocks.delta = deadlocks.total - deadlocksBefore
  const hidden = last.filter((s) => s.query === '<insufficient privilege>').length
  const audit: LockAudit = {
    sampling: {
      samples: options.samples,
      interval_ms: options.intervalMs,
      started_at: started.toISOString(),
      finished_at: finished.toISOString(),
      shown_sample: (worst?.index ?? 0) + 1,
    },
    visibility: {
      can_monitor: server.canMonitor,
      hidden_sessions: hidden,
      note: server.canMonitor
        ? null
        : `${server.currentUser} is not a member of pg_monitor: queries, wait details and lock owners of other users' sessions are hidden (${hidden} sessions here). Grant pg_monitor to see them.`,
      pgrowlocks: rowLocks.status,
    },
    trees,
    queue_contention: trees
      .flatMap((tree) => [...walk(tree)])
      .filter((n) => n.category === 'queue')
      .map(({pid, wait_ms, query, application_name}) => ({pid, wait_ms, query, application_name})),
    task_instance_holders: holders,
    idle_in_transaction: idleHolders(holders),
    aggregates: {
      by_task_instance: aggregate(waits.byTi).map((a) => ({...a, task_instance: waits.tiKeys.get(a.key) ?? null})),
      by_query: aggregate(waits.byQuery),
      roots_seen: rootsSeen.size,
      max_blocked: worst?.blocked ?? 0,
    },
    settings,
    deadlocks,
    findings: [],
    max_severity: null,
  }
  audit.findings = judge(audit, options.thresholds)
  audit.max_severity = audit.findings.reduce<Severity | null>(
    (max, f) => (max === null || severityRank[f.severity] > severityRank[max] ? f.severity : max),
    null,
  )
  return audit
}

async function lookupTuples(
  catalog: CatalogStore,
  pool: Executor,
  sessions: readonly SessionRow[],
): Promise<TupleLookup> {
  const lookup: TupleLookup = new Map()
  for (const session of sessions) {
    const tuple = taskInstanceTuple(session)
    if (!tuple || lookup.has(tupleKey(tuple.page, tuple.tuple))) continue
    const row = await catalog.findTaskInstanceByTuple(pool, tuple.page, tuple.tuple).catch(() => undefined)
    if (row)
      lookup.set(tupleKey(tuple.page, tuple.tuple), {
        id: row.id,
        dag_id: row.dagId,
        run_id: row.runId,
        task_id: row.taskId,
        map_index: row.mapIndex,
      })
  }

  return lookup
}

/**
 * airlock's application_name tag carries a task instance's id only (a tag is at most 63 bytes):
 * name those task instances dag/run/task[map] as the rest of the report does. One query per
 * sample; a task instance gone since (a new try) keeps its id.
 */
async function nameTaggedTaskInstances(
  catalog: CatalogStore,
  pool: Executor,
  forest: readonly LockNode[],
): Promise<void> {
  const tagged = forest
    .flatMap((tree) => [...walk(tree)])
    .filter((node) => node.task_instance?.id && !node.task_instance.dag_id)
  if (tagged.length === 0) return
  const found = await catalog
    .findTaskInstancesById(pool, [...new Set(tagged.map((node) => node.task_instance!.id!))])
    .catch(() => [])
  const byId = new Map(found.map((row) => [row.id, row]))
  for (const node of tagged) {
    const row = byId.get(node.task_instance!.id!)
    if (row)
      Object.assign(node.task_instance!, {
        dag_id: row.dagId,
        run_id: row.runId,
        task_id: row.taskId,
        map_index: row.mapIndex,
      })
  }
}

function judge(audit: LockAudit, t: LockThresholds): Finding[] {
  const findings: Finding[] = []
  for (const tree of audit.trees) {
    if (tree.state?.startsWith('idle in transaction')) {
      findings.push({
        severity: 'critical',
        code: 'idle_root',
        pid: tree.pid,
        message: `pid ${tree.pid} is idle in a transaction and blocks ${tree.blocked_below} session(s)`,
      })
    } else if (tree.blocked_below >= t.warnBlocked) {
      findings.push({
        severity: 'warning',
        code: 'wide_root',
        pid: tree.pid,
        message: `pid ${tree.pid} blocks ${tree.blocked_below} sessions`,
      })
    }

    for (const node of walk(tree)) {
      if (node.wait_ms === null || node.wait_ms <= t.warnWaitMs) continue
      const severity: Severity = node.wait_ms > t.critWaitMs ? 'critical' : 'warning'
      findings.push({
        severity,
        code: 'long_wait',
        pid: node.pid,
        message: `pid ${node.pid} has waited ${(node.wait_ms / 1000).toFixed(1)} s for a ${node.category ?? 'lock'} lock`,
      })
    }
  }

  for (const holder of audit.idle_in_transaction) {
    const severity: Severity = holder.idle_ms > t.critIdleMs ? 'critical' : 'warning'
    findings.push({
      severity,
      code: 'idle_ti_holder',
      pid: holder.pid,
      message: `pid ${holder.pid} holds task_instance row locks (${heldLabel(holder.held_rows)}) idle in a transaction for ${(holder.idle_ms / 1000).toFixed(1)} s (last: ${holder.last_query ?? '?'})`,
    })
  }

  if (audit.deadlocks.delta > 0)
    findings.push({
      severity: 'warning',
      code: 'deadlocks',
      pid: null,
      message: `${audit.deadlocks.delta} deadlock(s) during the sampling window`,
    })
  for (const setting of audit.settings)
    if (setting.level === 'warning')
      findings.push({
        severity: 'info',
        code: `setting_${setting.name}`,
        pid: null,
        message: `${setting.name}: ${setting.advice}`,
      })
  if (!audit.visibility.can_monitor)
    findings.push({severity: 'info', code: 'no_pg_monitor', pid: null, message: audit.visibility.note!})
  return findings
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  map.set(key, [...(map.get(key) ?? []), value])
}

/** Wait times across the samples, by task instance and by query shape. */
interface Waits {
  byTi: Map<string, number[]>
  byQuery: Map<string, number[]>
  /** dag/run/task[map] of each task instance waited on, when the session named it or its row was read. */
  tiKeys: Map<string, string>
}

/** One sample's tree into the waits; how many of its sessions wait. */
function countWaits(tree: LockNode, waits: Waits): number {
  let blocked = 0
  for (const node of walk(tree)) {
    if (node.wait_ms === null) continue
    blocked++
    const ti = node.task_instance
    if (ti) {
      const key = ti.id ?? `${ti.dag_id}/${ti.run_id}/${ti.task_id}[${ti.map_index}]`
      push(waits.byTi, key, node.wait_ms)
      if (ti.dag_id && ti.run_id && ti.task_id) {
        const {dag_id: dagId, run_id: runId, task_id: taskId} = ti
        waits.tiKeys.set(key, formatKey({dagId, runId, taskId, mapIndex: ti.map_index ?? -1}))
      }
    }
    if (node.query) push(waits.byQuery, normaliseQuery(node.query), node.wait_ms)
  }
  return blocked
}

function aggregate(map: Map<string, number[]>): Aggregate[] {
  return [...map]
    .map(([key, values]) => ({
      key,
      samples: values.length,
      max_wait_ms: Math.max(...values),
      p95_wait_ms: percentile(values, 95),
    }))
    .sort((a, b) => b.max_wait_ms - a.max_wait_ms)
}

/** Queries grouped by shape: literals replaced, whitespace collapsed. */
export function normaliseQuery(query: string): string {
  return query
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\b\d+\b/g, '?')
    .replace(/\$\d+/g, '?')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 160)
}
