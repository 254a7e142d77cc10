import type {StoredState} from '../airflow/taskInstance.js'
import {runBatch} from '../batch/pool.js'
import {lostServer} from '../protocol/outcomes.js'
import type {PreparedBatch, WriteOptions} from '../batch/prepared.js'
import {Tally} from '../batch/tally.js'
import {LineageSender, lineageReport} from '../lineage/lineage.js'
import {lineageWarnings, type LineageSettings} from '../lineage/settings.js'
import {plannerOf, planProtocol} from '../protocol/plan.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {toItemJson, type ItemJson} from '../report/itemJson.js'
import {openItemSource, type ItemSource, type SelectionRequest} from '../selection/itemSource.js'
import type {WorkItem} from '../selection/workItem.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import {usageError} from '../errors.js'
import type {NamedAsset} from '../selection/inputFile.js'
import type {LineageStore} from '../store/families/lineage.js'
import type {SelectionStore} from '../store/families/selection.js'
import {completeOutcomes, completeWriter, type CompleteSettings, type CompleteStore} from './completeWriter.js'

export type CompleteOutcomeName = keyof typeof completeOutcomes

export interface CompleteRequest {
  /** The selection flags, or a source already opened (the benchmark's). */
  selection: SelectionRequest | ItemSource
  /** What a completion writes; --continue-run follows the database's release. */
  settings: Omit<CompleteSettings, 'continueRun'> & {continueRun?: boolean | undefined}
  write: WriteOptions
  /** Where each committed item's OpenLineage COMPLETE goes (after its commit); absent: not asked about. */
  lineage?: LineageSettings | undefined
  /** Benchmark only: Airflow's lock-first order through this same code. */
  order?: ProtocolOptions['order']
}

/**
 * `airlock complete` made ready: the selection opened and counted, the writer built; running it
 * takes every item through the protocol, `concurrency` at a time, and counts them.
 */
export async function prepareComplete(
  airflow: AirflowDatabase<CompleteStore & SelectionStore & LineageStore>,
  request: CompleteRequest,
): Promise<PreparedBatch<ItemJson, CompleteOutcomeName>> {
  const source =
    'items' in request.selection
      ? request.selection
      : await openItemSource(airflow, fromStatesFilter(request.selection, request.settings.fromStates))
  await requireNamedAssets(airflow, source.namedAssets ?? [])
  const {continueRun, ...settings} = request.settings
  const writer = completeWriter(airflow.store, {
    ...settings,
    continueRun: continueRun ? {behaviourVersion: airflow.schema.behaviourVersion} : undefined,
  })
  const {write} = request
  return {
    count: source.count,
    breakdown: source.breakdown,
    notSelected: source.notSelected,
    prompt: {
      action: 'mark',
      noun: 'task instances as success',
    },
    label: 'complete',
    doneOutcomes: ['completed', 'would_complete', 'already_success'],
    explicit: source.explicit,
    dryRun: write.dryRun,
    plan: write.plan,
    warnings: [...(source.warnings ?? []), ...(write.plan ? [] : lineageWarnings(request.lineage))],
    holderOf: (tiId) => airflow.store.readRowHolder(airflow.db.executor, tiId),
    async run({shouldStop, onItem, lockWaits, stop}) {
      const options: ProtocolOptions = {
        lockTimeoutMs: write.lockTimeoutMs,
        statementTimeoutMs: write.statementTimeoutMs,
        dryRun: write.dryRun,
        order: request.order,
        lockWaits,
        stop,
      }
      const tally = new Tally(completeOutcomes)
      const planOptions = {downstream: request.settings.downstream ?? true}
      const lineage =
        request.lineage && !write.plan
          ? new LineageSender(airflow, request.lineage, request.settings.airlockVersion, 'completed')
          : undefined
      const {interrupted, lost} = await runBatch(
        source.items,
        async (item: WorkItem) => {
          const input = {outletEvents: item.outletEvents}
          if (write.plan) return planProtocol(airflow, item.ref, input, plannerOf(writer), planOptions)
          const result = await runProtocol(airflow, item.ref, input, writer, options)
          return lineage ? lineage.finish(result) : result
        },
        {
          concurrency: write.concurrency,
          shouldStop,
          lostServer,
          onResult(item) {
            tally.add(item)
            onItem(toItemJson(item), tally)
          },
        },
      )
      return {tally, interrupted, lost, lineage: await lineageReport(lineage, request.lineage)}
    },
  }
}

/**
 * An outlet_events entry that names no asset at all is a typo: refused (exit 2) naming the line
 * and the asset, before the first item is written, rather than a warning per item and a
 * completion without the event the operator asked for. A string must match an asset's name or
 * uri (an alias's target exactly one, as aliasEmissions requires again per item); `{name, uri}`
 * an asset with both, but for an alias's target, which the emission may create (Airflow 3.1.5+
 * `register_asset_changes_in_db` creates it). An asset that exists but is not an active outlet of
 * the task stays a warning per item: Airflow ignores the extra it was given, as
 * `register_asset_changes_in_db` (airflow-core/src/airflow/models/taskinstance.py, 3.0) reads
 * `asset_event_extras` only for the task's own outlets.
 */
async function requireNamedAssets(
  airflow: AirflowDatabase<CompleteStore>,
  named: readonly NamedAsset[],
): Promise<void> {
  const checked = named.filter((n) => typeof n.asset === 'string' || !n.throughAlias)
  if (checked.length === 0) return
  const strings = [...new Set(checked.map((n) => (typeof n.asset === 'string' ? n.asset : n.asset.name)))]
  const found = await airflow.store.findAssetsByNameOrUri(airflow.db.executor, strings)
  const problems = checked.flatMap(({asset, throughAlias, where}) => {
    if (typeof asset === 'string') {
      const matches = found.get(asset) ?? []
      if (matches.length === 0)
        return [`${where}: outlet_events name asset ${JSON.stringify(asset)}, which matches no asset (by name or uri)`]
      if (throughAlias && matches.length > 1)
        return [
          `${where}: outlet_events name ${JSON.stringify(asset)} as an alias's target, which matches ${matches.length} assets`,
        ]
      return []
    }
    const exists = (found.get(asset.name) ?? []).some((a) => a.name === asset.name && a.uri === asset.uri)
    return exists ? [] : [`${where}: outlet_events name asset ${asset.name} (${asset.uri}), which does not exist`]
  })
  if (problems.length === 0) return
  throw usageError(`${problems.join('; ')}; nothing written.`, [
    'Check the asset names (airlock does not guess): a string is an existing asset\'s name or uri; name an alias target that may not exist yet as {"name": …, "uri": …} with "alias".',
  ])
}

/**
 * A filter selection takes only the task instances in a --from-state state: the others (the
 * never-run task instances of a DAG's other runs, its successes) are not selected, and the
 * summary counts them (not_selected), instead of a conflict each that would make a backfill exit
 * 3 on any DAG with history. A task instance named one by one (--ti-id, --from-file) is still
 * taken whatever its state: its outcome (conflict) is the answer the operator asked for. Either
 * way the state is read again under the row lock, and one that changed since is a conflict.
 */
function fromStatesFilter(selection: SelectionRequest, fromStates: readonly StoredState[]): SelectionRequest {
  return {...selection, filter: {...selection.filter, states: fromStates}}
}
