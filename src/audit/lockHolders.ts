import {formatKey} from '../airflow/taskInstance.js'
import type {Database, Executor} from '../engine/engine.js'
import {parseSessionTag} from '../protocol/sessionTag.js'
import type {CatalogStore, SessionRow, TaskInstanceRowLock} from '../store/families/catalog.js'
import {categorise, walk, type LockNode} from './lockForest.js'

/**
 * Who holds task_instance rows, waiters or not, and which rows. pg_locks shows a row lock only
 * while someone queues for it (as a tuple lock); otherwise PostgreSQL keeps it in the row itself,
 * and what it shows is the holder's table-level intent: RowShareLock (SELECT … FOR UPDATE/SHARE,
 * including a foreign key check from another table) or RowExclusiveLock (a write) on
 * task_instance. A transaction holds rows only once it has an id (locking or writing a row takes
 * one), so holders are the sessions with both. Which rows: only pgrowlocks, a contrib extension
 * that reads the whole table, can tell; without it the report says the row is unknown rather
 * than guess, except for airlock's own sessions, whose tag names the row they lock.
 */

/** What came of asking pgrowlocks: `read`, or why not (`not_read`: installed, but nobody to name or --watch). */
export type RowLockStatus = 'read' | 'not_read' | 'not_installed' | 'not_permitted' | 'too_slow'

export interface HeldTaskInstance {
  id: string
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
  /** pgrowlocks' lock modes (`For Update`, `No Key Update`, `For Key Share`, …); empty when named by a tag. */
  modes: string[]
}

export interface HeldRows {
  /** pgrowlocks (every row it holds), application_name (airlock's tag: the row it locked), unknown. */
  source: 'pgrowlocks' | 'application_name' | 'unknown'
  task_instances: HeldTaskInstance[]
  /** Why the rows are unknown or incomplete, for the operator; null when nothing is missing. */
  note: string | null
}

export interface TaskInstanceHolder {
  pid: number
  user: string | null
  application_name: string
  state: string | null
  transaction_age_ms: number | null
  since_state_change_ms: number | null
  query: string | null
  /** Sessions waiting behind it (its tree in the report), 0 when none. */
  blocking: number
  held_rows: HeldRows
}

/**
 * pgrowlocks reads every row of task_instance (145 ms for 1M rows cached; a large table on
 * disk takes seconds): a report gives up on it after this rather than hang at 3 a.m.
 */
export const rowLockReadLimits = {statementTimeoutMs: 5000, lockTimeoutMs: 1000}

const unknownBecause: Record<Exclude<RowLockStatus, 'read'>, string> = {
  not_installed: 'row unknown (install pgrowlocks to name it)',
  not_permitted: 'row unknown (reading it with pgrowlocks needs SELECT on task_instance)',
  too_slow: `row unknown (pgrowlocks gave up: a table lock in its way over ${rowLockReadLimits.lockTimeoutMs / 1000} s, or reading task_instance over ${rowLockReadLimits.statementTimeoutMs / 1000} s)`,
  not_read:
    'row unknown (--watch does not run pgrowlocks, which reads the whole table: run audit-locks without --watch)',
}

/** Sessions whose transaction may hold task_instance rows: it has an id and a row-level lock on the table. */
export function rowLockCandidates(sessions: readonly SessionRow[]): SessionRow[] {
  return sessions.filter((s) => s.backend_xid !== null && s.row_locked_tables.includes('task_instance'))
}

/** Which rows the candidates' transactions hold, from pgrowlocks where it can be asked (`wanted`). */
export async function readRowLocks(
  db: Database,
  catalog: CatalogStore,
  candidates: readonly SessionRow[],
  wanted: boolean,
): Promise<{status: RowLockStatus; rows: TaskInstanceRowLock[]}> {
  if (!(await catalog.readRowLockSupport(db.executor))) return {status: 'not_installed', rows: []}
  if (!wanted || candidates.length === 0) return {status: 'not_read', rows: []}
  const xids = candidates.map((s) => s.backend_xid!)
  try {
    const rows = await db.transaction({...rowLockReadLimits, applicationName: 'airlock:audit-locks'}, (tx) =>
      catalog.readTaskInstanceRowLocks(tx, xids),
    )
    return {status: 'read', rows}
  } catch (error) {
    const {kind} = db.classify(error)
    if (kind === 'permission') return {status: 'not_permitted', rows: []}
    if (kind === 'timeout' || kind === 'lock_timeout') return {status: 'too_slow', rows: []}
    throw error
  }
}

/**
 * The holders of one sample, longest transaction first, each with the rows it holds as far as
 * PostgreSQL can tell. A session waiting for a task_instance row is in its tree already; it is
 * listed here too only when pgrowlocks shows it holds rows of its own.
 */
export async function taskInstanceHolders(
  catalog: CatalogStore,
  pool: Executor,
  sessions: readonly SessionRow[],
  trees: readonly LockNode[],
  rowLocks: {status: RowLockStatus; rows: readonly TaskInstanceRowLock[]},
): Promise<TaskInstanceHolder[]> {
  const blocking = new Map(trees.flatMap((tree) => [...walk(tree)]).map((node) => [node.pid, node.blocked_below]))
  const tagged = rowLocks.status === 'read' ? new Map() : await namedByTag(catalog, pool, rowLockCandidates(sessions))
  return rowLockCandidates(sessions)
    .map((session) => ({session, held: heldRows(session, rowLocks, tagged)}))
    .filter(({session, held}) => categorise(session) !== 'task_instance' || held.task_instances.length > 0)
    .map(({session, held}) => ({
      pid: session.pid,
      user: session.usename,
      application_name: session.application_name,
      state: session.state,
      transaction_age_ms: since(session, session.xact_start),
      since_state_change_ms: since(session, session.state_change),
      query: session.query ? session.query.replace(/\s+/g, ' ').slice(0, 200) : null,
      blocking: blocking.get(session.pid) ?? 0,
      held_rows: held,
    }))
    .sort((a, b) => (b.transaction_age_ms ?? 0) - (a.transaction_age_ms ?? 0))
}

export interface IdleHolder {
  pid: number
  user: string | null
  application_name: string
  idle_ms: number
  transaction_age_ms: number | null
  last_query: string | null
  blocking: number
  held_rows: HeldRows
}

/** The holders idle in a transaction: they hold their rows while doing nothing. */
export function idleHolders(holders: readonly TaskInstanceHolder[]): IdleHolder[] {
  return holders
    .filter((holder) => holder.state?.startsWith('idle in transaction'))
    .map((holder) => ({
      pid: holder.pid,
      user: holder.user,
      application_name: holder.application_name,
      idle_ms: holder.since_state_change_ms ?? 0,
      transaction_age_ms: holder.transaction_age_ms,
      last_query: holder.query,
      blocking: holder.blocking,
      held_rows: holder.held_rows,
    }))
}

/** The rows as an operator reads them: `dag/run/task[map]`, a few and how many more, or why they are unknown. */
export function heldLabel(held: HeldRows, shown = 3): string {
  if (held.task_instances.length === 0) return held.note ?? 'no row'
  const names = held.task_instances
    .slice(0, shown)
    .map((ti) => formatKey({dagId: ti.dag_id, runId: ti.run_id, taskId: ti.task_id, mapIndex: ti.map_index}))
  const more = held.task_instances.length - names.length
  return `${names.join(', ')}${more > 0 ? ` and ${more} more` : ''}`
}

function heldRows(
  session: SessionRow,
  rowLocks: {status: RowLockStatus; rows: readonly TaskInstanceRowLock[]},
  tagged: ReadonlyMap<number, HeldTaskInstance>,
): HeldRows {
  if (rowLocks.status === 'read') {
    const held = rowLocks.rows
      .filter((row) => row.xids.includes(session.backend_xid!))
      .map((row) => ({
        id: row.id,
        dag_id: row.dagId,
        run_id: row.runId,
        task_id: row.taskId,
        map_index: row.mapIndex,
        modes: row.modes.filter((_, index) => row.xids[index] === session.backend_xid),
      }))
    return {
      source: 'pgrowlocks',
      task_instances: held,
      note:
        held.length > 0
          ? null
          : 'pgrowlocks found no row it holds: its transaction ended after the sample, it holds only rows it inserted, or it locked them inside a savepoint',
    }
  }

  const byTag = tagged.get(session.pid)
  if (byTag)
    return {
      source: 'application_name',
      task_instances: [byTag],
      note: "from airlock's tag, the row it locked; only pgrowlocks would name any other",
    }
  return {source: 'unknown', task_instances: [], note: unknownBecause[rowLocks.status]}
}

/**
 * airlock's protocol locks one task_instance row, its tag's, before any other, and only after
 * registering: a tagged session with a row-level lock on task_instance that does not wait for a
 * row holds that one.
 */
async function namedByTag(
  catalog: CatalogStore,
  pool: Executor,
  candidates: readonly SessionRow[],
): Promise<Map<number, HeldTaskInstance>> {
  const tags = candidates
    .filter((session) => categorise(session) !== 'task_instance')
    .map((session) => ({pid: session.pid, tag: parseSessionTag(session.application_name)}))
    .filter((entry) => entry.tag !== null)
  if (tags.length === 0) return new Map()
  const found = await catalog.findTaskInstancesById(pool, [...new Set(tags.map((t) => t.tag!.tiId))]).catch(() => [])
  const byId = new Map(found.map((row) => [row.id, row]))
  const named = new Map<number, HeldTaskInstance>()
  for (const {pid, tag} of tags) {
    const row = byId.get(tag!.tiId)
    if (row)
      named.set(pid, {
        id: row.id,
        dag_id: row.dagId,
        run_id: row.runId,
        task_id: row.taskId,
        map_index: row.mapIndex,
        modes: [],
      })
  }

  return named
}

function since(session: SessionRow, earlier: Date | null): number | null {
  return earlier ? Math.max(0, session.sampled_at.getTime() - earlier.getTime()) : null
}
