import {spawn} from 'node:child_process'
import {mkdtemp, rm} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import type {ScratchServer} from './scratch.js'

const cliPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'run.js')

export interface LineageDeliveryRow {
  /** `off` (--no-lineage), or the collector's answer time in milliseconds. */
  collector: 'off' | number
  items: number
  /** From the process's start to its last item line: how fast it completed (the median round). */
  completionSeconds: number
  perSecond: number
  /** The whole process, the wait for the last events included (the median round). */
  processSeconds: number
  /** What lineage added to the whole process: its median less lineage off's (0 for off itself). */
  extraSeconds: number
  /** The most POSTs the collector held at once, over the rounds (0 for off). */
  maxInFlight: number
  /** The summary's lineage counts of the last round. */
  lineage: Record<string, number> | null
}

/**
 * `complete` over `items` task instances as an operator runs it (the built CLI, --ndjson,
 * concurrency 4): with lineage off, sending to a local collector that answers at once, and to one
 * that answers each POST after `collectorMs`. Completions per second should not depend on the
 * collector (the two collectors side by side), only the wait after the last item does; lineage
 * on against off is what building and spooling each event costs. `wait`: the run's
 * --lineage-wait (unset: the default an operator gets). Each round on a fresh seeded world, the
 * three variants alternated; medians over `rounds`.
 */
export async function measureLineageDelivery(
  server: ScratchServer,
  options: {items: number; collectorMs: number; rounds?: number; wait?: string | undefined},
): Promise<LineageDeliveryRow[]> {
  const variants = ['off', 0, options.collectorMs] as const
  const runs = new Map<(typeof variants)[number], Array<RunTimes & {maxInFlight: number}>>(
    variants.map((variant) => [variant, []]),
  )
  for (let round = 0; round < Math.max(1, options.rounds ?? 1); round++) {
    for (const collector of variants) {
      const scratch = await server.create({
        seed: {dags: 1, runs: options.items, tasks: 1, outlets: 1, consumers: 1},
        poolSize: 1,
      })
      const slow = collector === 'off' ? undefined : await slowCollector(collector)
      const home = await mkdtemp(path.join(os.tmpdir(), 'airlock-bench-lineage-'))
      try {
        const args = ['complete', '--database-url', scratch.url, '--dag-id', 'etl_001', '--yes', '--ndjson']
        const lineageArgs = slow ? (options.wait ? ['--lineage-wait', options.wait] : []) : ['--no-lineage']
        const run = await timeItems([...args, ...lineageArgs], {
          AIRLOCK_HOME: home,
          ...(slow ? {OPENLINEAGE_URL: slow.url} : {}),
        })
        runs.get(collector)!.push({...run, maxInFlight: slow?.maxInFlight() ?? 0})
      } finally {
        await slow?.close()
        await rm(home, {recursive: true, force: true})
        await scratch.drop()
      }
    }
  }
  const offSeconds = median(runs.get('off')!.map((run) => run.processSeconds))
  return variants.map((collector) => {
    const rounds = runs.get(collector)!
    const completionSeconds = median(rounds.map((run) => run.completionSeconds))
    const processSeconds = median(rounds.map((run) => run.processSeconds))
    return {
      collector,
      items: rounds.at(-1)!.items,
      completionSeconds,
      perSecond: rounds.at(-1)!.items / completionSeconds,
      processSeconds,
      extraSeconds: collector === 'off' ? 0 : processSeconds - offSeconds,
      maxInFlight: Math.max(...rounds.map((run) => run.maxInFlight)),
      lineage: rounds.at(-1)!.lineage,
    }
  })
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** A collector on 127.0.0.1 that answers every POST after `ms`, counting the POSTs it holds at once. */
async function slowCollector(
  ms: number,
): Promise<{url: string; maxInFlight: () => number; close: () => Promise<void>}> {
  let inFlight = 0
  let most = 0
  const server = http.createServer((req, res) => {
    inFlight++
    most = Math.max(most, inFlight)
    req.resume()
    req.on('end', () =>
      setTimeout(() => {
        inFlight--
        res.writeHead(201).end()
      }, ms),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    maxInFlight: () => most,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

type RunTimes = Omit<LineageDeliveryRow, 'collector' | 'perSecond' | 'extraSeconds' | 'maxInFlight'>

/** Runs the CLI, timing its item lines as they arrive; the seeded world's one conflict makes exit 3. */
async function timeItems(args: string[], env: Record<string, string>): Promise<RunTimes> {
  const started = performance.now()
  const child = spawn(process.execPath, [cliPath, ...args], {
    env: {PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...env},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let items = 0
  let lastItem = started
  let lineage: Record<string, number> | null = null
  let pending = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)))
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString()
    const lines = pending.split('\n')
    pending = lines.pop() ?? ''
    for (const line of lines) {
      const parsed = JSON.parse(line) as {type: string; lineage?: Record<string, number>}
      if (parsed.type === 'item') {
        items++
        lastItem = performance.now()
      } else if (parsed.type === 'summary') lineage = parsed.lineage ?? null
    }
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  if (code !== 0 && code !== 3)
    throw new Error(`airlock complete exited ${code} during the benchmark: ${stderr.trim()}`)
  return {
    items,
    completionSeconds: (lastItem - started) / 1000,
    processSeconds: (performance.now() - started) / 1000,
    lineage,
  }
}
