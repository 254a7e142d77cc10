import type {Knex} from 'knex'

import type {AirflowSchema} from '../../src/airflow/schema.js'
import type {TaskInstanceRef} from '../../src/airflow/taskInstance.js'
import {
  completeWriter,
  type CompleteOutcome,
  type CompleteSettings,
  type CompleteStore,
} from '../../src/complete/completeWriter.js'
import {postgresEngine} from '../../src/engine/postgres/postgresEngine.js'
import type {ItemResult} from '../../src/protocol/outcomes.js'
import {planProtocol, plannerOf} from '../../src/protocol/plan.js'
import {runProtocol, type ProtocolOptions} from '../../src/protocol/protocol.js'
import type {OutletEventInput} from '../../src/selection/workItem.js'
import type {AirflowDatabase} from '../../src/store/airflowDatabase.js'
import type {AirflowStore} from '../../src/store/airflowStore.js'
import {checkAirflowSchema, requireAirflow} from '../../src/store/schemaCheck.js'

/** The test's knex pool as airlock opens a database: the engine over it, the schema checked, the store built. */
export async function airflowOf(knex: Knex): Promise<AirflowDatabase<AirflowStore>> {
  return requireAirflow(postgresEngine.wrap(knex))
}

export async function schemaOf(knex: Knex): Promise<AirflowSchema> {
  const check = await checkAirflowSchema(postgresEngine.wrap(knex))
  if (!check.supported) throw new Error(check.reason)
  return check.schema
}

/** One `complete` item through the real protocol, with test-friendly defaults. */
type CompleteOptions = Partial<CompleteSettings> &
  Partial<ProtocolOptions> & {
    outletEvents?: OutletEventInput[]
    /** The store to run on, shared by several items as in one process (its caches too); default a fresh one. */
    airflow?: AirflowDatabase<CompleteStore>
  }

function writerOf(airflow: AirflowDatabase<CompleteStore>, options: CompleteOptions) {
  return completeWriter(airflow.store, {
    fromStates: options.fromStates ?? ['running'],
    emitEvents: options.emitEvents ?? true,
    strictOutlets: options.strictOutlets ?? false,
    allowUnqueuedConsumers: options.allowUnqueuedConsumers ?? false,
    allowMappedDownstream: options.allowMappedDownstream ?? false,
    defaultExtra: options.defaultExtra ?? '{}',
    endDate: options.endDate ?? null,
    airlockVersion: 'test',
    actor: options.actor,
    continueRun: options.continueRun,
  })
}

/** One `complete --plan` item: what the write would do, on SELECT alone. */
export async function planOne(
  knex: Knex,
  ref: TaskInstanceRef | string,
  options: CompleteOptions = {},
): Promise<ItemResult<CompleteOutcome>> {
  const airflow = options.airflow ?? (await airflowOf(knex))
  return planProtocol(
    airflow,
    typeof ref === 'string' ? {tiId: ref} : ref,
    {outletEvents: options.outletEvents ?? []},
    plannerOf(writerOf(airflow, options)),
    {downstream: options.downstream ?? true},
  )
}

export async function completeOne(
  knex: Knex,
  ref: TaskInstanceRef | string,
  options: CompleteOptions = {},
): Promise<ItemResult<CompleteOutcome>> {
  const airflow = options.airflow ?? (await airflowOf(knex))
  const writer = writerOf(airflow, options)
  return runProtocol(
    airflow,
    typeof ref === 'string' ? {tiId: ref} : ref,
    {outletEvents: options.outletEvents ?? []},
    writer,
    {
      lockTimeoutMs: options.lockTimeoutMs ?? 5000,
      statementTimeoutMs: options.statementTimeoutMs ?? 30_000,
      dryRun: options.dryRun ?? false,
      retry: options.retry,
      order: options.order,
      lockSliceMs: options.lockSliceMs,
    },
  )
}
