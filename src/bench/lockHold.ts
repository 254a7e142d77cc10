import {readBenchWorld} from '../worlds/benchWorld.js'
import {floorCompletion, openFloorClient, type FloorPlan} from '../worlds/rawFloor.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {distribution, type Distribution} from '../report/stats.js'
import {benchWriter, type ScratchServer} from './scratch.js'

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
 * on one database so drift hits all three alike. The completions run without the downstream
 * preview unless `downstream` says otherwise: the preview is one read before the lock, which the
 * floor does not do, so the registration compared with the floor's is the same writes (the
 * throughput table prices the preview: complete against --no-downstream).
 */
export async function measureLockHold(
  server: ScratchServer,
  options: {outlets: number; runs: number; warmup: number; consumers: number; downstream?: boolean},
): Promise<LockHoldRow> {
  const rounds = options.runs + options.warmup
  const scratch = await server.create({
    seed: {dags: 1, runs: rounds * 3, tasks: 1, outlets: options.outlets, consumers: options.consumers},
    poolSize: 2,
  })
  const client = await openFloorClient(scratch.url)
  try {
    const writer = benchWriter(scratch, {downstream: options.downstream ?? false})
    const base: ProtocolOptions = {lockTimeoutMs: 30_000, statementTimeoutMs: 60_000, dryRun: false}
    const {tis, activeAssetIds: active} = await readBenchWorld(scratch.db.knex)

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
      const orders = (['register_first', 'lock_first', 'floor'] as const).map(
        (_, i, all) => all[(i + round) % all.length]!,
      )
      for (const order of orders) {
        const target = targets[order]
        if (order === 'floor') {
          const plan: FloorPlan = {
            tiId: target.id,
            source: {dagId: target.dag_id, runId: target.run_id, taskId: target.task_id},
            assetIds: active,
          }
          const floor = await floorCompletion(client, plan)
          if (keep) {
            samples.hold.floor.push(floor.lockHoldMs)
            samples.register.floor.push(floor.registerMs)
          }

          continue
        }

        const result = await runProtocol(scratch.airflow, {tiId: target.id}, {outletEvents: []}, writer, {
          ...base,
          order,
        })
        if (result.result.outcome !== 'completed')
          throw new Error(`bench completion ${order} ended ${result.result.outcome}`)
        if (!keep) continue
        samples.hold[order].push(result.timings.lockHoldMs)
        samples.register[order].push(result.timings.registerMs)
        samples.total[order].push(result.timings.totalMs)
      }
    }

    const map = <K extends string>(record: Record<K, number[]>) =>
      Object.fromEntries(Object.entries(record).map(([k, v]) => [k, distribution(v as number[])])) as Record<
        K,
        Distribution
      >
    return {
      outlets: options.outlets,
      lockHold: map(samples.hold),
      register: map(samples.register),
      total: map(samples.total),
    }
  } finally {
    await client.end()
    await scratch.drop()
  }
}
