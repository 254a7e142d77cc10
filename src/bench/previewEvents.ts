import {
  clearPreviewQueue,
  fillPreviewEventQueue,
  probeDag,
  readProbe,
  resetPreviewQueue,
  seedPreviewWorld,
  type PreviewWorldOptions,
} from '../worlds/previewWorld.js'
import {runProtocol, type ProtocolOptions} from '../protocol/protocol.js'
import {distribution, type Distribution} from '../report/stats.js'
import {benchWriter, type ScratchServer} from './scratch.js'

/** The two ways one completion of the per-event world is measured, side by side. */
type EventsVariant = 'preview' | 'no_downstream'

export interface PreviewEventsPlan {
  /** Queue sizes (asset_dag_run_queue rows, one per pending event and consumer) filled to, one after another. */
  queueSizes: number[]
  runs: number
  warmup: number
}

export interface PreviewEventsRow {
  queueRows: number
  register: Record<EventsVariant, Distribution>
}

export interface PreviewEventsReport {
  world: PreviewWorldOptions
  runs: number
  warmup: number
  rows: PreviewEventsRow[]
}

/**
 * The per-event world (the 3.4 development line's queue, a row per pending event): a producer of 2 × 10 assets,
 * 3 consumers each scheduled on all 20 (a condition small enough to be asked leaf by leaf), and a
 * probe DAG whose task emits the first 10. The queue holds a backlog of events on the other 10,
 * each queued for every consumer, so a consumer's rows grow with the backlog while its condition
 * does not. Each point alternates a completion with the preview and one with --no-downstream.
 */
export const previewEventsWorld: Omit<PreviewWorldOptions, 'runs'> = {
  tasks: 2,
  outlets: 10,
  consumers: 3,
  pausedConsumers: 0,
  probes: [10],
}

export const previewEventsDefaults: PreviewEventsPlan = {queueSizes: [1_000, 10_000, 100_000], runs: 30, warmup: 5}

export async function measurePreviewEvents(
  server: ScratchServer,
  plan: PreviewEventsPlan,
  progress: (line: string) => void,
): Promise<PreviewEventsReport> {
  const rounds = plan.runs + plan.warmup
  const world: PreviewWorldOptions = {...previewEventsWorld, runs: rounds * 2 * plan.queueSizes.length}
  progress(
    `preview events: seeding a 3.4 database, ${world.consumers} consumers of ${world.tasks * world.outlets} assets…`,
  )
  const scratch = await server.create({world: (trx) => seedPreviewWorld(trx, world), version: '3.4', poolSize: 2})
  const {knex} = scratch.db
  const writers = {
    preview: benchWriter(scratch, {downstream: true}),
    no_downstream: benchWriter(scratch, {downstream: false}),
  }
  const base: ProtocolOptions = {lockTimeoutMs: 30_000, statementTimeoutMs: 120_000, dryRun: false}
  const rows: PreviewEventsRow[] = []
  try {
    const probe = await readProbe(knex, world.probes[0]!)
    let next = 0
    for (const queueRows of plan.queueSizes) {
      await clearPreviewQueue(knex)
      const filled = await fillPreviewEventQueue(knex, queueRows)
      progress(
        `preview events: queue ${filled.consumerRows} rows, ${probeDag(world.probes[0]!)} × ${plan.runs} runs (+${plan.warmup})…`,
      )
      const samples: Record<EventsVariant, number[]> = {preview: [], no_downstream: []}
      for (let round = 0; round < rounds; round++) {
        const variants: EventsVariant[] = round % 2 === 0 ? ['preview', 'no_downstream'] : ['no_downstream', 'preview']
        for (const variant of variants) {
          const target = probe.tis[next++]!
          const result = await runProtocol(scratch.airflow, {tiId: target.id}, {outletEvents: []}, writers[variant], {
            ...base,
            order: 'register_first',
          })
          if (result.result.outcome !== 'completed')
            throw new Error(`preview events completion (${variant}) ended ${result.result.outcome}`)
          await resetPreviewQueue(knex)
          if (round >= plan.warmup) samples[variant].push(result.timings.registerMs)
        }
      }
      rows.push({
        queueRows: filled.consumerRows,
        register: {preview: distribution(samples.preview), no_downstream: distribution(samples.no_downstream)},
      })
    }
  } finally {
    await scratch.drop()
  }
  return {world, runs: plan.runs, warmup: plan.warmup, rows}
}

/** The report's table: registration p50 with and without the preview, and what the preview adds per queue size. */
export function previewEventsMarkdown(report: PreviewEventsReport, machine: string): string {
  const f = (ms: number) => ms.toFixed(2)
  const added = (row: PreviewEventsRow) => row.register.preview.p50 - row.register.no_downstream.p50
  const lines = [
    `### The per-event world (issue 44, the 3.4 development line's queue): ${report.world.consumers} consumers of ${report.world.tasks * report.world.outlets} assets, a backlog of pending events`,
    '',
    `${machine}; ${report.runs} measured runs per point (+${report.warmup} warm-up), registration p50 (ms), ${report.world.probes[0]} outlets per completion.`,
    '',
    "| queue rows (the consumers') | registration --no-downstream | with preview | preview / without | preview added |",
    '|---|---|---|---|---|',
    ...report.rows.map(
      (row) =>
        `| ${row.queueRows} | ${f(row.register.no_downstream.p50)} | ${f(row.register.preview.p50)} | ${(row.register.preview.p50 / row.register.no_downstream.p50).toFixed(2)}× | ${f(added(row))} |`,
    ),
  ]
  const first = report.rows[0]
  const last = report.rows.at(-1)
  if (first && last && first !== last)
    lines.push(
      '',
      `The preview's added cost at the largest queue / at the smallest: ${f(added(last))} / ${f(added(first))} ms (${(added(last) / Math.max(added(first), 0.01)).toFixed(2)}×).`,
    )
  return lines.join('\n') + '\n'
}
