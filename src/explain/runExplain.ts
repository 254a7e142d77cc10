import {AirlockError} from '../errors.js'
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

/** The store families this module uses. */
type ExplainStore = DownstreamStore & SelectionStore & RegistrationStore

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
}

/**
 * Explains every DAG the selection names, page by page (keyset on dag_id), handing each to
 * `onDag` as its page is read: an `--all` over thousands of DAGs streams in flat memory. Read-only.
 * A `--dag-id` that names no DAG, or an `--asset` that names no asset, is exit 4 before anything
 * is read.
 */
export async function runExplain(
  airflow: Pick<AirflowDatabase<ExplainStore>, 'db' | 'store'>,
  settings: ExplainSettings,
  onDag: (dag: DagExplanation) => void,
): Promise<ExplainSummary> {
  const {db, store} = airflow
  const ex = db.executor
  await requireSelection(airflow, settings.selection)
  const summary: ExplainSummary = {
    dags: 0,
    verdicts: {will_run: 0, waiting: 0, blocked: 0, not_asset_scheduled: 0},
    findings: Object.fromEntries(findingKinds.map((kind) => [kind, 0])) as Record<FindingKind, number>,
  }
  const pageSize = settings.pageSize ?? 500
  let after = ''
  for (;;) {
    const dagIds = await store.pageExplainDags(ex, settings.selection, after, pageSize)
    if (dagIds.length === 0) break
    const page = await store.readExplainPage(ex, dagIds, settings.runs)
    // The last events of the assets the answer calls missing, set on the page's own assets.
    const lastEvents = await store.readExplainLastEvents(ex, missingLeafAssets(page))
    for (const asset of page.assets) asset.lastEvent = lastEvents.get(asset.id) ?? asset.lastEvent
    // One clock for the page: "how long ago" and `stuck` agree within it.
    const now = settings.now ?? new Date()
    for (const dag of explainPage(page, {now, stuckAfterMs: settings.stuckAfterMs})) {
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
  airflow: Pick<AirflowDatabase<ExplainStore>, 'db' | 'store'>,
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
