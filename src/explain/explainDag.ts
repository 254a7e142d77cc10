import {sameFingerprint} from '../airflow/rollupFingerprint.js'
import {rollupStatus} from '../airflow/rollupWindow.js'
import {
  evaluateTree,
  leavesOf,
  queuedLeaf,
  parseCondition,
  type ConditionLeaf,
  type ConditionTree,
  type QueuedAssets,
} from '../airflow/assetCondition.js'
import type {
  ExplainAsset,
  ExplainDag,
  ExplainEvent,
  ExplainPage,
  ExplainPartition,
  ExplainRun,
  ExplainWindow,
} from '../store/families/downstream.js'
import {exclusionsOf, maxRunsFlagReason, type ExclusionBlock} from '../protocol/downstream.js'
import type {ComponentHealth} from '../airflow/jobHealth.js'
import {ago, instant} from '../output/instant.js'

/**
 * `airlock explain`: the scheduler's asset-triggered step for one DAG, as a coming loop will take
 * it, from what the database holds now (not the next loop: `dags_needing_dagruns` takes at most
 * `[scheduler] max_dagruns_to_create_per_loop` DAGs a loop and skips rows another scheduler locks). The decision is `DagModel.dags_needing_dagruns`
 * (airflow-core/src/airflow/models/dag.py): the DAG's condition evaluated by `AssetEvaluator`
 * against its queue rows, then the exclusions of its WHERE clause (paused, stale, import errors;
 * from 3.2 the cached `exceeds_max_non_backfill` flag) and of its `exclusion_list` (QUEUED and
 * RUNNING runs of every type at `max_active_runs`). The same evaluation as the downstream preview
 * (src/airflow/assetCondition.ts), and the conformance suite holds both to the transcribed
 * scheduler step on every release line.
 */
export type Verdict = 'will_run' | 'waiting' | 'blocked' | 'not_asset_scheduled'

/**
 * `inactive_assets`: the condition cannot hold without an asset that has no asset_active row, and
 * no task outlet registers an event for one: `register_asset_changes_in_db`
 * (airflow-core/src/airflow/models/taskinstance.py) selects outlets `AssetModel.active.has()` and
 * skips (3.2+) or fails on the rest. Only an alias emission or an event posted through Airflow's
 * API reaches it (`AssetManager.register_asset_change` warns "Emitting event for inactive
 * AssetModel" and writes). An asset is inactive when no DAG references it, or when its name or uri
 * clashes with an active asset (`activate_assets_if_possible`); the scheduler's orphanage pass can
 * activate it again.
 */
export type ExplainBlock = ExclusionBlock | 'inactive_assets'

/**
 * `stuck`: the DAG would run now by every rule (its verdict is will_run: condition met, nothing
 * excludes it) and no run was created for longer than --stuck-after, so the scheduler is not taking
 * its step. `paused_backlog`: a paused DAG whose condition has held that long: normal operation
 * (the operator paused it), so it is reported but fails the run only when --fail-on names it.
 */
export const findingKinds = [
  'stuck',
  'paused_backlog',
  'duplicate_run',
  'orphan_queue',
  'duplicate_partition_run',
  'stranded_events',
] as const
export type FindingKind = (typeof findingKinds)[number]

export interface EventJson {
  id: number
  timestamp: string
  /** `dag/run/task[map]` of the task that emitted it, or `external` (no source task). */
  source: string
}

export interface LeafJson {
  leaf: string
  kind: 'asset' | 'ref' | 'alias'
  /**
   * unresolved: an Asset.ref no active asset answers, so the scheduler counts it false;
   * inactive: an asset with no asset_active row, which no task outlet emits for until it is
   * active again.
   */
  state: 'queued' | 'missing' | 'unresolved' | 'inactive'
  /** queued: when its queue row was written, and the event that wrote it. */
  since?: string
  event?: EventJson | null
  /** missing: the asset's (or alias's) last event, if it ever had one. */
  last_event?: EventJson | null
  /**
   * missing, with a last event, on a DAG the queue feeds (not partitioned): the runs of this DAG
   * that consumed it (`dagrun_asset_event`). Empty: no run consumed it and no queue row holds it,
   * so it was never queued for this DAG (it was paused when the event arrived, was not yet
   * scheduled on the asset, or the row was deleted): unpausing starts no run for it (the next run
   * another event triggers takes it among its consumed events).
   */
  last_event_consumed_by?: string[]
  /** missing or inactive asset (or resolved ref): the tasks whose outlets emit it (`task_outlet_asset_reference`). */
  producers?: ProducerJson[]
}

export interface ProducerJson {
  dag_id: string
  task_id: string
  paused: boolean
  stale: boolean
  import_errors: boolean
  /** Its DAG's latest run, of any type: a failed one is what to look at. */
  latest_run: {run_id: string; state: string | null} | null
}

export type ConditionJson = {all: ConditionJson[]} | {any: ConditionJson[]} | {unknown: string} | LeafJson

export interface FindingJson {
  kind: FindingKind
  detail: string
  /** duplicate_run: the runs, and the events both consumed; stranded_events: the events (the first 100). */
  runs?: string[]
  events?: number[]
}

export interface DagExplanation {
  dag_id: string
  verdict: Verdict
  /** The leaves that would make the condition true (every missing part of an AND, the cheapest side of an OR). */
  waiting_for: string[]
  blocked_by?: ExplainBlock
  /** Why it is blocked; or, for a partitioned consumer that runs though paused or stale, what that means. */
  reason?: string
  condition: ConditionJson | null
  /** When the queue rows first made the condition true (the queue's rows in order), if they do. */
  met_since?: string
  /**
   * will_run, before 3.4: the events the run consumes, as `_create_dag_runs_asset_triggered` selects
   * them: its assets' (3.1+: and aliases') events stamped after `after` (the previous
   * asset-triggered run's run_after; null: none) through `run_after` (its newest queue row's
   * created_at), to the microsecond; `events` lists the first 100 of `count`.
   */
  consumes?: {run_after: string; after: string | null; count: number; events: EventJson[]}
  queued: Array<{asset: string; uri: string; since: string; event: EventJson | null}>
  partitions?: Array<{
    partition_key: string
    created_at: string
    /** cleared: a coming 3.3 loop deletes it, queued under another mapper definition (`reason` says). */
    verdict: 'will_run' | 'waiting' | 'cleared'
    waiting_for: string[]
    received: string[]
    reason?: string
    /**
     * 3.3: the received assets whose partition mapper is a rollup, counted against the upstream
     * keys the downstream key needs (`expected_keys`, `needs` from the wait policy); `counted`
     * false: airlock cannot compute them, and the asset is not counted received.
     */
    rollups?: Array<{
      asset: string
      counted: boolean
      received_keys: number
      expected_keys?: number
      needs?: number | null
      missing?: string[]
      why?: string
    }>
  }>
  runs: Array<{run_id: string; state: string | null; run_after: string; queued_at: string | null; events: number[]}>
  findings: FindingJson[]
  /**
   * What the verdict takes for granted and the database says may not hold: no live scheduler
   * (nothing creates the run), no live DAG processor (nothing parses the file), queue rows a
   * coming loop deletes. Absent when there is none.
   */
  caveats?: string[]
}

export interface ExplainOptions {
  now: Date
  /** A condition that has held (or a partition run pending) this long with no run is `stuck`. */
  stuckAfterMs: number
  /** The scheduler's and the DAG processor's health (src/airflow/jobHealth.ts); unknown when absent. */
  scheduler?: ComponentHealth
  dagProcessor?: ComponentHealth
  /**
   * 3.2+: `dags_needing_dagruns` deletes the queue rows of a DAG whose `asset_expression` is NULL
   * before it evaluates anything; 3.0 and 3.1 leave them.
   */
  deletesQueueWithoutExpression?: boolean
}

/**
 * The assets whose last event the page's answer shows: those of the leaves it will call missing
 * (every leaf of a partitioned consumer's condition, whose tree is shown unqueued). A queued leaf
 * shows the event that queued it instead, so a consumer of thousands of assets with all but a few
 * queued needs a few last events, not thousands (runExplain reads them before explainPage).
 */
export function missingLeafAssets(page: ExplainPage): number[] {
  const context = pageContext(page)
  const ids = new Set<number>()
  for (const dag of page.dags) {
    const tree = parseCondition(dag.condition)
    if (!tree) continue
    const isMet = dag.partitioned
      ? () => false
      : queuedLeaf(
          queuedAssets(
            dag.queue.filter((q) => q.asset !== null),
            context,
          ),
        )
    for (const leaf of leavesOf(tree)) {
      if (leaf.kind === 'alias' || isMet(leaf)) continue
      const asset = leafAsset(leaf, context)
      if (asset) ids.add(asset.id)
    }
  }
  return [...ids]
}

/** The page's DAGs, each explained. */
export function explainPage(page: ExplainPage, options: ExplainOptions): DagExplanation[] {
  const context = pageContext(page)
  addEvidence(context, page)
  return page.dags.map((dag) =>
    withCaveats(
      inContractOrder(
        explainDag(
          dag,
          context,
          page.runs.filter((r) => r.dagId === dag.dagId),
          page.partitions.filter((p) => p.dagId === dag.dagId),
          page.windows.find((w) => w.dagId === dag.dagId),
          options,
        ),
      ),
      dag,
      options,
    ),
  )
}

/**
 * The verdict's caveats, and the scheduler's absence on a `stuck` finding. A verdict says what the
 * scheduler's step does with the rows the database holds; it does not say a scheduler runs.
 */
function withCaveats(e: DagExplanation, dag: ExplainDag, options: ExplainOptions): DagExplanation {
  const caveats: string[] = []
  const noScheduler = options.scheduler && notRunning('scheduler', 'SchedulerJob', options.scheduler, options.now)
  const noProcessor =
    options.dagProcessor && notRunning('DAG processor', 'DagProcessorJob', options.dagProcessor, options.now)
  const createsRun =
    e.verdict === 'will_run' ||
    (e.verdict === 'blocked' && e.blocked_by === 'max_active_runs') ||
    (e.partitions ?? []).some((p) => p.verdict !== 'waiting')
  if (noScheduler && createsRun) caveats.push(`${noScheduler}: no run is created until one runs`)
  const parsed = e.verdict === 'not_asset_scheduled' || e.blocked_by === 'import_errors' || e.blocked_by === 'stale'
  if (noProcessor && parsed)
    caveats.push(`${noProcessor}: the file is not parsed again (nor its DAG serialized) until one runs`)
  if (!dag.hasAssetExpression && dag.queue.length > 0) {
    const rows = `${dag.queue.length} queue row${dag.queue.length === 1 ? '' : 's'}`
    caveats.push(
      options.deletesQueueWithoutExpression
        ? `its dag.asset_expression is NULL (it is not asset-scheduled now): a coming scheduler loop deletes its ${rows} before it evaluates any condition, and no run comes from them${noScheduler ? ` (${noScheduler})` : ''}`
        : `its dag.asset_expression is NULL (it is not asset-scheduled now): before 3.2 the scheduler leaves its ${rows} in place and creates no run from them${
            e.verdict === 'not_asset_scheduled' && dag.serialized
              ? '; while its latest serialized DAG has no asset condition, dags_needing_dagruns raises NotImplementedError on them ("can not evaluate _NullAsset": its dag_ready catches AttributeError only), failing the scheduler\'s run-creation step until they are deleted'
              : ''
          }`,
    )
  }
  if (noScheduler)
    for (const finding of e.findings)
      if (finding.kind === 'stuck')
        finding.detail = `${finding.detail}; ${noScheduler}: no run is created until one runs`
  return caveats.length > 0 ? {...e, caveats} : e
}

/**
 * Why a component is not running, in words ("no scheduler heartbeat since 2025-12-07 20:13:32Z
 * (365 d ago)"), or undefined when it is alive or nobody can tell.
 */
export function notRunning(name: string, jobType: string, health: ComponentHealth, now: Date): string | undefined {
  if (health.alive !== false) return undefined
  if (health.state === null) return `no ${name} has run here (the job table has no ${jobType} row)`
  if (health.last_heartbeat === null) return `no ${name} heartbeat (its latest job, ${health.state}, never beat)`
  const since = `${instant(health.last_heartbeat)} (${ago(new Date(health.last_heartbeat), now)})`
  return health.state === 'running'
    ? `no ${name} heartbeat since ${since}`
    : `no ${name} running (its latest job is ${health.state}, its last heartbeat ${since})`
}

/** The answer first (verdict, what it waits for, what blocks it), the evidence after, as the docs list the fields. */
function inContractOrder(e: DagExplanation): DagExplanation {
  return {
    dag_id: e.dag_id,
    verdict: e.verdict,
    waiting_for: e.waiting_for,
    ...(e.blocked_by ? {blocked_by: e.blocked_by, reason: e.reason} : e.reason ? {reason: e.reason} : {}),
    condition: e.condition,
    ...(e.met_since ? {met_since: e.met_since} : {}),
    ...(e.consumes ? {consumes: e.consumes} : {}),
    queued: e.queued,
    ...(e.partitions ? {partitions: e.partitions} : {}),
    runs: e.runs,
    findings: e.findings,
  }
}

interface PageContext {
  /** By name, then uri: a leaf's (name, uri) looked up without a key string built per leaf. */
  byKey: Map<string, Map<string, ExplainAsset>>
  byId: Map<number, ExplainAsset>
  activeByName: Map<string, ExplainAsset>
  activeByUri: Map<string, ExplainAsset>
  aliases: Map<string, {assetIds: Set<number>; lastEvent: ExplainEvent | null}>
  /** By DAG, then event id: the runs that consumed it (only when the page's evidence was read). */
  consumed?: Map<string, Map<number, string[]>>
  producers?: Map<number, ProducerJson[]>
}

/**
 * The page's leaf evidence (runExplain reads it after missingLeafAssets built the context), set
 * on the context once it is there.
 */
function addEvidence(context: PageContext, page: ExplainPage): void {
  if (page.consumed && !context.consumed) {
    context.consumed = new Map()
    for (const c of page.consumed) {
      const byEvent = context.consumed.get(c.dagId) ?? new Map<number, string[]>()
      context.consumed.set(c.dagId, byEvent)
      byEvent.set(c.eventId, [...(byEvent.get(c.eventId) ?? []), c.runId])
    }
  }
  if (page.producers && !context.producers) {
    context.producers = new Map()
    for (const p of page.producers) {
      const list = context.producers.get(p.assetId) ?? []
      context.producers.set(p.assetId, list)
      list.push({
        dag_id: p.dagId,
        task_id: p.taskId,
        paused: p.paused,
        stale: p.stale,
        import_errors: p.importErrors,
        latest_run: p.latestRun ? {run_id: p.latestRun.runId, state: p.latestRun.state} : null,
      })
    }
  }
}

/** The aliases linked to any of these assets: what an alias leaf is satisfied by. */
function linkedAliases(ids: ReadonlySet<number>, context: PageContext): string[] {
  return [...context.aliases].filter(([, alias]) => [...alias.assetIds].some((id) => ids.has(id))).map(([name]) => name)
}

/** Each page's context, built once: missingLeafAssets and explainPage both look its assets up. */
const contexts = new WeakMap<ExplainPage, PageContext>()

function pageContext(page: ExplainPage): PageContext {
  const known = contexts.get(page)
  if (known) return known
  const context: PageContext = {
    byKey: new Map(),
    byId: new Map(),
    activeByName: new Map(),
    activeByUri: new Map(),
    aliases: new Map(),
  }
  for (const asset of page.assets) {
    const byUri = context.byKey.get(asset.name)
    if (byUri) byUri.set(asset.uri, asset)
    else context.byKey.set(asset.name, new Map([[asset.uri, asset]]))
    context.byId.set(asset.id, asset)
    if (asset.active) {
      context.activeByName.set(asset.name, asset)
      context.activeByUri.set(asset.uri, asset)
    }
  }
  for (const alias of page.aliases)
    context.aliases.set(alias.name, {assetIds: new Set(alias.assetIds), lastEvent: alias.lastEvent})
  contexts.set(page, context)
  return context
}

function explainDag(
  dag: ExplainDag,
  context: PageContext,
  runs: readonly ExplainRun[],
  partitions: readonly ExplainPartition[],
  window: ExplainWindow | undefined,
  options: ExplainOptions,
): DagExplanation {
  const tree = parseCondition(dag.condition)
  const rows = dag.queue.filter((q) => q.asset !== null)
  const findings: FindingJson[] = [...orphanFindings(dag), ...duplicateRuns(runs)]
  const runsJson = runs.map((r) => ({
    run_id: r.runId,
    state: r.state,
    run_after: r.runAfter.toISOString(),
    queued_at: r.queuedAt?.toISOString() ?? null,
    events: r.eventIds,
  }))
  const queued = rows.map((q) => ({asset: q.asset!.name, uri: q.asset!.uri, ...rowEvidence(q)}))
  const base = {dag_id: dag.dagId, queued, runs: runsJson}

  if (dag.partitioned) return explainPartitioned(dag, tree, context, partitions, options, base, findings)
  if (!tree) {
    return {
      ...base,
      verdict: 'not_asset_scheduled',
      waiting_for: [],
      condition: null,
      findings,
    }
  }

  const queue = queuedAssets(rows, context)
  const isMet = queuedLeaf(queue)
  const result = evaluateTree(tree, isMet)
  const exclusions = exclusionsOf(dag, result.met)
  const {always} = exclusions
  const inactive = result.met ? [] : inactiveLeaves(tree, isMet, context)
  const blocked: ExplainBlock | undefined =
    exclusions.blocked ??
    (inactive.length > 0 && !evaluateTree(tree, (leaf) => isMet(leaf) || !inactive.includes(leaf)).met
      ? 'inactive_assets'
      : undefined)
  const reason =
    blocked === 'inactive_assets'
      ? `its condition needs inactive asset${inactive.length > 1 ? 's' : ''} ${inactive.map((l) => l.label + clashOf(l, context)).join(', ')}: no task outlet emits an event for an inactive asset (only an alias emission or an event posted through Airflow's API would), until the scheduler activates it again (an asset is inactive when no DAG references it, or its name or uri clashes with an active asset)`
      : blockReason(dag, blocked, always)
  const metSince = result.met ? metSinceOf(tree, rows, context) : undefined
  // Held past --stuck-after: stuck only when nothing excludes the DAG (a scheduler loop should
  // have created its run long ago); a paused DAG's held condition is its backlog, which
  // unpausing runs. Stale, import errors and max_active_runs are the verdict's block, not a finding.
  if (metSince && options.now.getTime() - metSince.getTime() > options.stuckAfterMs) {
    if (!blocked)
      findings.unshift({
        kind: 'stuck',
        detail: `its condition has held since ${instant(metSince)} (${ago(metSince, options.now)}) and no run was created, though nothing excludes it`,
      })
    else if (blocked === 'paused')
      findings.unshift({
        kind: 'paused_backlog',
        detail: `it is paused and its condition has held since ${instant(metSince)} (${ago(metSince, options.now)}): unpausing it creates a run from its queue rows on a coming scheduler loop`,
      })
  }
  const stranded = window && (result.met || dag.queue.length === 0) ? strandedFinding(window, result.met) : undefined
  if (stranded) findings.push(stranded)
  const consumes =
    window?.triggered && result.met && !blocked
      ? {
          run_after: window.triggered,
          after: window.after,
          count: window.consumed.count,
          events: window.consumed.events.map((e) => eventJson(e)!),
        }
      : undefined
  return {
    ...base,
    verdict: blocked ? 'blocked' : result.met ? 'will_run' : 'waiting',
    waiting_for: result.waitingFor,
    ...(blocked ? {blocked_by: blocked, reason} : {}),
    condition: conditionJson(tree, isMet, rows, context, dag.dagId),
    ...(metSince ? {met_since: metSince.toISOString()} : {}),
    ...(consumes ? {consumes} : {}),
    findings,
  }
}

/**
 * Events of its assets that no run takes until an unrelated new event queues one (apache/airflow
 * #56050, 3.0–3.3): before 3.4 a queue row is one per asset and DAG, kept as it was written when
 * another event of its asset comes (`on_conflict_do_nothing`), and the run takes the events
 * stamped through the newest row's created_at. So an event stamped after it (met: the run
 * about to be created leaves it; no queue row: the last run left it) has no row of its own, and
 * waits for the window of the run after the next event. Not when the condition waits with rows:
 * the run that completes it takes them.
 */
function strandedFinding(window: ExplainWindow, met: boolean): FindingJson | undefined {
  const {count, events} = window.stranded
  if (count === 0) return undefined
  const ids = events.map((e) => e.id)
  const listed = `${count === 1 ? 'event' : `${count} events`} ${ids.join(', ')}${count > ids.length ? ', …' : ''}`
  const detail =
    met && window.triggered
      ? `${listed} of its assets came after its newest queue row (${window.triggered}) and wrote none (an asset already queued keeps its row): the run the scheduler creates next consumes events stamped through ${window.triggered} only, and no run comes for ${count === 1 ? 'it' : 'these'} until a new event queues one (apache/airflow #56050)`
      : `${listed} of its assets came ${window.previous ? `after its last asset-triggered run (run_after ${window.previous})` : 'since it was scheduled on them'} and wrote no queue row: no run comes for ${count === 1 ? 'it' : 'them'} until a new event queues one, whose run consumes ${count === 1 ? 'it' : 'them'} too (apache/airflow #56050)`
  return {kind: 'stranded_events', detail, events: ids}
}

/**
 * Why an inactive asset leaf cannot be activated, when the page shows it: its name or its uri
 * belongs to an active asset (`activate_assets_if_possible`, airflow/dag_processing/collection.py,
 * activates an asset only when neither is taken). Empty when nothing clashes (no DAG references it).
 */
function clashOf(leaf: ConditionLeaf, context: PageContext): string {
  if (leaf.kind !== 'asset') return ''
  const byName = context.activeByName.get(leaf.name)
  if (byName && byName.uri !== leaf.uri) return ` (its name belongs to active asset ${byName.name} at ${byName.uri})`
  const byUri = context.activeByUri.get(leaf.uri)
  if (byUri && byUri.name !== leaf.name) return ` (its uri ${leaf.uri} belongs to active asset ${byUri.name})`
  return ''
}

/** The unqueued asset leaves whose asset exists but is inactive (no asset_active row). */
function inactiveLeaves(
  tree: ConditionTree,
  isMet: (leaf: ConditionLeaf) => boolean,
  context: PageContext,
): ConditionLeaf[] {
  return leavesOf(tree).filter(
    (leaf) => leaf.kind === 'asset' && !isMet(leaf) && context.byKey.get(leaf.name)?.get(leaf.uri)?.active === false,
  )
}

/** What a block means for this DAG now, in words. */
function blockReason(dag: ExplainDag, blocked: ExplainBlock | undefined, always: ExplainBlock | undefined): string {
  switch (blocked) {
    case 'paused':
      return 'it is paused: the scheduler creates no run for a paused DAG (its queue rows stay; an event that arrives while it is paused queues nothing for it)'
    case 'stale':
      return 'it is stale (its file is gone): the scheduler creates no run for it'
    case 'import_errors':
      return 'its file has import errors: the scheduler creates no run for it until it parses again'
    case 'max_active_runs':
      return always === 'max_active_runs'
        ? maxRunsFlagReason
        : `${dag.activeRuns} of its runs ${dag.activeRuns === 1 ? 'is' : 'are'} queued or running, max_active_runs ${dag.maxActiveRuns}: a scheduler loop after one ends creates its run`
    default:
      return ''
  }
}

/** The queue as AssetEvaluator sees it: the queued assets, and the aliases linked to any of them. */
function queuedAssets(rows: ExplainDag['queue'], context: PageContext): QueuedAssets {
  const ids = new Set(rows.map((r) => r.assetId))
  return {
    assets: rows.map((r) => r.asset!),
    aliases: linkedAliases(ids, context),
  }
}

/**
 * When the queue first made the condition true: its rows taken in the order they were written,
 * the first prefix that satisfies it (a condition only becomes truer as rows are added, so a
 * binary search over the prefixes finds it).
 */
function metSinceOf(tree: ConditionTree, rows: ExplainDag['queue'], context: PageContext): Date | undefined {
  const sorted = [...rows].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
  const metWith = (n: number) => {
    const queue = queuedAssets(sorted.slice(0, n), context)
    return evaluateTree(tree, queuedLeaf(queue)).met
  }
  if (!metWith(sorted.length)) return undefined
  let low = 1
  let high = sorted.length
  while (low < high) {
    const mid = Math.floor((low + high) / 2)
    if (metWith(mid)) high = mid
    else low = mid + 1
  }
  return sorted[low - 1]?.createdAt
}

/** The condition as a tree, each leaf with its state and its evidence. */
function conditionJson(
  tree: ConditionTree,
  isMet: (leaf: ConditionLeaf) => boolean,
  rows: ExplainDag['queue'],
  context: PageContext,
  queueOf: string | undefined,
): ConditionJson {
  switch (tree.kind) {
    case 'all':
      return {all: tree.children.map((child) => conditionJson(child, isMet, rows, context, queueOf))}
    case 'any':
      return {any: tree.children.map((child) => conditionJson(child, isMet, rows, context, queueOf))}
    case 'unknown':
      return {unknown: tree.type}
    default:
      return withEvidence(leafJson(tree, isMet(tree), rows, context), tree, context, queueOf)
  }
}

/**
 * A missing leaf's next evidence: whether a run of the DAG the queue feeds (`queueOf`; none for a
 * partitioned consumer) consumed its last event, and which tasks produce it.
 */
function withEvidence(
  json: LeafJson,
  leaf: ConditionLeaf,
  context: PageContext,
  queueOf: string | undefined,
): LeafJson {
  if (json.state !== 'missing' && json.state !== 'inactive') return json
  const consumed =
    queueOf !== undefined && context.consumed && json.last_event
      ? {last_event_consumed_by: context.consumed.get(queueOf)?.get(json.last_event.id) ?? []}
      : {}
  const asset = leaf.kind === 'alias' ? undefined : leafAsset(leaf, context)
  const producers = asset && context.producers ? {producers: context.producers.get(asset.id) ?? []} : {}
  return {...json, ...consumed, ...producers}
}

function leafJson(leaf: ConditionLeaf, met: boolean, rows: ExplainDag['queue'], context: PageContext): LeafJson {
  if (leaf.kind === 'alias') {
    const alias = context.aliases.get(leaf.name)
    const row = met ? rows.find((r) => alias?.assetIds.has(r.assetId)) : undefined
    return met
      ? {
          leaf: leaf.label,
          kind: 'alias',
          state: 'queued',
          ...rowEvidence(row!),
        }
      : {leaf: leaf.label, kind: 'alias', state: 'missing', last_event: eventJson(alias?.lastEvent ?? null)}
  }
  const asset = leafAsset(leaf, context)
  if (met) {
    const row = asset ? rowOf(rows, asset) : undefined
    return {leaf: leaf.label, kind: leaf.kind, state: 'queued', ...(row ? rowEvidence(row) : {})}
  }
  if (leaf.kind === 'ref' && !asset) return {leaf: leaf.label, kind: 'ref', state: 'unresolved', last_event: null}
  if (leaf.kind === 'asset' && asset && !asset.active)
    return {leaf: leaf.label, kind: 'asset', state: 'inactive', last_event: eventJson(asset.lastEvent)}
  return {leaf: leaf.label, kind: leaf.kind, state: 'missing', last_event: eventJson(asset?.lastEvent ?? null)}
}

/** The asset an asset or ref leaf names: by (name, uri), or an Asset.ref's active asset. */
function leafAsset(leaf: Exclude<ConditionLeaf, {kind: 'alias'}>, context: PageContext): ExplainAsset | undefined {
  return leaf.kind === 'asset'
    ? context.byKey.get(leaf.name)?.get(leaf.uri)
    : leaf.name !== undefined
      ? context.activeByName.get(leaf.name)
      : context.activeByUri.get(leaf.uri!)
}

type QueueRow = ExplainDag['queue'][number]

/**
 * Queue rows by asset id, built once per queue (a consumer of thousands of assets has thousands):
 * an asset's (name, uri) is unique, so its id names the same row as its key.
 */
const rowIndexes = new WeakMap<ExplainDag['queue'], Map<number, QueueRow>>()

function rowOf(rows: ExplainDag['queue'], asset: ExplainAsset): QueueRow | undefined {
  let index = rowIndexes.get(rows)
  if (!index) {
    index = new Map(rows.map((r) => [r.assetId, r]))
    rowIndexes.set(rows, index)
  }
  return index.get(asset.id)
}

/**
 * A queue row's evidence (when it was written, the event that wrote it), built once: the DAG's
 * `queued` list and the row's leaf show the same, and a consumer's thousands of rows each need it.
 */
const evidence = new WeakMap<QueueRow, {since: string; event: EventJson | null}>()

function rowEvidence(row: QueueRow): {since: string; event: EventJson | null} {
  let shown = evidence.get(row)
  if (!shown) {
    shown = {since: row.createdAt.toISOString(), event: eventJson(row.event)}
    evidence.set(row, shown)
  }
  return shown
}

/**
 * A partitioned consumer (3.2+) gets its runs from its pending partition runs
 * (`asset_partition_dag_run` with no run yet), each satisfied by the assets whose events it
 * received (`partitioned_asset_key_log`), not from the queue. A pending row whose condition holds
 * gets its run on a coming scheduler loop; two pending rows for one key split the events
 * between them, so neither may ever hold (apache/airflow #71070, fixed from 3.4 by a unique key).
 * From 3.3 the step skips a stale DAG's rows and deletes a row whose rollup fingerprint is not the
 * timetable's (docs/explain.md). A partition mapper that rolls several upstream keys into one (a
 * rollup, 3.3's `RollupMapper`) needs the keys its window names, as many as its wait policy asks
 * (src/airflow/rollupWindow.ts); one airlock cannot count is not counted received, so such a
 * partition is never said to run.
 */
function explainPartitioned(
  dag: ExplainDag,
  tree: ConditionTree | undefined,
  context: PageContext,
  partitions: readonly ExplainPartition[],
  options: ExplainOptions,
  base: Pick<DagExplanation, 'dag_id' | 'queued' | 'runs'>,
  findings: FindingJson[],
): DagExplanation {
  // 3.3's step (the store reads a fingerprint per row only there) skips a stale DAG's rows and
  // deletes a row queued under another mapper definition before it evaluates any.
  const freshActive = partitions.some((p) => p.fingerprint !== undefined)
  const skipped = freshActive && dag.stale
  const evaluated = partitions.map((p) => {
    const {received, rollups} = receivedOf(dag, p, context)
    const queue: QueuedAssets = {
      assets: [...received].flatMap((id) => {
        const asset = context.byId.get(id)
        return asset ? [{name: asset.name, uri: asset.uri, active: asset.active}] : []
      }),
      aliases: linkedAliases(received, context),
    }
    const result = evaluateTree(tree, queuedLeaf(queue))
    const cleared =
      !skipped &&
      p.fingerprint !== undefined &&
      dag.rollupFingerprint !== undefined &&
      !sameFingerprint(p.fingerprint, dag.rollupFingerprint)
    return {partition: p, result, queue, cleared, runs: !skipped && !cleared && result.met, rollups}
  })
  const keys = new Map<string, number>()
  for (const p of partitions) keys.set(p.partitionKey, (keys.get(p.partitionKey) ?? 0) + 1)
  for (const [key, count] of keys) {
    if (count > 1)
      findings.push({
        kind: 'duplicate_partition_run',
        detail: `${count} pending partition runs for key ${key}: the events are split between them, so neither may ever run (apache/airflow #71070)`,
      })
  }
  const stuck = stuckPartition(
    evaluated.filter((e) => e.runs).map((e) => e.partition),
    options,
  )
  if (stuck) findings.unshift(stuck)
  const ready = evaluated.find((e) => e.runs)
  const first = evaluated.find((e) => !e.cleared)
  const nothingYet = tree ? evaluateTree(tree, () => false).waitingFor : []
  return {
    ...base,
    verdict: skipped ? 'blocked' : ready ? 'will_run' : 'waiting',
    ...(skipped
      ? {blocked_by: 'stale' as const, reason: staleSkipped}
      : ready && (dag.paused || dag.stale)
        ? {reason: excludedButRuns(dag)}
        : {}),
    waiting_for: ready ? [] : (first?.result.waitingFor ?? nothingYet),
    condition: tree ? conditionJson(tree, () => false, [], context, undefined) : null,
    partitions: evaluated.map(({partition, result, queue, cleared, runs, rollups}) => ({
      partition_key: partition.partitionKey,
      created_at: partition.createdAt.toISOString(),
      verdict: cleared ? 'cleared' : runs ? 'will_run' : 'waiting',
      waiting_for: cleared ? [] : result.waitingFor,
      received: queue.assets.map((a) => a.name),
      ...(rollups.length > 0 ? {rollups} : {}),
      ...(!cleared && !runs && rollups.some((r) => !r.counted || r.missing) ? {reason: rollupReason(rollups)} : {}),
      ...(cleared
        ? {
            reason:
              partition.fingerprint === null
                ? 'queued without a rollup fingerprint (before 3.3): a coming scheduler loop deletes it and its key log rows; the next event for its key queues it afresh'
                : "queued under another partition mapper definition (its rollup fingerprint is not the DAG's now): a coming scheduler loop deletes it and its key log rows; the next event for its key queues it afresh",
          }
        : {}),
    })),
    findings,
  }
}

/**
 * Stuck: a pending partition run a coming loop would turn into a run (its condition met, not
 * cleared, not skipped) whose last received event is older than --stuck-after: from then on every
 * loop should have created it. One still waiting for an event is normal operation.
 */
function stuckPartition(ready: readonly ExplainPartition[], options: ExplainOptions): FindingJson | undefined {
  const overdue = ready.find((p) => options.now.getTime() - metAt(p).getTime() > options.stuckAfterMs)
  if (!overdue) return undefined
  const since = metAt(overdue)
  return {
    kind: 'stuck',
    detail: `its partition run for key ${overdue.partitionKey} has had what its condition needs since ${instant(since)} (${ago(since, options.now)}; pending since ${instant(overdue.createdAt)}) and no run was created`,
  }
}

/**
 * When a pending partition run's condition became true, at the latest: its last key log row (the
 * event that completed it, or a later one); the row's own creation when it received none.
 */
function metAt(partition: ExplainPartition): Date {
  return partition.lastReceivedAt ?? partition.createdAt
}

type RollupJson = NonNullable<NonNullable<DagExplanation['partitions']>[number]['rollups']>[number]

/**
 * The assets a pending partition run received: one counts once any key arrived, unless its mapper
 * is a rollup (3.3): then when its wait policy is satisfied by the expected upstream keys received.
 */
function receivedOf(
  dag: ExplainDag,
  p: ExplainPartition,
  context: PageContext,
): {received: Set<number>; rollups: RollupJson[]} {
  const rollups: RollupJson[] = []
  const received = new Set<number>()
  for (const r of p.received) {
    const asset = context.byId.get(r.assetId)
    const mapper = dag.partitionMappers
      ? (dag.partitionMappers.byName[asset?.name ?? ''] ?? dag.partitionMappers.fallback)
      : undefined
    const status = rollupStatus(mapper, p.partitionKey, r.sourceKeys)
    if (status.kind === 'not_rollup') {
      received.add(r.assetId)
      continue
    }
    const name = asset?.name ?? String(r.assetId)
    if (status.kind === 'uncountable') {
      rollups.push({asset: name, counted: false, received_keys: r.sourceKeys.length, why: status.why})
      continue
    }
    if (status.satisfied) received.add(r.assetId)
    rollups.push({
      asset: name,
      counted: true,
      received_keys: status.matched,
      expected_keys: status.expected,
      needs: Number.isFinite(status.needs) ? status.needs : null,
      ...(status.satisfied ? {} : {missing: status.missing}),
    })
  }
  return {received, rollups}
}

const staleSkipped =
  "it is stale (its file is gone): from 3.3 the scheduler's partition step skips its pending partition runs"

/**
 * A paused (3.2, 3.3) or stale (3.2) partitioned consumer still gets its run: neither release's
 * `_create_dagruns_for_partitioned_asset_dags` reads `is_paused` (3.2.2 reads no DagModel column,
 * 3.3.2 only `is_stale`); apache/airflow #73151, in neither, makes the step pass over paused,
 * stale and draining DAGs. The run is created QUEUED and the pending row is spent on it.
 */
function excludedButRuns(dag: ExplainDag): string {
  const what = dag.paused ? 'paused' : 'stale (its file is gone)'
  return `it is ${what}, yet this release's partition step creates its run (apache/airflow #73151, which skips paused, stale and draining DAGs, is not in 3.2 or 3.3): ${dag.paused ? 'the run stays queued while the DAG is paused, and ' : ''}the partition is spent on it`
}

/** Why a rollup asset is not counted received yet, in words. */
function rollupReason(rollups: RollupJson[]): string {
  return rollups
    .filter((r) => !r.counted || r.missing)
    .map((r) =>
      r.counted
        ? r.needs === null
          ? `${r.asset} is a rollup whose wait policy needs more keys than its window has (${r.expected_keys}): it never runs`
          : `${r.asset} is a rollup: ${r.received_keys} of the ${r.expected_keys} upstream keys its window needs received, its wait policy needs ${r.needs}${r.missing && r.missing.length > 0 ? ` (missing ${r.missing.join(', ')}${r.expected_keys! - r.received_keys > r.missing.length ? ', …' : ''})` : ''}`
        : `${r.asset} is a rollup: airlock cannot count the keys it needs (${r.why}); it is not counted received`,
    )
    .join('; ')
}

/** Queue rows whose asset row is gone: the scheduler cannot match them to any condition. */
function orphanFindings(dag: ExplainDag): FindingJson[] {
  return dag.queue
    .filter((q) => q.asset === null)
    .map((q) => ({
      kind: 'orphan_queue' as const,
      detail: `queue row for asset id ${q.assetId}, which no longer exists (written ${instant(q.createdAt)})`,
    }))
}

/** Two asset-triggered runs that consumed the same event: one event, two runs (the HA race of apache/airflow #54491, #63507). */
function duplicateRuns(runs: readonly ExplainRun[]): FindingJson[] {
  const findings: FindingJson[] = []
  for (let i = 0; i < runs.length; i++) {
    const mine = new Set(runs[i]!.eventIds)
    for (let j = i + 1; j < runs.length; j++) {
      const shared = runs[j]!.eventIds.filter((id) => mine.has(id))
      if (shared.length === 0) continue
      findings.push({
        kind: 'duplicate_run',
        detail: `runs ${runs[j]!.runId} and ${runs[i]!.runId} both consumed event${shared.length === 1 ? '' : 's'} ${shared.join(', ')}`,
        runs: [runs[j]!.runId, runs[i]!.runId],
        events: shared,
      })
    }
  }
  return findings
}

function eventJson(event: ExplainEvent | null): EventJson | null {
  if (!event) return null
  const source =
    event.sourceDagId === null || event.sourceTaskId === null
      ? 'external'
      : `${event.sourceDagId}/${event.sourceRunId ?? ''}/${event.sourceTaskId}${event.sourceMapIndex !== null && event.sourceMapIndex >= 0 ? `[${event.sourceMapIndex}]` : ''}`
  return {id: event.id, timestamp: event.timestamp.toISOString(), source}
}

export {ago}
