import type {LockAudit} from '../audit/auditLocks.js'
import {walk, type LockNode} from '../audit/lockForest.js'
import {csvCell} from '../output/csv.js'
import {renderTable} from '../output/table.js'

const seconds = (ms: number | null) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)}s`)

function tiLabel(node: LockNode): string {
  const ti = node.task_instance
  if (!ti) return ''
  const name = ti.dag_id ? `${ti.dag_id}/${ti.run_id}/${ti.task_id}${ti.map_index !== null && ti.map_index >= 0 ? `[${ti.map_index}]` : ''}` : ti.id
  const how = ti.source === 'application_name' ? '' : ti.source === 'tuple_lock' ? ' (guess: from its tuple lock)' : ' (guess: from its waiters)'
  return ` · TI ${name}${how}`
}

function line(node: LockNode, prefix: string): string {
  const who = `pid ${node.pid}${node.application_name ? ` ${node.application_name}` : ''}${node.user ? ` (${node.user})` : ''}`
  const what =
    node.wait_ms !== null
      ? `waits ${node.wait_event_type ?? ''}/${node.wait_event ?? ''} ${seconds(node.wait_ms)}${node.category ? ` [${node.category}]` : ''}`
      : `${node.state ?? '?'} · transaction ${seconds(node.transaction_age_ms)} · state for ${seconds(node.since_state_change_ms)}`
  const blocks = node.blocked_below > 0 ? ` · blocks ${node.blocked_below}` : ''
  const also = node.also_blocked_by.length ? ` · also blocked by ${node.also_blocked_by.join(', ')}` : ''
  return `${prefix}${who}: ${what}${blocks}${also}${tiLabel(node)}${node.query ? `\n${prefix.replace(/[└├]─ $/, '   ').replace(/[└├]/g, ' ')}    ${node.query.slice(0, 120)}` : ''}`
}

function renderTree(node: LockNode, indent = ''): string[] {
  const lines = [line(node, indent ? `${indent}└─ ` : '● ')]
  for (const child of node.children) lines.push(...renderTree(child, indent + '   '))
  return lines
}

export function renderLockAudit(audit: LockAudit): string {
  const parts: string[] = []
  const s = audit.sampling
  parts.push(`airlock audit-locks: ${s.samples} sample(s) ${s.interval_ms} ms apart; trees from sample ${s.shown_sample}.`)
  if (audit.visibility.note) parts.push(`! ${audit.visibility.note}`)
  parts.push(audit.trees.length === 0 ? 'No session is blocked.' : audit.trees.flatMap((tree) => renderTree(tree)).join('\n'))
  if (audit.idle_in_transaction.length > 0) {
    parts.push(
      'Idle in transaction, holding task_instance row locks:\n' +
        renderTable(
          ['pid', 'user', 'idle', 'transaction', 'blocking', 'last query'],
          audit.idle_in_transaction.map((h) => [
            h.pid,
            h.user,
            seconds(h.idle_ms),
            seconds(h.transaction_age_ms),
            h.blocking,
            (h.last_query ?? '').slice(0, 60),
          ]),
        ),
    )
  }

  if (audit.queue_contention.length > 0) {
    parts.push(
      'Queue contention (waits on asset_dag_run_queue / asset_event writes: registering before the row lock moves contention here, it does not remove it):\n' +
        renderTable(
          ['pid', 'wait', 'query'],
          audit.queue_contention.map((q) => [q.pid, seconds(q.wait_ms), (q.query ?? '').slice(0, 80)]),
        ),
    )
  }

  if (audit.aggregates.by_task_instance.length > 0) {
    parts.push(
      'Waits by task instance across the window:\n' +
        renderTable(
          ['task instance', 'samples', 'max', 'p95'],
          audit.aggregates.by_task_instance.slice(0, 10).map((a) => [a.key, a.samples, seconds(a.max_wait_ms), seconds(a.p95_wait_ms)]),
        ),
    )
  }

  parts.push(
    `Settings: ${audit.settings.map((x) => `${x.name}=${x.value}`).join(', ')}; deadlocks ${audit.deadlocks.total} (+${audit.deadlocks.delta} in the window).`,
  )
  parts.push(
    audit.findings.length === 0
      ? 'Findings: none.'
      : 'Findings:\n' + audit.findings.map((f) => `  ${f.severity.toUpperCase().padEnd(8)} ${f.message}`).join('\n'),
  )
  return parts.join('\n\n')
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
    ]),
  )
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\n')
}
