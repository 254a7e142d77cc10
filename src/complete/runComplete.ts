import type {Knex} from 'knex'

import type {AirflowSchema} from '../airflow/schema.js'
import type {TaskInstanceState} from '../airflow/taskInstance.js'
import type {CompleteOutcome, ItemResult} from '../protocol/outcomes.js'
import {runBatch} from '../protocol/batch.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {Tally} from '../protocol/tally.js'
import {completeWriter} from './completeWriter.js'
import type {WorkItem} from './workItem.js'

export const completeOutcomes = ['completed', 'already_success', 'conflict', 'not_found', 'failed'] as const

export interface CompleteRun {
  items: AsyncIterable<WorkItem>
  schema: AirflowSchema
  fromStates: readonly TaskInstanceState[]
  emitEvents: boolean
  defaultExtra: string
  endDate: Date | null
  concurrency: number
  lockTimeoutMs: number
  statementTimeoutMs: number
  dryRun: boolean
  airlockVersion: string
  order?: ProtocolOptions['order']
  shouldStop: () => boolean
  onItem: (item: ItemResult<CompleteOutcome>, tally: Tally<CompleteOutcome>) => void
}

/** `airlock complete` as a library call: every selected item through the protocol, counted. */
export async function runComplete(knex: Knex, run: CompleteRun): Promise<{tally: Tally<CompleteOutcome>; interrupted: boolean}> {
  const capabilities = run.schema.capabilities
  const writer = completeWriter({
    capabilities,
    fromStates: run.fromStates,
    emitEvents: run.emitEvents,
    defaultExtra: run.defaultExtra,
    endDate: run.endDate,
    airlockVersion: run.airlockVersion,
  })
  const options: ProtocolOptions = {
    capabilities,
    lockTimeoutMs: run.lockTimeoutMs,
    statementTimeoutMs: run.statementTimeoutMs,
    dryRun: run.dryRun,
    order: run.order,
  }
  const tally = new Tally<CompleteOutcome>(completeOutcomes)
  const {interrupted} = await runBatch(run.items, (item: WorkItem) => runProtocol(knex, item.ref, {outletEvents: item.outletEvents}, writer, options), {
    concurrency: run.concurrency,
    shouldStop: run.shouldStop,
    onResult(item) {
      tally.add(item)
      run.onItem(item, tally)
    },
  })
  return {tally, interrupted}
}
