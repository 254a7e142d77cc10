import type {Knex} from 'knex'

/**
 * One look at every client session of this database: what it runs, what it waits for, who blocks
 * it (pg_blocking_pids: the sessions directly in its way, not the root of the chain), and the
 * tuple and table locks it holds. The PostgreSQL seam for lock monitoring; a MySQL version would
 * read performance_schema.data_lock_waits instead.
 */
export interface SessionRow {
  pid: number
  application_name: string
  usename: string | null
  state: string | null
  wait_event_type: string | null
  wait_event: string | null
  xact_start: Date | null
  state_change: Date | null
  query: string | null
  blocked_by: number[]
  sampled_at: Date
  /** When the current lock wait began (pg_locks.waitstart, PostgreSQL 14+), else null. */
  wait_start: Date | null
  /** The lock this session waits for, if any. */
  waiting_on: {locktype: string; relation: string | null; page: number | null; tuple: number | null; mode: string} | null
  /** Tuple locks it holds (a row-lock waiter holds the tuple lock of the row it queues for). */
  held_tuples: Array<{relation: string; page: number; tuple: number}>
  /** Tables on which it holds row-level intent locks (RowShare: FOR UPDATE; RowExclusive: writes). */
  row_locked_tables: string[]
}

export async function readLockSnapshot(db: Knex, options: {hasWaitStart: boolean}): Promise<SessionRow[]> {
  const waitStart = options.hasWaitStart ? '(select min(l.waitstart) from pg_locks l where l.pid = a.pid and not l.granted)' : 'null::timestamptz'
  const {rows} = await db.raw<{rows: SessionRow[]}>(
    `select a.pid, coalesce(a.application_name, '') as application_name, a.usename::text, a.state, a.wait_event_type, a.wait_event,
            a.xact_start, a.state_change, left(a.query, 1000) as query, pg_blocking_pids(a.pid) as blocked_by, clock_timestamp() as sampled_at,
            ${waitStart} as wait_start,
            (select json_build_object('locktype', l.locktype, 'relation', l.relation::regclass::text, 'page', l.page, 'tuple', l.tuple, 'mode', l.mode)
               from pg_locks l where l.pid = a.pid and not l.granted limit 1) as waiting_on,
            coalesce((select json_agg(json_build_object('relation', l.relation::regclass::text, 'page', l.page, 'tuple', l.tuple))
               from pg_locks l where l.pid = a.pid and l.granted and l.locktype = 'tuple'), '[]') as held_tuples,
            coalesce((select array_agg(distinct l.relation::regclass::text)
               from pg_locks l where l.pid = a.pid and l.granted and l.locktype = 'relation' and l.mode in ('RowShareLock', 'RowExclusiveLock')), '{}') as row_locked_tables
       from pg_stat_activity a
      where a.pid <> pg_backend_pid()
        and ((a.datname = current_database() and a.backend_type = 'client backend')
             -- Without pg_monitor other users' rows show only pid and this marker: kept, to be counted.
             or a.query = '<insufficient privilege>')
      order by a.pid`,
  )
  return rows
}
