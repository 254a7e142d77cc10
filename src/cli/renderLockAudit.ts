import type {LockAudit} from '../audit/auditLocks.js'
import {walk, type LockNode} from '../audit/lockForest.js'
import {heldLabel, type RowLockStatus} from '../audit/lockHolders.js'
import {csvCell} from '../output/csv.js'
import {keyColumn, renderTable} from '../output/table.js'

const seconds = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)}s`)

const rowSource: Record<RowLockStatus, string> = {
  read: 'pgrowlocks',
  not_read: "airlock's tags only: pgrowlocks not run",
  not_installed: "airlock's tags only: pgrowlocks is not installed",
  not_permitted: "airlock's tags only: pgrowlocks not permitted",
  too_slow: "airlock's tags only: pgrowlocks too slow",
}

function tiLabel(node: LockNode): string {
  const ti = node.task_instance
  if (!ti) return ''
  const name = ti.dag_id
    ? `${ti.dag_id}/${ti.run_id}/${ti.task_id}${ti.map_index !== null && ti.map_index >= 0 ? `[${ti.map_index}]` : ''}`
    : ti.id
  const how =
    ti.source === 'application_name'
      ? ''
      : ti.source === 'tuple_lock'
        ? ' (guess: from its tuple lock)'
        : ' (guess: from its waiters)'
  return ` · TI ${name}${how}`
}

function line(node: LockNode, prefix: string): string {
  const client = node.client_addr ?? (node.backend_start ? 'local socket' : null)
  const connected = client ? ` from ${client}${node.backend_start ? ` since ${node.backend_start}` : ''}` : ''
  const who = `pid ${node.pid}${node.application_name ? ` ${node.application_name}` : ''}${node.user ? ` (${node.user}${connected})` : connected}`
  const what =
    node.wait_ms !== null
      ? `waits ${node.wait_event_type ?? ''}/${node.wait_event ?? ''} ${seconds(node.wait_ms)}${node.waited_before_ms ? ` (${seconds(node.waited_before_ms)} of it in earlier slices)` : ''}${node.category ? ` [${node.category}]` : ''}`
      : `${node.state ?? '?'} · transaction ${seconds(node.transaction_age_ms)} · state for ${seconds(node.since_state_change_ms)}`
  const blocks = node.blocked_below > 0 ? ` · blocks ${node.blocked_below}` : ''
  const also = node.also_blocked_by.length ? ` · also blocked by ${node.also_blocked_by.join(', ')}` : ''
  return `${prefix}${who}: ${what}${blocks}${also}${tiLabel(node)}${node.query ? `\n${prefix.replace(/[└├]─ $/, '   ').replace(/[└├]/g, ' ')}    ${node.query.slice(0, 120)}` : ''}`
}

function renderTree(node: LockNode, indent = ''): string[] {
  const lines = [line(node, indent ? `${indent}└─ ` : '● ')]
  if (node.terminate && node.blocked_below > 0)
    lines.push(`    to end this session (airlock never does): ${node.terminate};`)
  for (const child of node.children) lines.push(...renderTree(child, indent + '   '))
  return lines
}

export function renderLockAudit(audit: LockAudit, width?: number): string {
  const parts: string[] = []
  const s = audit.sampling
  parts.push(
    `airlock audit-locks: ${s.samples} sample(s) ${s.interval_ms} ms apart; trees from sample ${s.shown_sample}.`,
  )
  if (audit.visibility.note) parts.push(`! ${audit.visibility.note}`)
  parts.push(
    audit.trees.length === 0 ? 'No session is blocked.' : audit.trees.flatMap((tree) => renderTree(tree)).join('\n'),
  )
  if (audit.task_instance_holders.length > 0) {
    parts.push(
      `Holding task_instance row locks (rows from ${rowSource[audit.visibility.pgrowlocks]}):\n` +
        renderTable(
          ['pid', 'user', 'state', 'transaction', 'in state', 'blocking', 'task instances', 'query'],
          audit.task_instance_holders.map((h) => [
            h.pid,
            h.user,
            h.state,
            seconds(h.transaction_age_ms),
            seconds(h.since_state_change_ms),
            h.blocking,
            heldLabel(h.held_rows),
            (h.query ?? '').slice(0, 60),
          ]),
          {width},
        ),
    )
  }

  if (audit.queue_contention.length > 0) {
    parts.push(
      'Queue contention (waits on asset_dag_run_queue / asset_event writes: registering before the row lock moves contention here, it does not remove it):\n' +
        renderTable(
          ['pid', 'wait', 'query'],
          audit.queue_contention.map((q) => [q.pid, seconds(q.wait_ms), (q.query ?? '').slice(0, 80)]),
          {width},
        ),
    )
  }

  if (audit.aggregates.by_task_instance.length > 0) {
    parts.push(
      'Waits by task instance across the window:\n' +
        renderTable(
          [keyColumn('task instance'), 'samples', 'max', 'p95'],
          audit.aggregates.by_task_instance
            .slice(0, 10)
            .map((a) => [a.task_instance ?? a.key, a.samples, seconds(a.max_wait_ms), seconds(a.p95_wait_ms)]),
          {width},
        ),
    )
  }

  parts.push(
    `Settings (the server's, for every other session): ${audit.settings.map((x) => `${x.name}=${x.value}`).join(', ')}; deadlocks ${audit.deadlocks.total} (+${audit.deadlocks.delta} in the window).`,
  )
  parts.push(
    audit.findings.length === 0
      ? 'Findings: none.'
      : 'Findings:\n' + audit.findings.map((f) => `  ${f.severity.toUpperCase().padEnd(8)} ${f.message}`).join('\n'),
  )
  return parts.join('\n\n')
}

/** --ndjson: each session of the trees without its children (root_pid ties it to its tree), then the rest of the report. */
export function lockAuditLines(audit: LockAudit): Array<Record<string, unknown>> {
  const sessions = audit.trees.flatMap((tree) =>
    [...walk(tree)].map(({children, ...node}) => ({
      type: 'session',
      root_pid: tree.pid,
      children: children.map((child) => child.pid),
      ...node,
    })),
  )
  const {trees, ...rest} = audit
  return [...sessions, {type: 'summary', trees: trees.length, ...rest}]
}

/** --kill: the statements that end each root blocker's session, one per line, for the operator to review and run. */
export function lockAuditKillLines(audit: LockAudit): string {
  const roots = audit.trees.filter((tree) => tree.terminate)
  if (roots.length === 0) return '-- no session blocks another: nothing to end'
  return roots
    .map(
      (tree) =>
        `-- pid ${tree.pid}${tree.application_name ? ` ${tree.application_name}` : ''}${tree.user ? ` (${tree.user})` : ''}: blocks ${tree.blocked_below}, ${tree.state ?? '?'}\n${tree.terminate};`,
    )
    .join('\n')
}

export function lockAuditCsv(audit: LockAudit): string {
  const header = [
    'root_pid',
    'pid',
    'depth',
    'state',
    'user',
    'application_name',
    'wait_event_type',
    'wait_event',
    'wait_ms',
    'transaction_age_ms',
    'blocked_below',
    'category',
    'ti_id',
    'dag_id',
    'run_id',
    'task_id',
    'map_index',
    'ti_source',
    'query',
    'client_addr',
    'backend_start',
    'terminate',
  ]
  const rows = audit.trees.flatMap((tree) =>
    [...walk(tree)].map((n) => [
      tree.pid,
      n.pid,
      n.depth,
      n.state,
      n.user,
      n.application_name,
      n.wait_event_type,
      n.wait_event,
      n.wait_ms,
      n.transaction_age_ms,
      n.blocked_below,
      n.category,
      n.task_instance?.id,
      n.task_instance?.dag_id,
      n.task_instance?.run_id,
      n.task_instance?.task_id,
      n.task_instance?.map_index,
      n.task_instance?.source,
      n.query,
      n.client_addr,
      n.backend_start,
      n.terminate,
    ]),
  )
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\n')
}
