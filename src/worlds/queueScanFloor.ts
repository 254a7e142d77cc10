import {fileURLToPath} from 'node:url'

import type pg from 'pg'

import {openFloorClient} from './rawFloor.js'

/**
 * The floor of `explain --all` (issue 44, target 4), not a product path: a plain sequential scan
 * of `asset_dag_run_queue` and of `dag_schedule_asset_reference`, every row written to stdout as a
 * JSON line. Whatever explains every asset-scheduled DAG must at least read the queue and what
 * each DAG is scheduled on, and print something per row; this does only that, on a bare
 * node-postgres client (no pool, knex or prepared statements).
 *
 * Run as its own process (`node queueScanFloor.js <url>`), as `explain --all` is: the benchmark
 * times both whole, process start included, on the same world.
 */
export async function scanQueueFloor(client: pg.Client, write: (text: string) => void): Promise<number> {
  let rows = 0
  for (const text of [
    'select q.asset_id, q.target_dag_id, q.created_at from asset_dag_run_queue q',
    'select r.asset_id, r.dag_id, r.created_at from dag_schedule_asset_reference r',
  ]) {
    const result = await client.query(text)
    rows += result.rows.length
    write(result.rows.map((row) => JSON.stringify(row)).join('\n') + '\n')
  }
  return rows
}

async function main(url: string): Promise<void> {
  const client = await openFloorClient(url)
  try {
    const chunks: string[] = []
    await scanQueueFloor(client, (text) => chunks.push(text))
    process.stdout.write(chunks.join(''))
  } finally {
    await client.end()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv[2]!)
