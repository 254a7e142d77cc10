import {readBenchWorld} from '../worlds/benchWorld.js'
import {openFloorClient} from '../worlds/rawFloor.js'
import {runProtocol} from '../protocol/protocol.js'
import {distribution, type Distribution} from '../report/stats.js'
import {benchWriter, type ScratchServer} from './scratch.js'

export interface StampToCommitRow {
  /** What held the task instance's row while airlock waited: nothing, or another session for holdMs. */
  contention: 'none' | 'holder'
  /** Waiting for the row lock in slices (the default) or in one wait (for comparison). */
  waiting: 'sliced' | 'single_wait'
  holdMs: number
  stampToCommit: Distribution
}

/**
 * The event-to-commit window: how long a completion's events exist uncommitted, from the first
 * registration statement to COMMIT, alone and behind another session holding the task_instance
 * row for `holdMs` (as a scheduler or a slow API server would), with the lock wait in slices
 * and, for comparison, in one wait.
 */
export async function measureStampToCommit(
  server: ScratchServer,
  options: {runs: number; holdMs: number; outlets: number},
): Promise<StampToCommitRow[]> {
  const variants = [
    {contention: 'none', waiting: 'sliced'},
    {contention: 'holder', waiting: 'sliced'},
    {contention: 'holder', waiting: 'single_wait'},
  ] as const
  const scratch = await server.create({
    seed: {dags: 1, runs: options.runs * variants.length, tasks: 1, outlets: options.outlets, consumers: 2},
    poolSize: 2,
  })
  const holder = await openFloorClient(scratch.url)
  try {
    const writer = benchWriter(scratch)
    const {tis} = await readBenchWorld(scratch.db.knex)
    const samples = variants.map(() => [] as number[])
    for (let run = 0; run < options.runs; run++) {
      for (const [index, variant] of variants.entries()) {
        const target = tis[run * variants.length + index]!
        let held: Promise<unknown> | undefined
        if (variant.contention === 'holder') {
          await holder.query('begin')
          await holder.query('select 1 from task_instance where id = $1 for update', [target.id])
          held = holder.query('select pg_sleep($1::float8 / 1000)', [options.holdMs]).then(() => holder.query('commit'))
        }

        const result = await runProtocol(scratch.airflow, {tiId: target.id}, {outletEvents: []}, writer, {
          lockTimeoutMs: options.holdMs * 10,
          statementTimeoutMs: 60_000,
          dryRun: false,
          lockSliceMs: variant.waiting === 'sliced' ? undefined : null,
        })
        await held
        if (result.result.outcome !== 'completed') throw new Error(`bench completion ended ${result.result.outcome}`)
        samples[index]!.push(result.timings.stampToCommitMs!)
      }
    }

    return variants.map((variant, index) => ({
      ...variant,
      holdMs: variant.contention === 'holder' ? options.holdMs : 0,
      stampToCommit: distribution(samples[index]!),
    }))
  } finally {
    await holder.end()
    await scratch.drop()
  }
}
