import pg from 'pg'

import {requireAirflowSchema} from '../airflow/schema.js'
import {completeWriter} from '../complete/completeWriter.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {floorCompletion, type FloorPlan} from './floor.js'
import type {ScratchServer} from './scratch.js'
import {distribution, type Distribution} from './stats.js'

export type Ordering = 'register_first' | 'lock_first' | 'floor'

export interface LockHoldRow {
  outlets: number
  lockHold: Record<Ordering, Distribution>
  register: Record<Ordering, Distribution>
  total: Record<Exclude<Ordering, 'floor'>, Distribution>
}

/**
 * Lock hold of the task_instance row during one successful completion emitting `outlets` events,
 * for both orderings through the same protocol code, and the raw floor, interleaved run by run
 * on one database so drift hits all three alike.
 */
export async function measureLockHold(server: ScratchServer, options: {outlets: number; runs: number; warmup: number; consumers: number}): Promise<LockHoldRow> {
  const rounds = options.runs + options.warmup
  const scratch = await server.create({seed: {dags: 1, runs: rounds * 3, tasks: 1, outlets: options.outlets, consumers: options.consumers}, poolSize: 2})
  const client = new pg.Client({connectionString: scratch.url})
  await client.connect()
  try {
    const schema = await requireAirflowSchema(scratch.knex)
    const writer = completeWriter({capabilities: schema.capabilities, fromStates: ['running'], emitEvents: true, defaultExtra: '{}', endDate: null, airlockVersion: 'bench'})
    const base: ProtocolOptions = {capabilities: schema.capabilities, lockTimeoutMs: 30_000, statementTimeoutMs: 60_000, dryRun: false}
    const tis = (await scratch.knex('task_instance').where({state: 'running'}).orderBy('run_id').select('id', 'dag_id', 'run_id', 'task_id')) as Array<{id: string; dag_id: string; run_id: string; task_id: string}>
    const active = (await scratch.knex('task_outlet_asset_reference as r').join('asset as a', 'a.id', 'r.asset_id').join('asset_active as aa', (j) => j.on('aa.name', 'a.name').andOn('aa.uri', 'a.uri')).orderBy('a.id').pluck('a.id')) as number[]
    const queue = (await scratch.knex('dag_schedule_asset_reference as r').join('dag as d', 'd.dag_id', 'r.dag_id').whereIn('r.asset_id', active).where('d.is_paused', false).orderBy(['r.asset_id', 'r.dag_id']).select('r.asset_id', 'r.dag_id')) as Array<{asset_id: number; dag_id: string}>

    const samples = {
      hold: {register_first: [] as number[], lock_first: [] as number[], floor: [] as number[]},
      register: {register_first: [] as number[], lock_first: [] as number[], floor: [] as number[]},
      total: {register_first: [] as number[], lock_first: [] as number[]},
    }
    for (let round = 0; round < rounds; round++) {
      const keep = round >= options.warmup
      const targets = {register_first: tis[round * 3]!, lock_first: tis[round * 3 + 1]!, floor: tis[round * 3 + 2]!}
      // Rotate which strategy goes first each round, so position effects (the WAL writer, the
      // checkpointer, a warm cache) fall on all three alike.
      const orders = (['register_first', 'lock_first', 'floor'] as const).map((_, i, all) => all[(i + round) % all.length]!)
      for (const order of orders) {
        const target = targets[order]
        if (order === 'floor') {
          const plan: FloorPlan = {tiId: target.id, source: {dagId: target.dag_id, runId: target.run_id, taskId: target.task_id}, assetIds: active, queue: queue.map((q) => [q.asset_id, q.dag_id])}
          const floor = await floorCompletion(client, plan)
          if (keep) {
            samples.hold.floor.push(floor.lockHoldMs)
            samples.register.floor.push(floor.registerMs)
          }

          continue
        }

        const result = await runProtocol(scratch.knex, {tiId: target.id}, {outletEvents: []}, writer, {...base, order})
        if (result.result.outcome !== 'completed') throw new Error(`bench completion ${order} ended ${result.result.outcome}`)
        if (!keep) continue
        samples.hold[order].push(result.timings.lockHoldMs)
        samples.register[order].push(result.timings.registerMs)
        samples.total[order].push(result.timings.totalMs)
      }
    }

    const map = <K extends string>(record: Record<K, number[]>) => Object.fromEntries(Object.entries(record).map(([k, v]) => [k, distribution(v as number[])])) as Record<K, Distribution>
    return {outlets: options.outlets, lockHold: map(samples.hold), register: map(samples.register), total: map(samples.total)}
  } finally {
    await client.end()
    await scratch.drop()
  }
}
