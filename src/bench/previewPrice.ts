import {
  clearPreviewQueue,
  fillPreviewQueue,
  previewWorldDefaults,
  readProbe,
  resetPreviewQueue,
  seedPreviewWorld,
  type PreviewWorldOptions,
} from '../worlds/previewWorld.js'
import {floorCompletion, openFloorClient} from '../worlds/rawFloor.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {distribution, type Distribution} from '../report/stats.js'
import {benchWriter, type ScratchDatabase, type ScratchServer} from './scratch.js'

/** The three ways one completion of the preview-price world is measured, side by side. */
export type PreviewVariant = 'preview' | 'no_downstream' | 'floor'

export interface PreviewPricePlan {
  /** Queue sizes (asset_dag_run_queue rows) the world is filled to, one after another. */
  queueSizes: number[]
  /** Outlet counts per completion (one probe DAG each). */
  outlets: number[]
  runs: number
  warmup: number
  world: Omit<PreviewWorldOptions, 'probes' | 'runs'>
}

export interface PreviewPriceRow {
  queueRows: number
  /** Of those, the consumers' rows (the rest are bystander DAGs': the consumers are full). */
  consumerRows: number
  outlets: number
  register: Record<PreviewVariant, Distribution>
  lockHold: Record<PreviewVariant, Distribution>
}

export interface PreviewPriceReport {
  world: PreviewWorldOptions
  runs: number
  warmup: number
  rows: PreviewPriceRow[]
}

/**
 * Registration and lock hold of one completion on the preview-price world (previewWorld.ts), with
 * the downstream preview, with --no-downstream and as the raw floor, interleaved run by run on one
 * database (the variants take turns going first, as measureLockHold's do), at each queue size and
 * outlet count. After each completion the queue is put back as filled, outside the timings, so
 * every completion sees the same queue and queues rows of its own.
 */
export async function measurePreviewPrice(
  server: ScratchServer,
  plan: PreviewPricePlan,
  progress: (line: string) => void,
): Promise<PreviewPriceReport> {
  const rounds = plan.runs + plan.warmup
  const world: PreviewWorldOptions = {
    ...plan.world,
    probes: plan.outlets,
    runs: rounds * 3 * plan.queueSizes.length,
  }
  progress(
    `preview price: seeding ${world.tasks} × ${world.outlets} assets, ${world.consumers} + ${world.pausedConsumers} paused consumers on every one…`,
  )
  const scratch = await server.create({world: (trx) => seedPreviewWorld(trx, world), poolSize: 2})
  const {knex} = scratch.db
  const client = await openFloorClient(scratch.url)
  const writers = {
    preview: benchWriter(scratch, {downstream: true}),
    no_downstream: benchWriter(scratch, {downstream: false}),
  }
  const rows: PreviewPriceRow[] = []
  try {
    const probes = new Map<number, Awaited<ReturnType<typeof readProbe>>>()
    for (const outlets of plan.outlets) probes.set(outlets, await readProbe(knex, outlets))
    for (const [sizeIndex, queueRows] of plan.queueSizes.entries()) {
      await clearPreviewQueue(knex)
      const filled = await fillPreviewQueue(knex, queueRows)
      for (const outlets of plan.outlets) {
        progress(`preview price: queue ${queueRows} rows, ${outlets} outlets × ${plan.runs} runs (+${plan.warmup})…`)
        const probe = probes.get(outlets)!
        const {register, lockHold} = await measurePoint(scratch, client, writers, probe, {
          rounds,
          warmup: plan.warmup,
          first: sizeIndex * rounds * 3,
        })
        rows.push({
          queueRows,
          consumerRows: filled.consumerRows,
          outlets,
          register,
          lockHold,
        })
      }
    }
  } finally {
    await client.end()
    await scratch.drop()
  }
  return {world, runs: plan.runs, warmup: plan.warmup, rows}
}

/** One point: `rounds` rounds of the three variants on the probe's task instances from `first`. */
async function measurePoint(
  scratch: ScratchDatabase,
  client: Awaited<ReturnType<typeof openFloorClient>>,
  writers: Record<Exclude<PreviewVariant, 'floor'>, ReturnType<typeof benchWriter>>,
  probe: Awaited<ReturnType<typeof readProbe>>,
  at: {rounds: number; warmup: number; first: number},
): Promise<Pick<PreviewPriceRow, 'register' | 'lockHold'>> {
  const base: ProtocolOptions = {lockTimeoutMs: 30_000, statementTimeoutMs: 120_000, dryRun: false}
  const samples = {
    register: {preview: [], no_downstream: [], floor: []} as Record<PreviewVariant, number[]>,
    hold: {preview: [], no_downstream: [], floor: []} as Record<PreviewVariant, number[]>,
  }
  for (let round = 0; round < at.rounds; round++) {
    const keep = round >= at.warmup
    const variants = (['preview', 'no_downstream', 'floor'] as const).map((_, i, all) => all[(i + round) % 3]!)
    for (const [i, variant] of variants.entries()) {
      const target = probe.tis[at.first + round * 3 + i]!
      let registerMs: number
      let holdMs: number
      if (variant === 'floor') {
        const floor = await floorCompletion(client, {
          tiId: target.id,
          source: {dagId: target.dag_id, runId: target.run_id, taskId: target.task_id},
          assetIds: probe.assetIds,
        })
        registerMs = floor.registerMs
        holdMs = floor.lockHoldMs
      } else {
        const result = await runProtocol(scratch.airflow, {tiId: target.id}, {outletEvents: []}, writers[variant], {
          ...base,
          order: 'register_first',
        })
        if (result.result.outcome !== 'completed')
          throw new Error(`preview price completion (${variant}) ended ${result.result.outcome}`)
        registerMs = result.timings.registerMs
        holdMs = result.timings.lockHoldMs
      }
      await resetPreviewQueue(scratch.db.knex)
      if (!keep) continue
      samples.register[variant].push(registerMs)
      samples.hold[variant].push(holdMs)
    }
  }
  const map = (record: Record<PreviewVariant, number[]>) =>
    Object.fromEntries(Object.entries(record).map(([k, v]) => [k, distribution(v)])) as Record<
      PreviewVariant,
      Distribution
    >
  return {register: map(samples.register), lockHold: map(samples.hold)}
}

export const previewPriceDefaults: PreviewPricePlan = {
  queueSizes: [1_000, 10_000, 100_000],
  outlets: [10, 300, 600],
  runs: 30,
  warmup: 5,
  world: {
    tasks: previewWorldDefaults.tasks,
    outlets: previewWorldDefaults.outlets,
    consumers: previewWorldDefaults.consumers,
    pausedConsumers: previewWorldDefaults.pausedConsumers,
  },
}

/** The report's tables: registration p50 side by side, the preview's added cost, the lock hold against the floor. */
export function previewPriceMarkdown(report: PreviewPriceReport, machine: string): string {
  const f = (ms: number) => ms.toFixed(2)
  const byOutlets = new Map<number, PreviewPriceRow[]>()
  for (const row of report.rows) byOutlets.set(row.outlets, [...(byOutlets.get(row.outlets) ?? []), row])
  const lines = [
    `### The preview-price world (issue 44): ${report.world.tasks} × ${report.world.outlets} assets, ${report.world.consumers} unpaused + ${report.world.pausedConsumers} paused consumers on every one`,
    '',
    `${machine}; ${report.runs} measured runs per point (+${report.warmup} warm-up), p50 (ms).`,
    '',
    "| queue rows (consumers') | outlets | registration --no-downstream | with preview | preview / without | preview added | floor registration | lock hold preview | lock hold floor | hold / floor |",
    '|---|---|---|---|---|---|---|---|---|---|',
  ]
  for (const row of report.rows) {
    const r = row.register
    const h = row.lockHold
    lines.push(
      `| ${row.queueRows} (${row.consumerRows}) | ${row.outlets} | ${f(r.no_downstream.p50)} | ${f(r.preview.p50)} | ${(r.preview.p50 / r.no_downstream.p50).toFixed(2)}× | ${f(r.preview.p50 - r.no_downstream.p50)} | ${f(r.floor.p50)} | ${f(h.preview.p50)} | ${f(h.floor.p50)} | ${(h.preview.p50 / h.floor.p50).toFixed(2)}× |`,
    )
  }
  lines.push('', '| outlets | preview added at the largest queue / at the smallest |', '|---|---|')
  for (const [outlets, rows] of byOutlets) {
    const added = (row: PreviewPriceRow) => row.register.preview.p50 - row.register.no_downstream.p50
    const first = rows[0]!
    const last = rows.at(-1)!
    lines.push(
      `| ${outlets} | ${f(added(last))} / ${f(added(first))} ms (${(added(last) / Math.max(added(first), 0.01)).toFixed(2)}×) |`,
    )
  }
  return lines.join('\n') + '\n'
}
