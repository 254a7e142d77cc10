import type {Knex} from 'knex'

import {checkAirflowSchema, type AirflowSchema} from '../../src/airflow/schema.js'
import type {TaskInstanceRef} from '../../src/airflow/taskInstance.js'
import {completeWriter, type CompleteSettings} from '../../src/complete/completeWriter.js'
import type {OutletEventInput} from '../../src/complete/workItem.js'
import type {CompleteOutcome, ItemResult} from '../../src/protocol/outcomes.js'
import {runProtocol, type ProtocolOptions} from '../../src/protocol/protocol.js'

export async function schemaOf(knex: Knex): Promise<AirflowSchema> {
  const check = await checkAirflowSchema(knex)
  if (!check.supported) throw new Error(check.reason)
  return check.schema
}

/** One `complete` item through the real protocol, with test-friendly defaults. */
export async function completeOne(
  knex: Knex,
  ref: TaskInstanceRef | string,
  options: Partial<CompleteSettings> & Partial<Omit<ProtocolOptions, 'capabilities'>> & {outletEvents?: OutletEventInput[]} = {},
): Promise<ItemResult<CompleteOutcome>> {
  const schema = await schemaOf(knex)
  const writer = completeWriter({
    capabilities: schema.capabilities,
    fromStates: options.fromStates ?? ['running'],
    emitEvents: options.emitEvents ?? true,
    defaultExtra: options.defaultExtra ?? '{}',
    endDate: options.endDate ?? null,
    airlockVersion: 'test',
  })
  return runProtocol(knex, typeof ref === 'string' ? {tiId: ref} : ref, {outletEvents: options.outletEvents ?? []}, writer, {
    capabilities: schema.capabilities,
    lockTimeoutMs: options.lockTimeoutMs ?? 5000,
    statementTimeoutMs: options.statementTimeoutMs ?? 30_000,
    dryRun: options.dryRun ?? false,
    ...(options.retry ? {retry: options.retry} : {}),
    ...(options.order ? {order: options.order} : {}),
  })
}
