import {parseSessionTag} from '../protocol/sessionTag.js'
import type {SessionRow} from '../store/families/catalog.js'

/**
 * Pure: sessions of one snapshot → a forest, one tree per root blocker. pg_blocking_pids gives
 * each waiter the sessions directly in its way; the roots are found by walking those edges up to
 * sessions that block others and wait for nobody. A waiter with several blockers hangs under the
 * first and names the others (`also_blocked_by`), so nobody is counted twice.
 */
export type WaitCategory = 'task_instance' | 'queue' | 'other'

export interface TaskInstanceGuess {
  id: string | null
  dag_id: string | null
  run_id: string | null
  task_id: string | null
  map_index: number | null
  /** application_name tag (exact), the waiter's tuple lock (best effort: the row may have moved), or inherited from a waiter. */
  source: 'application_name' | 'tuple_lock' | 'inferred_from_waiter'
  guess: boolean
}

export interface LockNode {
  pid: number
  application_name: string
  user: string | null
  state: string | null
  wait_event_type: string | null
  wait_event: string | null
  wait_ms: number | null
  /**
   * airlock's own sessions wait for their task instance's row lock in slices, each a transaction
   * of its own: how long its earlier slices waited (from its tag), included in wait_ms. Null for
   * any other session and wait.
   */
  waited_before_ms: number | null
  transaction_age_ms: number | null
  since_state_change_ms: number | null
  query: string | null
  client_addr: string | null
  backend_start: string | null
  /** For a root blocker: the statement that ends its session, for the operator to run (airlock never runs it). */
  terminate: string | null
  depth: number
  blocked_below: number
  category: WaitCategory | null
  task_instance: TaskInstanceGuess | null
  also_blocked_by: number[]
  children: LockNode[]
}

export type TupleLookup = Map<string, {id: string; dag_id: string; run_id: string; task_id: string; map_index: number}>

export const tupleKey = (page: number, tuple: number) => `${page}:${tuple}`

const queueWrite = /\b(insert|update|delete)\b[\s\S]*\b(asset_dag_run_queue|asset_event|asset_alias_asset_event)\b/i

/** The task_instance tuple a session waits for or queues on, if any. */
export function taskInstanceTuple(session: SessionRow): {page: number; tuple: number} | null {
  const waiting = session.waiting_on
  if (
    waiting?.locktype === 'tuple' &&
    waiting.relation === 'task_instance' &&
    waiting.page !== null &&
    waiting.tuple !== null
  )
    return {page: waiting.page, tuple: waiting.tuple}
  const held = session.held_tuples.find((t) => t.relation === 'task_instance')
  return held && session.waiting_on ? {page: held.page, tuple: held.tuple} : null
}

export function categorise(session: SessionRow): WaitCategory | null {
  if (!session.waiting_on) return null
  if (taskInstanceTuple(session)) return 'task_instance'
  if (session.query && queueWrite.test(session.query)) return 'queue'
  if (session.query && /\btask_instance\b/i.test(session.query)) return 'task_instance'
  return 'other'
}

export function identify(session: SessionRow, tuples: TupleLookup): TaskInstanceGuess | null {
  const tagged = parseSessionTag(session.application_name)
  if (tagged)
    return {
      id: tagged.tiId,
      dag_id: null,
      run_id: null,
      task_id: null,
      map_index: null,
      source: 'application_name',
      guess: false,
    }
  const tuple = taskInstanceTuple(session)
  const row = tuple ? tuples.get(tupleKey(tuple.page, tuple.tuple)) : undefined
  return row ? {...row, source: 'tuple_lock', guess: true} : null
}

const ms = (later: Date, earlier: Date | null) => (earlier ? Math.max(0, later.getTime() - earlier.getTime()) : null)

export function buildForest(sessions: readonly SessionRow[], tuples: TupleLookup): LockNode[] {
  const byPid = new Map(sessions.map((s) => [s.pid, s]))
  const waiting = sessions.filter((s) => s.blocked_by.length > 0)
  const children = new Map<number, SessionRow[]>()
  for (const waiter of waiting) {
    const parent = waiter.blocked_by[0]!
    children.set(parent, [...(children.get(parent) ?? []), waiter])
  }

  const roots = [...children.keys()].filter((pid) => !byPid.get(pid)?.blocked_by.length)
  // A cycle (a deadlock before the detector breaks it) has no root: start from its smallest pid.
  const placed = new Set<number>()
  const build = (pid: number, depth: number): LockNode => {
    placed.add(pid)
    const session = byPid.get(pid)
    const kids = (children.get(pid) ?? []).filter((c) => !placed.has(c.pid)).map((c) => build(c.pid, depth + 1))
    const now = session?.sampled_at ?? new Date()
    const category = session ? categorise(session) : null
    const waitedBefore = category === 'task_instance' ? parseSessionTag(session!.application_name)?.waitedMs : undefined
    const waiting = session?.waiting_on ? ms(now, session.wait_start ?? session.state_change) : null
    const node: LockNode = {
      pid,
      application_name: session?.application_name ?? '',
      user: session?.usename ?? null,
      state: session?.state ?? 'not visible (another database or a background process)',
      wait_event_type: session?.wait_event_type ?? null,
      wait_event: session?.wait_event ?? null,
      wait_ms: waiting !== null && waitedBefore ? waiting + waitedBefore : waiting,
      waited_before_ms: waiting !== null && waitedBefore ? waitedBefore : null,
      transaction_age_ms: session ? ms(now, session.xact_start) : null,
      since_state_change_ms: session ? ms(now, session.state_change) : null,
      query: session?.query ? session.query.replace(/\s+/g, ' ').slice(0, 200) : null,
      client_addr: session?.client_addr ?? null,
      backend_start: session?.backend_start?.toISOString() ?? null,
      terminate: depth === 0 ? `select pg_terminate_backend(${pid})` : null,
      depth,
      blocked_below: kids.reduce((sum, kid) => sum + 1 + kid.blocked_below, 0),
      category,
      task_instance: session ? identify(session, tuples) : null,
      also_blocked_by: session ? session.blocked_by.slice(1) : [],
      children: kids,
    }
    // A holder has no tuple lock of its own in pg_locks: name the row its waiters queue for.
    if (!node.task_instance) {
      const fromWaiter = kids.find((kid) => kid.task_instance && kid.category === 'task_instance')?.task_instance
      if (fromWaiter) node.task_instance = {...fromWaiter, source: 'inferred_from_waiter', guess: true}
    }

    return node
  }

  const forest = roots.sort((a, b) => a - b).map((pid) => build(pid, 0))
  for (const waiter of waiting) if (!placed.has(waiter.pid)) forest.push(build(waiter.pid, 0))
  return forest
}

export function* walk(node: LockNode): Generator<LockNode> {
  yield node
  for (const child of node.children) yield* walk(child)
}
