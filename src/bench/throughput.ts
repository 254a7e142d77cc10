import {performance} from 'node:perf_hooks'

import {prepareComplete} from '../complete/prepareComplete.js'
import {countEventRows, readBenchWorld} from '../worlds/benchWorld.js'
import {runProtocol} from '../protocol/protocol.js'
import {percentile} from '../report/stats.js'
import {selectTaskInstances} from '../selection/selection.js'
import {floorItem, openFloorClient} from '../worlds/rawFloor.js'
import type {Executor} from '../engine/engine.js'
import {statement} from '../engine/prepared.js'
import type {SelectionStore} from '../store/families/selection.js'
import {isLocalServer, postmasterOf, withCpuPerItem, type CpuPerItem} from './cpuTime.js'
import {benchWriter, type ScratchDatabase, type ScratchServer} from './scratch.js'

export interface ThroughputRow {
  outlets: number
  concurrency: number
  items: number
  /** Medians over `rounds` rounds (the three variants' order rotates from round to round). */
  rounds: number
  seconds: number
  perSecond: number
  failed: number
  /** The same batch with --no-downstream: what the downstream preview costs. */
  noDownstreamPerSecond: number | null
  /** The raw node-postgres floor doing the same per-item transaction at the same concurrency (floorItem). */
  floorPerSecond: number | null
  /** Every round's completions/s, in round order, for the spread the medians hide. */
  runs: {complete: number[]; noDownstream: number[]; floor: number[]}
  /** CPU per completion of each variant (medians of the rounds): where the gap to the floor goes. */
  cpu: {complete: CpuPerItem; noDownstream: CpuPerItem; floor: CpuPerItem}
  /**
   * The warm-up batches, `complete` first: what a process's first batch does, V8 still compiling
   * (its compiler threads count in the client's CPU).
   */
  firstBatch: {complete: number; floor: number; cpu: {complete: CpuPerItem; floor: CpuPerItem}}
}

/** The throughput world: one DAG, one task with `outlets` outlets, `runs` runs, two consumer DAGs per asset. */
const worldSeed = (runs: number, outlets: number) => ({dags: 1, runs, tasks: 1, outlets, consumers: 2})

/** Every task instance of that world (its one DAG is the seed's first, etl_001), in selection order. */
const worldTaskInstances = (store: SelectionStore, ex: Executor) =>
  selectTaskInstances(store, ex, {dagId: 'etl_001', runIds: [], taskIds: []})

const median = (values: readonly number[]) => percentile(values, 50)

/**
 * Completions per second on distinct task instances, the whole `complete` path but rendering,
 * beside --no-downstream and the raw floor. Each variant runs on a fresh world per round, and
 * the variants take turns going first. The first batch of a process is slower than any after it:
 * V8 compiles the hot code on threads of this process while it runs, and airlock's path is long
 * enough that a batch of 100 left its client CPU per completion still falling by half over the
 * next three batches of 1,000 (docs/bench.md). So one warm-up batch of each path, as large as
 * the measured ones, runs first; it is reported as the first batch, not in the medians. What
 * fsync does to a commit moves single batches by tens of percent on these machines: the
 * medians are what is compared.
 */
export async function measureThroughput(
  server: ScratchServer,
  options: {outlets: number; concurrency: number; items: number; rounds?: number},
): Promise<ThroughputRow> {
  const rounds = options.rounds ?? 3
  const firstComplete = await completionsPerSecond(server, options, true)
  const firstFloor = await measureFloorThroughput(server, options)
  const variants = [
    () => completionsPerSecond(server, options, true),
    () => completionsPerSecond(server, options, false),
    () => measureFloorThroughput(server, options),
  ] as const
  const results: Array<Array<{perSecond: number; seconds: number; items: number; failed: number; cpu: CpuPerItem}>> = [
    [],
    [],
    [],
  ]
  for (let round = 0; round < rounds; round++) {
    for (let turn = 0; turn < variants.length; turn++) {
      const variant = (round + turn) % variants.length
      results[variant]!.push(await variants[variant]!())
    }
  }
  const complete = results[0]!
  const perSecond = results.map((runs) => median(runs.map((run) => run.perSecond)))
  const middle = complete.find((run) => run.perSecond === perSecond[0]) ?? complete[0]!
  const cpuOf = (runs: ReadonlyArray<{cpu: CpuPerItem}>): CpuPerItem => {
    const server = runs.flatMap((run) => (run.cpu.serverMs === null ? [] : [run.cpu.serverMs]))
    return {
      clientMs: median(runs.map((run) => run.cpu.clientMs)),
      serverMs: server.length === runs.length ? median(server) : null,
    }
  }
  return {
    outlets: options.outlets,
    concurrency: options.concurrency,
    items: middle.items,
    rounds,
    seconds: middle.seconds,
    perSecond: perSecond[0]!,
    failed: Math.max(...complete.map((run) => run.failed)),
    noDownstreamPerSecond: perSecond[1]!,
    floorPerSecond: perSecond[2]!,
    runs: {
      complete: results[0]!.map((run) => run.perSecond),
      noDownstream: results[1]!.map((run) => run.perSecond),
      floor: results[2]!.map((run) => run.perSecond),
    },
    cpu: {complete: cpuOf(results[0]!), noDownstream: cpuOf(results[1]!), floor: cpuOf(results[2]!)},
    firstBatch: {
      complete: firstComplete.perSecond,
      floor: firstFloor.perSecond,
      cpu: {complete: firstComplete.cpu, floor: firstFloor.cpu},
    },
  }
}

/** One `complete` batch over a fresh world of `items` running task instances (`downstream`: the preview on, the default), with the CPU it took. */
async function completionsPerSecond(
  server: ScratchServer,
  options: {outlets: number; concurrency: number; items: number},
  downstream: boolean,
): Promise<{items: number; seconds: number; perSecond: number; failed: number; cpu: CpuPerItem}> {
  const scratch = await server.create({
    seed: worldSeed(options.items, options.outlets),
    poolSize: options.concurrency + 1,
  })
  try {
    return await withCpuPerItem(await localPostmaster(server, scratch), () =>
      completeBatch(scratch, options, downstream),
    )
  } finally {
    await scratch.drop()
  }
}

async function completeBatch(
  scratch: ScratchDatabase,
  options: {concurrency: number; items: number},
  downstream: boolean,
): Promise<{items: number; seconds: number; perSecond: number; failed: number; done: number}> {
  const {store, db} = scratch.airflow
  const started = performance.now()
  const items = (async function* () {
    for await (const {tiId} of worldTaskInstances(store, db.executor)) yield {ref: {tiId}, outletEvents: []}
  })()
  const batch = await prepareComplete(scratch.airflow, {
    selection: {count: options.items, items, explicit: false},
    settings: {
      fromStates: ['running'],
      emitEvents: true,
      defaultExtra: '{}',
      endDate: null,
      airlockVersion: 'bench',
      downstream,
    },
    write: {concurrency: options.concurrency, lockTimeoutMs: 30_000, statementTimeoutMs: 60_000, dryRun: false},
  })
  const {tally} = await batch.run({shouldStop: () => false, onItem: () => undefined})
  const seconds = (performance.now() - started) / 1000
  return {
    items: tally.selected,
    seconds,
    perSecond: tally.selected / seconds,
    failed: tally.counts.get('failed') ?? 0,
    done: tally.counts.get('completed') ?? 0,
  }
}

/**
 * The floor's completions per second on a world of the same shape: `concurrency` plain clients
 * pulling task instance ids from one list, each item one raw transaction (floorItem).
 */
async function measureFloorThroughput(
  server: ScratchServer,
  options: {outlets: number; concurrency: number; items: number},
): Promise<{perSecond: number; seconds: number; items: number; failed: number; cpu: CpuPerItem}> {
  const scratch = await server.create({
    seed: worldSeed(options.items, options.outlets),
    poolSize: 1,
  })
  const clients = await Promise.all(Array.from({length: options.concurrency}, () => openFloorClient(scratch.url)))
  try {
    const {store, db} = scratch.airflow
    const ids: string[] = []
    for await (const {tiId} of worldTaskInstances(store, db.executor)) ids.push(tiId)
    let next = 0
    const counted = await withCpuPerItem(await localPostmaster(server, scratch), async () => {
      let done = 0
      const started = performance.now()
      await Promise.all(
        clients.map(async (client) => {
          while (next < ids.length) if (await floorItem(client, ids[next++]!)) done++
        }),
      )
      return {done, seconds: (performance.now() - started) / 1000}
    })
    return {
      perSecond: counted.done / counted.seconds,
      seconds: counted.seconds,
      items: ids.length,
      failed: 0,
      cpu: counted.cpu,
    }
  } finally {
    await Promise.all(clients.map((client) => client.end()))
    await scratch.drop()
  }
}

export interface RaceResult {
  racers: number
  outlets: number
  ms: number
  completed: number
  alreadySuccess: number
  events: number
}

/** N concurrent completions of ONE task instance: wall time until all have an outcome. */
export async function measureRace(
  server: ScratchServer,
  options: {racers: number; outlets: number},
): Promise<RaceResult> {
  const scratch = await server.create({
    seed: worldSeed(1, options.outlets),
    poolSize: options.racers + 1,
  })
  try {
    const writer = benchWriter(scratch)
    const target = (await readBenchWorld(scratch.db.knex)).tis[0]!
    const started = performance.now()
    const results = await Promise.all(
      Array.from({length: options.racers}, () =>
        runProtocol(scratch.airflow, {tiId: target.id}, {outletEvents: []}, writer, {
          lockTimeoutMs: 30_000,
          statementTimeoutMs: 60_000,
          dryRun: false,
        }),
      ),
    )
    const ms = performance.now() - started
    const events = await countEventRows(scratch.db.knex)
    return {
      racers: options.racers,
      outlets: options.outlets,
      ms,
      completed: results.filter((r) => r.result.outcome === 'completed').length,
      alreadySuccess: results.filter((r) => r.result.outcome === 'already_success').length,
      events,
    }
  } finally {
    await scratch.drop()
  }
}

/** The scratch server's postmaster, when it runs on this machine (its CPU is then read from /proc). */
async function localPostmaster(server: ScratchServer, scratch: ScratchDatabase): Promise<number | null> {
  if (!isLocalServer(server.adminUrl)) return null
  const [row] = await scratch.db.executor.query<{pid: number}>(statement('select pg_backend_pid() as pid'))
  return row ? postmasterOf(row.pid) : null
}
