import {performance} from 'node:perf_hooks'

import {prepareComplete} from '../complete/prepareComplete.js'
import {countEventRows, readBenchWorld} from '../fixtures/benchWorld.js'
import {runProtocol} from '../protocol/protocol.js'
import {selectTaskInstances} from '../selection/selection.js'
import {floorItem, openFloorClient} from '../fixtures/rawFloor.js'
import {benchWriter, type ScratchServer} from './scratch.js'

export interface ThroughputRow {
  outlets: number
  concurrency: number
  items: number
  seconds: number
  perSecond: number
  failed: number
  /** The same batch with --no-downstream: what the preview's one statement per item costs. */
  noDownstreamPerSecond: number | null
  /** The raw node-postgres floor doing the same per-item transaction at the same concurrency (floorItem). */
  floorPerSecond: number | null
}

/** Completions per second on distinct task instances, the whole `complete` path but rendering. */
export async function measureThroughput(
  server: ScratchServer,
  options: {outlets: number; concurrency: number; items: number},
): Promise<ThroughputRow> {
  const withPreview = await completionsPerSecond(server, options, true)
  return {
    outlets: options.outlets,
    concurrency: options.concurrency,
    ...withPreview,
    noDownstreamPerSecond: (await completionsPerSecond(server, options, false)).perSecond,
    floorPerSecond: await measureFloorThroughput(server, options),
  }
}

/** One `complete` batch over a fresh world of `items` running task instances (`downstream`: the preview on, the default). */
async function completionsPerSecond(
  server: ScratchServer,
  options: {outlets: number; concurrency: number; items: number},
  downstream: boolean,
): Promise<{items: number; seconds: number; perSecond: number; failed: number}> {
  const scratch = await server.create({
    seed: {dags: 1, runs: options.items, tasks: 1, outlets: options.outlets, consumers: 2},
    poolSize: options.concurrency + 1,
  })
  try {
    const {store, db} = scratch.airflow
    const started = performance.now()
    const items = (async function* () {
      for await (const {tiId} of selectTaskInstances(store, db.executor, {dagId: 'etl_001', runIds: [], taskIds: []}))
        yield {ref: {tiId}, outletEvents: []}
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
    }
  } finally {
    await scratch.drop()
  }
}

/**
 * The floor's completions per second on a world of the same shape: `concurrency` plain clients
 * pulling task instance ids from one list, each item one raw transaction (floorItem).
 */
async function measureFloorThroughput(
  server: ScratchServer,
  options: {outlets: number; concurrency: number; items: number},
): Promise<number> {
  const scratch = await server.create({
    seed: {dags: 1, runs: options.items, tasks: 1, outlets: options.outlets, consumers: 2},
    poolSize: 1,
  })
  const clients = await Promise.all(Array.from({length: options.concurrency}, () => openFloorClient(scratch.url)))
  try {
    const {store, db} = scratch.airflow
    const ids: string[] = []
    for await (const {tiId} of selectTaskInstances(store, db.executor, {dagId: 'etl_001', runIds: [], taskIds: []}))
      ids.push(tiId)
    let next = 0
    let done = 0
    const started = performance.now()
    await Promise.all(
      clients.map(async (client) => {
        while (next < ids.length) if (await floorItem(client, ids[next++]!)) done++
      }),
    )
    return done / ((performance.now() - started) / 1000)
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
    seed: {dags: 1, runs: 1, tasks: 1, outlets: options.outlets, consumers: 2},
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
