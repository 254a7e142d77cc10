import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {runExplain} from '../explain/runExplain.js'
import {distribution, type Distribution} from '../report/stats.js'
import {clearQueue, explainWorldSeed, fillConsumerQueue, fillExplainEvents} from '../worlds/explainWorld.js'
import {openFloorClient} from '../worlds/rawFloor.js'
import {scanQueueFloor} from '../worlds/queueScanFloor.js'
import {peakRssOf} from './memory.js'
import type {ScratchServer} from './scratch.js'

/** The floor's script, built beside this module (dist/src/worlds/queueScanFloor.js). */
const floorScript = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'worlds', 'queueScanFloor.js')

/** The floor as a child process, run as `explain --all` is: its time and peak RSS, start-up included. */
export const runQueueScanFloor = (url: string) => peakRssOf([url], [0], undefined, floorScript)

export interface ExplainAllPlan {
  /** Assets of each world (the queue holds a row for all but one per consumer), one world after another. */
  assets: number[]
  /** Asset events of each world, spread over its assets (default 10 per asset). */
  events?: number
  rounds: number
  warmup: number
}

export interface ExplainAllRow {
  assets: number
  events: number
  consumers: number
  queueRows: number
  /** Bytes of `explain --all --ndjson` on this world. */
  outputBytes: number
  /** Whole processes, start-up included: `explain --all --ndjson` and the floor script (seconds). */
  process: {explain: Distribution; floor: Distribution}
  /** The same work inside the bench's process, no start-up: runExplain serialized as --ndjson, the floor's scan (ms). */
  inProcess: {explain: Distribution; floor: Distribution}
  /** Peak RSS over the rounds (MB). */
  peakRssMb: {explain: number; floor: number}
}

export interface ExplainAllReport {
  rounds: number
  warmup: number
  rows: ExplainAllRow[]
}

export const explainAllDefaults: ExplainAllPlan = {assets: [10_000], rounds: 5, warmup: 1}

/**
 * `explain --all` beside its floor (queueScanFloor.ts) on the explain world (explainWorld.ts) of
 * each size: both as child processes, as an operator runs them, and both inside this process
 * (what each costs without its start-up), the two taking turns going first round by round.
 */
export async function measureExplainAll(
  server: ScratchServer,
  plan: ExplainAllPlan,
  progress: (line: string) => void,
): Promise<ExplainAllReport> {
  const rows: ExplainAllRow[] = []
  for (const assets of plan.assets) {
    const events = plan.events ?? 10 * assets
    progress(`explain --all: seeding ${assets} assets over 3 consumers, ${events} events…`)
    const scratch = await server.create({seed: explainWorldSeed(assets), poolSize: 1})
    try {
      const {knex} = scratch.db
      await fillExplainEvents(knex, events)
      await clearQueue(knex)
      const queue = await fillConsumerQueue(knex)
      await knex.raw('analyze')
      progress(`explain --all: ${queue.rows} queue rows, ${plan.rounds} rounds (+${plan.warmup})…`)
      const samples = {
        process: {explain: [] as number[], floor: [] as number[]},
        inProcess: {explain: [] as number[], floor: [] as number[]},
      }
      const peak = {explain: 0, floor: 0}
      let outputBytes = 0
      const client = await openFloorClient(scratch.url)
      try {
        for (let round = 0; round < plan.rounds + plan.warmup; round++) {
          const keep = round >= plan.warmup
          const order = round % 2 === 0 ? (['explain', 'floor'] as const) : (['floor', 'explain'] as const)
          for (const which of order) {
            const run =
              which === 'explain'
                ? await peakRssOf(['explain', '--database-url', scratch.url, '--all', '--ndjson'])
                : await runQueueScanFloor(scratch.url)
            peak[which] = Math.max(peak[which], run.peakRssMb)
            if (keep) samples.process[which].push(run.seconds)
          }
          for (const which of order) {
            const started = performance.now()
            if (which === 'explain') {
              let bytes = 0
              await runExplain(
                scratch.airflow,
                {selection: {kind: 'all'}, runs: 10, stuckAfterMs: 3_600_000},
                (dag) => (bytes += JSON.stringify({type: 'dag', ...dag}).length + 1),
              )
              outputBytes = bytes
            } else {
              await scanQueueFloor(client, () => undefined)
            }
            if (keep) samples.inProcess[which].push(performance.now() - started)
          }
        }
      } finally {
        await client.end()
      }
      rows.push({
        assets,
        events,
        consumers: queue.dags,
        queueRows: queue.rows,
        outputBytes,
        process: {explain: distribution(samples.process.explain), floor: distribution(samples.process.floor)},
        inProcess: {explain: distribution(samples.inProcess.explain), floor: distribution(samples.inProcess.floor)},
        peakRssMb: peak,
      })
    } finally {
      await scratch.drop()
    }
  }
  return {rounds: plan.rounds, warmup: plan.warmup, rows}
}

/** The report: each world's medians side by side, and their ratio. */
export function explainAllMarkdown(report: ExplainAllReport, machine: string): string {
  const lines = [
    '### explain --all beside a scan of the queue and the references (issue 44, target 4)',
    '',
    `${machine}; ${report.rounds} alternated rounds (+${report.warmup} warm-up), medians. Process: the whole command and the floor script, each a child process (start-up included). In process: runExplain serialized as --ndjson, and the floor's two scans, in the bench's own process.`,
    '',
    '| assets | events | consumers | queue rows | output | explain --all (process) | floor (process) | ratio | explain (in process) | floor (in process) | ratio | peak RSS explain / floor |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  for (const row of report.rows) {
    const p = row.process
    const i = row.inProcess
    lines.push(
      `| ${row.assets} | ${row.events} | ${row.consumers} | ${row.queueRows} | ${(row.outputBytes / 1e6).toFixed(1)} MB | ${p.explain.p50.toFixed(2)} s | ${p.floor.p50.toFixed(2)} s | ${(p.explain.p50 / p.floor.p50).toFixed(2)}× | ${i.explain.p50.toFixed(0)} ms | ${i.floor.p50.toFixed(0)} ms | ${(i.explain.p50 / i.floor.p50).toFixed(2)}× | ${row.peakRssMb.explain.toFixed(0)} / ${row.peakRssMb.floor.toFixed(0)} MB |`,
    )
  }
  return lines.join('\n') + '\n'
}
