import type {StoredState} from '../airflow/taskInstance.js'
import type {ItemResult} from '../protocol/outcomes.js'
import {runBatch} from '../protocol/batch.js'
import type {LockWaits} from '../protocol/lockWaits.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {Tally} from '../report/tally.js'
import type {WorkItem} from '../selection/workItem.js'
import type {AirflowDatabase} from '../store/schemaCheck.js'
import {completeOutcomes, completeWriter, type CompleteOutcome} from './completeWriter.js'

export type CompleteOutcomeName = keyof typeof completeOutcomes

export interface CompleteRun {
  items: AsyncIterable<WorkItem>
  fromStates: readonly StoredState[]
  emitEvents: boolean
  strictOutlets?: boolean
  allowUnqueuedConsumers?: boolean
  allowMappedDownstream?: boolean
  defaultExtra: string
  endDate: Date | null
  forceEndDate?: boolean | undefined
  /** Clear the failed downstream and re-queue the run, as Airflow's mark-success does. */
  continueRun?: boolean | undefined
  concurrency: number
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  airlockVersion: string
  actor?: string | undefined
  order?: ProtocolOptions['order']
  shouldStop: () => boolean
  onItem: (item: ItemResult<CompleteOutcome>, tally: Tally<CompleteOutcomeName>) => void
  /** Items waiting for their task instance's row lock, for the batch's "who holds it" line. */
  lockWaits?: LockWaits | undefined
}

/** `airlock complete` as a library call: every selected item through the protocol, counted. */
export async function runComplete(airflow: AirflowDatabase, run: CompleteRun): Promise<{tally: Tally<CompleteOutcomeName>; interrupted: boolean}> {
  const writer = completeWriter(airflow.store, {
    fromStates: run.fromStates,
    emitEvents: run.emitEvents,
    strictOutlets: run.strictOutlets,
    allowUnqueuedConsumers: run.allowUnqueuedConsumers,
    allowMappedDownstream: run.allowMappedDownstream,
    defaultExtra: run.defaultExtra,
    endDate: run.endDate,
    forceEndDate: run.forceEndDate,
    airlockVersion: run.airlockVersion,
    actor: run.actor,
    continueRun: run.continueRun ? {behaviourVersion: airflow.schema.behaviourVersion} : undefined,
  })
  const options: ProtocolOptions = {
    lockTimeoutMs: run.lockTimeoutMs,
    statementTimeoutMs: run.statementTimeoutMs,
    dryRun: run.dryRun,
    order: run.order,
    lockWaits: run.lockWaits,
  }
  const tally = new Tally(completeOutcomes)
  const {interrupted} = await runBatch(
    run.items,
    (item: WorkItem) => runProtocol(airflow, item.ref, {outletEvents: item.outletEvents}, writer, options),
    {
      concurrency: run.concurrency,
      shouldStop: run.shouldStop,
      onResult(item) {
        tally.add(item)
        run.onItem(item, tally)
      },
    },
  )
  return {tally, interrupted}
}
