import {
  ago,
  notRunning,
  type ConditionJson,
  type DagExplanation,
  type EventJson,
  type LeafJson,
  type ProducerJson,
} from '../explain/explainDag.js'
import type {ExplainSummary} from '../explain/runExplain.js'
import {instant} from '../output/instant.js'

/** Condition lines shown per DAG for people; --json lists every leaf. */
const leafLines = 30

/**
 * One DAG as an answer: the verdict in a sentence ("report_daily: waiting for ledger (last event
 * 2026-12-05 03:12:07Z, 26 h ago); 2 of 3 assets queued"), then its condition as a tree with each
 * leaf's state, its pending partition runs, its last runs and its findings.
 */
export function renderExplainedDag(dag: DagExplanation, now: Date): string {
  const lines = [headline(dag, now)]
  if (dag.condition) {
    const tree = conditionLines(dag.condition, '    ', now, dag.blocked_by === 'paused')
    lines.push('  condition:')
    lines.push(...tree.slice(0, leafLines))
    if (tree.length > leafLines) lines.push(`    … and ${tree.length - leafLines} more lines (--json lists them all)`)
  }
  if (dag.consumes) {
    const {count, events, after, run_after} = dag.consumes
    const shown = events.slice(0, 10).map((e) => e.id)
    lines.push(
      `  consumes: ${count} event${count === 1 ? '' : 's'} stamped ${after ? `after ${after} ` : ''}through ${run_after}${shown.length > 0 ? ` (${shown.join(', ')}${count > shown.length ? ', …' : ''})` : ''}`,
    )
  }
  for (const p of dag.partitions ?? []) {
    lines.push(
      `  partition ${p.partition_key} (pending since ${instant(p.created_at)}): ${p.verdict === 'will_run' ? 'will run' : p.verdict === 'cleared' ? `cleared: ${p.reason}` : `waiting for ${p.waiting_for.join(', ')}`}${p.received.length > 0 ? `; received ${p.received.join(', ')}` : ''}${p.verdict === 'waiting' && p.reason ? `; ${p.reason}` : ''}`,
    )
  }
  if (dag.runs.length > 0) {
    const [latest] = dag.runs
    lines.push(
      `  runs: the last ${dag.runs.length} asset-triggered (latest ${latest!.run_id}, ${latest!.state ?? 'no state'}, ${latest!.events.length} event${latest!.events.length === 1 ? '' : 's'})`,
    )
  }
  for (const finding of dag.findings) lines.push(`  ! ${finding.kind}: ${finding.detail}`)
  for (const caveat of dag.caveats ?? []) lines.push(`  ! but ${caveat}`)
  return lines.join('\n')
}

function headline(dag: DagExplanation, now: Date): string {
  const leaves = leavesOf(dag.condition)
  const queued = leaves.filter((l) => l.state === 'queued').length
  const of = `${queued} of ${leaves.length} asset${leaves.length === 1 ? '' : 's'} queued`
  switch (dag.verdict) {
    case 'will_run':
      return `${dag.dag_id}: will run: a coming scheduler loop creates its run (${of})${dag.reason ? `; ${dag.reason}` : ''}`
    case 'blocked':
      return `${dag.dag_id}: blocked by ${dag.blocked_by}: ${dag.reason} (${of})`
    case 'not_asset_scheduled':
      return `${dag.dag_id}: not asset-scheduled (its latest serialized DAG has no asset condition)`
    case 'waiting': {
      const missing = dag.waiting_for.map((label) => {
        const leaf = leaves.find((l) => l.leaf === label)
        const last = leaf?.last_event
        const fate = leaf?.last_event_consumed_by
        const consumed =
          fate === undefined ? '' : fate.length > 0 ? `, consumed by run ${fate[0]}` : ', never queued for it'
        return last
          ? `${label} (last event ${instant(last.timestamp)}, ${ago(new Date(last.timestamp), now)}${consumed})`
          : label
      })
      const rest = leaves.length - dag.waiting_for.length
      const others = rest === 1 ? 'the other asset is queued' : `all other ${rest} are queued`
      return `${dag.dag_id}: waiting for ${missing.join(', ') || 'an event with a partition key'}${dag.condition ? `; ${queued === rest && rest > 0 ? others : of}` : ''}`
    }
  }
}

function conditionLines(node: ConditionJson, indent: string, now: Date, paused: boolean): string[] {
  if ('all' in node)
    return [`${indent}all of`, ...node.all.flatMap((n) => conditionLines(n, `${indent}  `, now, paused))]
  if ('any' in node)
    return [`${indent}any of`, ...node.any.flatMap((n) => conditionLines(n, `${indent}  `, now, paused))]
  if ('unknown' in node)
    return [`${indent}✗ ${node.unknown || 'an unknown node'} (a type airlock does not know: never true)`]
  return [`${indent}${leafLine(node, now)}${fateOf(node, paused)}${producedBy(node.producers)}`]
}

/** What became of a missing leaf's last event for this DAG: consumed by a run, or never queued. */
function fateOf(leaf: LeafJson, paused: boolean): string {
  const runs = leaf.last_event_consumed_by
  if (runs === undefined || !leaf.last_event) return ''
  if (runs.length > 0) return `; consumed by run ${runs.join(', ')}`
  return `; event ${leaf.last_event.id} was never queued for this DAG (it was paused when it arrived, was not yet scheduled on the asset, or its queue row was deleted): ${paused ? 'unpausing will not start a run for it' : 'it will start no run'}; trigger it or wait for the next event`
}

/** Producers shown per leaf for people; --json lists them all. */
const producersShown = 3

/** The tasks that emit a missing asset, each with what keeps its DAG from producing it. */
function producedBy(producers: ProducerJson[] | undefined): string {
  if (producers === undefined) return ''
  if (producers.length === 0) return '; no task produces it (only an external event or an alias emission)'
  const shown = producers.slice(0, producersShown).map((p) => {
    const states = [
      p.paused ? 'paused' : '',
      p.stale ? 'stale' : '',
      p.import_errors ? 'import errors' : '',
      p.latest_run?.state === 'failed' ? `latest run ${p.latest_run.run_id} failed` : '',
    ].filter(Boolean)
    return `${p.dag_id}/${p.task_id}${states.length > 0 ? ` (${states.join(', ')})` : ''}`
  })
  const more = producers.length > producersShown ? ` and ${producers.length - producersShown} more` : ''
  return `; produced by ${shown.join(', ')}${more}`
}

function leafLine(leaf: LeafJson, now: Date): string {
  switch (leaf.state) {
    case 'queued':
      return `✓ ${leaf.leaf}: queued${leaf.since ? ` ${instant(leaf.since)}` : ''}${leaf.event ? ` by event ${describe(leaf.event)}` : ''}`
    case 'unresolved':
      return `✗ ${leaf.leaf}: no active asset answers it (the scheduler counts it false)`
    case 'inactive':
      return `✗ ${leaf.leaf}: inactive (no asset_active row: no DAG references it, or its name or uri clashes with an active asset): no task outlet emits for it until it is active again${leaf.last_event ? `; last event ${describe(leaf.last_event)}, ${ago(new Date(leaf.last_event.timestamp), now)}` : ''}`
    case 'missing':
      return `✗ ${leaf.leaf}: missing${leaf.last_event ? `; last event ${describe(leaf.last_event)}, ${ago(new Date(leaf.last_event.timestamp), now)}` : '; never had an event'}`
  }
}

function leavesOf(node: ConditionJson | null): LeafJson[] {
  if (!node) return []
  if ('all' in node) return node.all.flatMap(leavesOf)
  if ('any' in node) return node.any.flatMap(leavesOf)
  if ('unknown' in node) return []
  return [node]
}

const describe = (event: EventJson) => `${event.id} of ${instant(event.timestamp)} from ${event.source}`

export function renderExplainSummary(summary: ExplainSummary, now: Date): string {
  const {verdicts, findings} = summary
  const down = [
    notRunning('scheduler', 'SchedulerJob', summary.scheduler, now),
    notRunning('DAG processor', 'DagProcessorJob', summary.dag_processor, now),
  ].filter((line) => line !== undefined)
  const found = Object.entries(findings)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${n} ${kind}`)
  return `${summary.dags} DAG${summary.dags === 1 ? '' : 's'}: ${verdicts.will_run} will run, ${verdicts.waiting} waiting, ${verdicts.blocked} blocked, ${verdicts.not_asset_scheduled} not asset-scheduled; ${found.length > 0 ? `findings: ${found.join(', ')}` : 'no findings'}.${down.map((line) => `\n! ${line}: a verdict is what a running one does.`).join('')}`
}
