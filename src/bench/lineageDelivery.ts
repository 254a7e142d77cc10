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
  /** From the process's start to its last item line: how fast it completed. */
  completionSeconds: number
  perSecond: number
  /** The whole process, the wait for the last events included. */
  processSeconds: number
  /** The summary's lineage counts (sent, unconfirmed, failed, not_tried). */
  lineage: Record<string, number> | null
}

/**
 * `complete` over `items` task instances as an operator runs it (the built CLI, --ndjson,
 * concurrency 4): with lineage off, sending to a local collector that answers at once, and to one
 * that answers each POST after `collectorMs`. Completions per second should not depend on the
 * collector (the two collectors side by side), only the wait after the last item does; lineage
 * on against off is what building and spooling each event costs. Each on a fresh seeded world.
 */
export async function measureLineageDelivery(
  server: ScratchServer,
  options: {items: number; collectorMs: number},
): Promise<LineageDeliveryRow[]> {
  const rows: LineageDeliveryRow[] = []
  for (const collector of ['off', 0, options.collectorMs] as const) {
    const scratch = await server.create({
      seed: {dags: 1, runs: options.items, tasks: 1, outlets: 1, consumers: 1},
      poolSize: 1,
    })
    const slow = collector === 'off' ? undefined : await slowCollector(collector)
    const home = await mkdtemp(path.join(os.tmpdir(), 'airlock-bench-lineage-'))
    try {
      const args = ['complete', '--database-url', scratch.url, '--dag-id', 'etl_001', '--yes', '--ndjson']
      const run = await timeItems([...args, ...(slow ? ['--lineage-wait', '10m'] : ['--no-lineage'])], {
        AIRLOCK_HOME: home,
        ...(slow ? {OPENLINEAGE_URL: slow.url} : {}),
      })
      rows.push({collector, ...run, perSecond: run.items / run.completionSeconds})
    } finally {
      await slow?.close()
      await rm(home, {recursive: true, force: true})
      await scratch.drop()
    }
  }
  return rows
}

/** A collector on 127.0.0.1 that answers every POST after `ms`. */
async function slowCollector(ms: number): Promise<{url: string; close: () => Promise<void>}> {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => setTimeout(() => res.writeHead(201).end(), ms))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** Runs the CLI, timing its item lines as they arrive; the seeded world's one conflict makes exit 3. */
async function timeItems(
  args: string[],
  env: Record<string, string>,
): Promise<Omit<LineageDeliveryRow, 'collector' | 'perSecond'>> {
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
