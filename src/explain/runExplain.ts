import {AirlockError, usageError} from '../errors.js'
import {ExitCode} from '../exitCodes.js'
import {closeMatches} from '../input/closeMatches.js'
import {requireAssets} from '../selection/assetFilter.js'
import type {ExplainSelection, DownstreamStore} from '../store/families/downstream.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {
  explainPage,
  findingKinds,
  missingLeafAssets,
  type DagExplanation,
  type FindingKind,
  type Verdict,
} from './explainDag.js'
import type {RegistrationStore} from '../store/families/registration.js'
import type {SelectionStore} from '../store/families/selection.js'
import type {JobStore} from '../store/families/jobs.js'
import {AirflowConfigError} from '../airflow/config.js'
import {componentHealth, healthThresholds, type ComponentHealth, type HealthThresholds} from '../airflow/jobHealth.js'
import {compareVersions} from '../airflow/revisions.js'

/** The store families this module uses. */
type ExplainStore = DownstreamStore & SelectionStore & RegistrationStore & JobStore

export interface ExplainSettings {
  selection: ExplainSelection
  /** Asset-triggered runs shown per DAG (`--runs`). */
  runs: number
  stuckAfterMs: number
  /** DAGs read per page: a bounded number of statements each, memory flat whatever the total. */
  pageSize?: number
  now?: Date
}

export interface ExplainSummary {
  dags: number
  verdicts: Record<Verdict, number>
  findings: Record<FindingKind, number>
  /**
   * Whether a scheduler and a DAG processor are running, as Airflow's health check judges it
   * (src/airflow/jobHealth.ts): a verdict is what a running scheduler does.
   */
  scheduler: ComponentHealth
  dag_processor: ComponentHealth
}

/**
 * Explains every DAG the selection names, page by page (keyset on dag_id), handing each to
 * `onDag` as its page is read: an `--all` over thousands of DAGs streams in flat memory. Read-only.
 * A `--dag-id` that names no DAG, or an `--asset` that names no asset, is exit 4 before anything
 * is read.
 */
export async function runExplain(
  airflow: Pick<AirflowDatabase<ExplainStore>, 'db' | 'store' | 'schema'>,
  settings: ExplainSettings,
  onDag: (dag: DagExplanation) => void,
): Promise<ExplainSummary> {
  const {db, store} = airflow
  const ex = db.executor
  await requireSelection(airflow, settings.selection)
  // The heartbeats once, judged on the first page's clock: a report is one answer about them.
  const thresholds = readThresholds(airflow.schema.behaviourVersion)
  const jobs = await store.readLatestJobs(ex, ['SchedulerJob', 'DagProcessorJob'])
  const jobOf = (type: 'SchedulerJob' | 'DagProcessorJob') => (jobs === 'unreadable' ? jobs : jobs.get(type))
  const healthAt = settings.now ?? new Date()
  const summary: ExplainSummary = {
    dags: 0,
    verdicts: {will_run: 0, waiting: 0, blocked: 0, not_asset_scheduled: 0},
    findings: Object.fromEntries(findingKinds.map((kind) => [kind, 0])) as Record<FindingKind, number>,
    scheduler: componentHealth(jobOf('SchedulerJob'), thresholds.scheduler, healthAt),
    dag_processor: componentHealth(jobOf('DagProcessorJob'), thresholds.dagProcessor, healthAt),
  }
  const deletesQueueWithoutExpression = compareVersions(airflow.schema.behaviourVersion, '3.2.0') >= 0
  const pageSize = settings.pageSize ?? 500
  let after = ''
  for (;;) {
    const dagIds = await store.pageExplainDags(ex, settings.selection, after, pageSize)
    if (dagIds.length === 0) break
    const page = await store.readExplainPage(ex, dagIds, settings.runs)
    // The last events of the assets the answer calls missing, set on the page's own assets.
    const missing = missingLeafAssets(page)
    const lastEvents = await store.readExplainLastEvents(ex, missing)
    for (const asset of page.assets) asset.lastEvent = lastEvents.get(asset.id) ?? asset.lastEvent
    // Whether the page's DAGs consumed those last events (and the aliases'), and who produces the
    // missing assets: what tells "consumed by run R" from "never queued", and what to check next.
    const eventIds = new Set([...lastEvents.values()].map((e) => e.id))
    for (const alias of page.aliases) if (alias.lastEvent) eventIds.add(alias.lastEvent.id)
    const evidence = await store.readExplainLeafEvidence(ex, dagIds, [...eventIds], missing)
    page.consumed = evidence.consumed
    page.producers = evidence.producers
    // One clock for the page: "how long ago" and `stuck` agree within it.
    const now = settings.now ?? new Date()
    const options = {
      now,
      stuckAfterMs: settings.stuckAfterMs,
      scheduler: summary.scheduler,
      dagProcessor: summary.dag_processor,
      deletesQueueWithoutExpression,
    }
    for (const dag of explainPage(page, options)) {
      summary.dags++
      summary.verdicts[dag.verdict]++
      for (const finding of dag.findings) summary.findings[finding.kind]++
      onDag(dag)
    }
    after = dagIds[dagIds.length - 1]!
    if (dagIds.length < pageSize) break
  }
  return summary
}

async function requireSelection(
  airflow: Pick<AirflowDatabase<ExplainStore>, 'db' | 'store' | 'schema'>,
  selection: ExplainSelection,
): Promise<void> {
  if (selection.kind === 'assets') return requireAssets(airflow, selection.assets, '--asset')
  if (selection.kind !== 'dags') return
  const dagIds = await airflow.store.readDagIds(airflow.db.executor)
  const known = new Set(dagIds)
  const unknown = selection.dagIds.filter((id) => !known.has(id))
  if (unknown.length === 0) return
  const close = unknown.flatMap((id) => closeMatches(id, dagIds))
  throw new AirlockError(
    'NOT_FOUND',
    ExitCode.notFound,
    `No DAG is named ${unknown.map((id) => JSON.stringify(id)).join(', ')}${close.length > 0 ? `; did you mean ${[...new Set(close)].join(', ')}?` : ''}`,
    ['Check --dag-id; nothing was read.'],
  )
}

/** Airflow's own thresholds; a value Airflow refuses is a usage error, as the other settings airlock reads. */
function readThresholds(behaviourVersion: string): HealthThresholds {
  try {
    return healthThresholds(behaviourVersion)
  } catch (error) {
    if (error instanceof AirflowConfigError) throw usageError(`Airflow's configuration: ${error.message}.`)
    throw error
  }
}
