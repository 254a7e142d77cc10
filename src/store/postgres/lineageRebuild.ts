import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import {notUndone} from './attribution.js'

/**
 * The task instances whose current try airlock completed in a window: the ones with airlock's
 * own `success` audit row (complete's, `extra.airlock`) of that very try, still success. Their
 * COMPLETE events can be rebuilt from the database whatever became of the spool, since the run
 * id is a hash of the try (what `lineage resend` rebuilds). Optional source DAG; oldest first.
 * A completion `airlock undo` took back is left out (notUndone): the task instance may be success
 * again (a mark in the UI), but not by airlock's completion, whose events are gone.
 */
export function readAirlockCompletions() {
  const read = prepared(
    'airlock_completions',
    `select ti.id
       from log l
       join task_instance ti
         on ti.dag_id = l.dag_id and ti.run_id = l.run_id and ti.task_id = l.task_id
        and ti.map_index = l.map_index and ti.try_number = l.try_number
      where l.event = 'success' and l.extra like '{%"airlock"%'
        and l.dttm >= $1::timestamptz and l.dttm < $2::timestamptz
        and ($3::text is null or l.dag_id = $3::text)
        and ti.state = 'success'
        and ${notUndone('l')}
      order by l.dttm, ti.id`,
  )
  return async (ex: Executor, window: {since: Date; until: Date; dagId?: string | undefined}): Promise<string[]> => {
    const rows = await ex.query<{id: string}>(
      read([window.since.toISOString(), window.until.toISOString(), window.dagId ?? null]),
    )
    return rows.map((row) => row.id)
  }
}
