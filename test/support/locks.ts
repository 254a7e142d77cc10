import type {Knex} from 'knex'

/**
 * Waits until backend `pid` is blocked on a heavyweight lock (pg_stat_activity.wait_event_type =
 * 'Lock'), polling the catalog: race tests order their sessions by what the server reports, never
 * by sleeping and hoping.
 */
export async function waitUntilBlocked(observer: Knex, pid: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const {rows} = await observer.raw<{rows: Array<{wait_event_type: string | null}>}>(
      'select wait_event_type from pg_stat_activity where pid = ?',
      [pid],
    )
    if (rows[0]?.wait_event_type === 'Lock') return
    if (Date.now() > deadline) throw new Error(`backend ${pid} was not blocked on a lock within ${timeoutMs} ms`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * Waits until some backend of the observer's own database whose application_name starts with
 * `prefix` is blocked on a lock; returns its pid. Test files run in parallel against one server, so
 * a session of another file's database must never match (a test that terminates the pid it gets
 * would otherwise end another test's completion).
 */
export async function waitUntilAppBlocked(observer: Knex, prefix: string, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const {rows} = await observer.raw<{rows: Array<{pid: number}>}>(
      `select pid from pg_stat_activity
        where datname = current_database() and application_name like ? and wait_event_type = 'Lock'
          -- A relation extension or page lock is a moment's wait on a busy server (an INSERT
          -- growing a table), not the lock a test holds for it.
          and wait_event not in ('extend', 'page')
        limit 1`,
      [`${prefix}%`],
    )
    if (rows[0]) return rows[0].pid
    if (Date.now() > deadline) throw new Error(`no session "${prefix}…" was blocked on a lock within ${timeoutMs} ms`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * Runs `fn` while another transaction (`holder`) holds task instance `tiId`'s row lock, as a
 * scheduler or a worker would. `fn` may change the row through `holder` and commit or roll it back
 * itself; otherwise the holder commits when `fn` returns and rolls back if it throws. Whatever
 * `fn` does, this settles only when `fn` has finished, so its assertions are part of the test.
 */
export async function whileRowLocked<T>(
  knex: Knex,
  tiId: string,
  fn: (holder: Knex.Transaction) => Promise<T>,
): Promise<T> {
  const holder = await knex.transaction()
  try {
    await holder.raw('select 1 from task_instance where id = ? for update', [tiId])
    const result = await fn(holder)
    if (!holder.isCompleted()) await holder.commit()
    return result
  } catch (error) {
    if (!holder.isCompleted()) await holder.rollback()
    throw error
  }
}
