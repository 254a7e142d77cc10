import {timeCommand, type ScaleCommandRow} from './commandRow.js'
import type {ScratchServer} from './scratch.js'

/**
 * The state right after a bulk `complete` of old runs (a backfill): one task whose runs go back
 * one day each, so their queued, scheduled and start dates are old, completed by airlock itself
 * (events stamped now, each try's audit row naming its events), every event on the one asset the
 * task declares. The missing-events check must cost a few seconds here too: a per-task-instance
 * probe of the asset's events since the try began reads every event of the backfill for each task
 * instance (task instances × events; 14.6-19.4 s at 9k in a user's trial).
 */
export async function timePostBackfill(
  server: ScratchServer,
  taskInstances: number,
  progress: (line: string) => void,
): Promise<ScaleCommandRow[]> {
  progress(`scale: a backfill of ${taskInstances} old runs of one task, completed by airlock…`)
  const scratch = await server.create({
    seed: {dags: 1, runs: taskInstances, tasks: 1, outlets: 1, consumers: 1},
    poolSize: 2,
  })
  try {
    const knex = scratch.db.knex
    // Old runs: queued, scheduled and started on their own day, as a backfill's task instances are.
    await knex.raw(
      `update task_instance ti
          set state = 'running', queued_dttm = r.logical_date, scheduled_dttm = r.logical_date,
              start_date = r.logical_date + interval '1 minute', end_date = null
         from dag_run r where r.dag_id = ti.dag_id and r.run_id = ti.run_id`,
    )
    await knex.raw('analyze')
    const url = scratch.url
    const backfillStarted = new Date(Date.now() - 1000).toISOString()
    const rows: ScaleCommandRow[] = []
    const run = (what: string, args: string[], rowsRead: number, accepted: number[] = [0]) =>
      timeCommand(rows, what, args, rowsRead, {accepted, progress})
    const window = ['--database-url', url, '--all-dags', '--since', '1900-01-01']
    await run(
      `post-backfill: complete of ${taskInstances} old task instances (the backfill itself)`,
      ['complete', ...window, '--yes', '--no-downstream', '--concurrency', '8', '--ndjson'],
      taskInstances,
    )
    await knex.raw('analyze')
    // What an operator checks next: nothing is missing, and both must say so quickly.
    await run(
      `post-backfill: audit-events --since the backfill (${taskInstances} task instances, ${taskInstances} events)`,
      ['audit-events', '--database-url', url, '--since', backfillStarted, '--ndjson'],
      taskInstances,
      [0, 6],
    )
    await run(
      `post-backfill: replay-events --dry-run --since the backfill (${taskInstances} task instances)`,
      [
        'replay-events',
        '--database-url',
        url,
        '--all-dags',
        '--since',
        backfillStarted,
        '--dry-run',
        '--yes',
        '--ndjson',
      ],
      taskInstances,
    )
    return rows
  } finally {
    await scratch.drop()
  }
}
