import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {serverFacts} from '../worlds/admin.js'
import {fillEvents} from '../worlds/benchWorld.js'
import {measureLockHold, type LockHoldRow} from './lockHold.js'
import {peakRssOf, type MemoryRun} from './memory.js'
import {measureStampToCommit, type StampToCommitRow} from './stampToCommit.js'
import type {ScratchServer} from './scratch.js'
import {measureRace, measureThroughput, type RaceResult, type ThroughputRow} from './throughput.js'
import {measureLineageDelivery, type LineageDeliveryRow} from './lineageDelivery.js'

export interface BenchPlan {
  outlets: number[]
  runs: number
  warmup: number
  consumers: number
  concurrency: number[]
  throughputOutlets: number[]
  throughputItems: number
  /** Rounds per throughput point (medians; default 3). */
  throughputRounds?: number
  racers: number
  /** Task instances in the memory run of `complete` (0 skips it). */
  memoryTis: number
  /** Events in the memory run of `export-events` (0 skips it). */
  memoryEvents: number
  /** Completions per variant in the event-to-commit measurement (0 skips it). */
  stampRuns: number
  /** How long the concurrent holder keeps the task instance's row locked there. */
  stampHoldMs: number
  /** Task instances in the lineage delivery run, lineage off beside a slow collector (0 skips it). */
  lineageItems?: number
  /** How long that collector takes to answer each COMPLETE. */
  lineageCollectorMs?: number
}

export interface BenchReport {
  machine: {
    cpus: number
    cpuModel: string
    memoryGb: number
    node: string
    postgres: string
    synchronousCommit: string
    date: string
  }
  plan: BenchPlan
  lockHold: LockHoldRow[]
  throughput: ThroughputRow[]
  race: RaceResult | null
  stampToCommit: StampToCommitRow[]
  memory: Array<MemoryRun & {what: string}>
  lineage?: LineageDeliveryRow[]
}

export async function runBench(
  server: ScratchServer,
  plan: BenchPlan,
  progress: (line: string) => void,
): Promise<BenchReport> {
  const machine = await describeMachine(server.adminUrl)
  const lockHold: LockHoldRow[] = []
  for (const outlets of plan.outlets) {
    progress(`lock hold: ${outlets} outlets × ${plan.runs} runs (+${plan.warmup} warm-up)…`)
    lockHold.push(
      await measureLockHold(server, {outlets, runs: plan.runs, warmup: plan.warmup, consumers: plan.consumers}),
    )
  }

  const throughput: ThroughputRow[] = []
  for (const outlets of plan.throughputOutlets) {
    for (const concurrency of plan.concurrency) {
      progress(`throughput: ${outlets} outlets, concurrency ${concurrency}…`)
      throughput.push(
        await measureThroughput(server, {
          outlets,
          concurrency,
          items: plan.throughputItems,
          ...(plan.throughputRounds ? {rounds: plan.throughputRounds} : {}),
        }),
      )
    }
  }

  progress(`race: ${plan.racers} completions of one task instance…`)
  const race = plan.racers > 0 ? await measureRace(server, {racers: plan.racers, outlets: 10}) : null

  const stampToCommit: StampToCommitRow[] = []
  if (plan.stampRuns > 0) {
    progress(`event-to-commit window: ${plan.stampRuns} completions per variant, holder ${plan.stampHoldMs} ms…`)
    stampToCommit.push(
      ...(await measureStampToCommit(server, {runs: plan.stampRuns, holdMs: plan.stampHoldMs, outlets: 10})),
    )
  }

  const memory: BenchReport['memory'] = []
  if (plan.memoryTis > 0) {
    const tasks = Math.min(100, plan.memoryTis)
    const runs = Math.max(1, Math.ceil(plan.memoryTis / tasks))
    progress(`memory: complete over ${runs * tasks} task instances (--ndjson)…`)
    const scratch = await server.create({seed: {dags: 1, runs, tasks, outlets: 1, consumers: 1}, poolSize: 1})
    try {
      // Exit 3 is expected: the seeded world keeps one task instance up_for_retry (a conflict).
      const run = await peakRssOf(
        ['complete', '--database-url', scratch.url, '--dag-id', 'etl_001', '--yes', '--ndjson', '--concurrency', '4'],
        [0, 3],
      )
      memory.push({...run, what: `complete backfill, ${runs * tasks} task instances, --ndjson`})
    } finally {
      await scratch.drop()
    }
  }

  if (plan.memoryEvents > 0) {
    progress(`memory: export-events over ${plan.memoryEvents} events…`)
    const scratch = await server.create({seed: {dags: 1, runs: 10, tasks: 100, outlets: 1, consumers: 1}, poolSize: 1})
    const file = path.join(os.tmpdir(), `airlock-bench-export-${process.pid}.ndjson`)
    try {
      await fillEvents(scratch.db.knex, plan.memoryEvents)
      const run = await peakRssOf(['export-events', '--database-url', scratch.url, '--output', file])
      memory.push({...run, what: `export-events, ${plan.memoryEvents} events`})
      progress(`memory: audit-events over ${plan.memoryEvents} events…`)
      // Exit 6 is expected: the seeded success task instance has no events (a missing_events finding).
      const audit = await peakRssOf(['audit-events', '--database-url', scratch.url, '--ndjson'], [0, 6])
      memory.push({...audit, what: `audit-events, ${plan.memoryEvents} events over 1000 task instances, --ndjson`})
    } finally {
      await fs.rm(file, {force: true})
      await scratch.drop()
    }
  }

  const lineage: LineageDeliveryRow[] = []
  if ((plan.lineageItems ?? 0) > 0) {
    const collectorMs = plan.lineageCollectorMs ?? 1000
    progress(
      `lineage: complete over ${plan.lineageItems} task instances, lineage off and to a collector answering in ${collectorMs} ms…`,
    )
    // Every event sent (a 10-minute wait), so the collector's whole share shows in the process time.
    lineage.push(...(await measureLineageDelivery(server, {items: plan.lineageItems!, collectorMs, wait: '10m'})))
  }

  return {machine, plan, lockHold, throughput, race, stampToCommit, memory, lineage}
}

export async function describeMachine(adminUrl: string): Promise<BenchReport['machine']> {
  const server = await serverFacts(adminUrl)
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    postgres: server.version,
    synchronousCommit: server.synchronousCommit,
    date: new Date().toISOString().slice(0, 10),
  }
}
