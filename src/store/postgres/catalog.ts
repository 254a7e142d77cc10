import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import {statement} from '../../engine/prepared.js'
import type {PrimaryKeys, SchemaShape} from '../../airflow/schema.js'
import type {
  CatalogStore,
  PrivilegeCheck,
  PrivilegeResult,
  ServerInfo,
  ServerSetting,
  SessionRow,
  TaskInstanceRowLock,
  WriteAccess,
} from '../families/catalog.js'
import {keyedTaskInstanceOf, type KeyedTaskInstanceRow} from './rows.js'

/**
 * What airlock reads from PostgreSQL's own catalog and statistics views: the alembic head, the
 * columns of Airflow's tables, the server and the current role, privileges, settings, and the
 * sessions and locks that audit-locks reports. None of it depends on the Airflow version.
 */
/**
 * One look at every client session of this database: what it runs, what it waits for, who blocks
 * it (pg_blocking_pids: the sessions directly in its way, not the root of the chain), and the
 * tuple and table locks it holds. pg_locks.waitstart exists from PostgreSQL 14; before it the
 * wait start is unknown (null). Both texts are built once. Every row is sampled at the statement's
 * start: pg_stat_activity is read once per transaction, so a per-row clock would only add the time
 * the pg_locks subqueries took, and could order two sessions' ages the wrong way.
 */
const lockSnapshotText = (
  waitStart: string,
) => `select a.pid, coalesce(a.application_name, '') as application_name, a.usename::text, a.state, a.wait_event_type, a.wait_event,
            a.xact_start, a.state_change, left(a.query, 1000) as query, host(a.client_addr) as client_addr, a.backend_start, a.backend_xid::text as backend_xid, pg_blocking_pids(a.pid) as blocked_by, statement_timestamp() as sampled_at,
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
      order by a.pid`
const lockSnapshot = {
  withWaitStart: statement(
    lockSnapshotText('(select min(l.waitstart) from pg_locks l where l.pid = a.pid and not l.granted)'),
  ),
  withoutWaitStart: statement(lockSnapshotText('null::timestamptz')),
}

export const postgresCatalog: CatalogStore = {
  async readAlembicHeads(ex) {
    const [table] = await ex.query<{present: string | null}>(
      statement(`select to_regclass('public.alembic_version')::text as present`),
    )
    if (!table?.present) return undefined
    const rows = await ex.query<{version_num: string}>(
      statement('select version_num from public.alembic_version order by version_num'),
    )
    return rows.map((row) => row.version_num)
  },

  async readSchemaShape(ex, tables) {
    const rows = await ex.query<{table_name: string; column_name: string}>(
      statement(
        `select table_name, column_name from information_schema.columns
          where table_schema = 'public' and table_name = any($1::text[])
          order by table_name, ordinal_position`,
        [[...tables]],
      ),
    )
    const shape: SchemaShape = new Map()
    for (const row of rows) {
      const columns = shape.get(row.table_name) ?? new Set<string>()
      columns.add(row.column_name)
      shape.set(row.table_name, columns)
    }

    return shape
  },

  async readPrimaryKeys(ex, tables) {
    const rows = await ex.query<{table_name: string; columns: string[]}>(
      statement(
        `select t.relname::text as table_name,
                array(select a.attname::text from unnest(c.conkey) with ordinality k(attnum, n)
                        join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by k.n) as columns
           from pg_constraint c join pg_class t on t.oid = c.conrelid
          where c.contype = 'p' and c.connamespace = 'public'::regnamespace and t.relname = any($1::text[])`,
        [[...tables]],
      ),
    )
    const keys: PrimaryKeys = new Map()
    for (const row of rows) keys.set(row.table_name, row.columns)
    return keys
  },

  async readServerInfo(ex): Promise<ServerInfo> {
    const [row] = await ex.query<{
      version: string
      version_num: string
      current_user: string
      database: string
      is_superuser: boolean
      can_monitor: boolean
      tls: string | null
    }>(
      statement(`select current_setting('server_version') as version,
                        current_setting('server_version_num') as version_num,
                        current_user as current_user,
                        current_database() as database,
                        (select rolsuper from pg_roles where rolname = current_user) as is_superuser,
                        pg_has_role(current_user, 'pg_monitor', 'member') as can_monitor,
                        (select case when s.ssl then s.version end from pg_stat_ssl s where s.pid = pg_backend_pid()) as tls`),
    )
    return {
      version: row!.version,
      versionNum: Number(row!.version_num),
      currentUser: row!.current_user,
      database: row!.database,
      isSuperuser: row!.is_superuser,
      canMonitor: row!.can_monitor || row!.is_superuser,
      tls: row!.tls,
    }
  },

  /**
   * Run on the pool outside any transaction block, so the statement is a transaction of its own,
   * begun as a writer's BEGIN will be: transaction_read_only is what that transaction got (a
   * standby's, or default_transaction_read_only's), not a setting that may differ from it.
   */
  async readWriteAccess(ex): Promise<WriteAccess> {
    const [row] = await ex.query<{
      read_only: boolean
      in_recovery: boolean
      default_read_only: boolean
      source: string
    }>(
      statement(`select current_setting('transaction_read_only') = 'on' as read_only,
                        pg_is_in_recovery() as in_recovery,
                        s.setting = 'on' as default_read_only,
                        s.source
                   from pg_settings s
                  where s.name = 'default_transaction_read_only'`),
    )
    return {
      readOnly: row!.read_only,
      inRecovery: row!.in_recovery,
      defaultReadOnly: row!.default_read_only,
      defaultReadOnlySource: row!.source,
    }
  },

  /** Asks the server, per object, whether the current user holds the privilege (missing objects: not granted). */
  async readTablePrivileges(ex, checks: readonly PrivilegeCheck[]): Promise<PrivilegeResult[]> {
    if (checks.length === 0) return []
    const rows = await ex.query<{granted: boolean | null}>(
      statement(
        `select case when to_regclass(c.item->>'object') is null then null
                     when c.item->>'kind' = 'sequence' then has_sequence_privilege(c.item->>'object', c.item->>'privilege')
                     else has_table_privilege(c.item->>'object', c.item->>'privilege') end as granted
           from jsonb_array_elements($1::jsonb) with ordinality as c(item, n)
          order by c.n`,
        [JSON.stringify(checks)],
      ),
    )
    return checks.map((check, index) => ({...check, granted: rows[index]?.granted === true}))
  },

  /**
   * What a new session of this role on this database gets (reset_val: the value at session
   * start), with where it comes from, and airlock's own session value beside it. The session must
   * have set its limits with SET after connecting (OpenOptions.limitsAfterConnect): a startup
   * option becomes the reset value, and its source `client`. pg_settings shows no source for the
   * reset value once SET, so it is read as PostgreSQL applies it: ALTER ROLE … IN DATABASE, then
   * ALTER ROLE, then ALTER DATABASE (pg_db_role_setting, readable by every role), else the server's
   * configuration (postgresql.conf, ALTER SYSTEM or the command line: which one only a superuser may
   * read), or the built-in default when the value is boot_val.
   */
  async readSettings(ex, names): Promise<ServerSetting[]> {
    return ex.query<ServerSetting>(
      statement(
        `select s.name, s.reset_val as setting, s.unit,
                case when s.source <> 'session' then s.source
                     else coalesce(r.source, case when s.reset_val = s.boot_val then 'default' else 'server configuration' end)
                end as source,
                case when s.source = 'session' and s.setting <> s.reset_val then s.setting end as "sessionSetting"
           from pg_settings s
           left join lateral (
             select case when d.setdatabase <> 0 and d.setrole <> 0 then 'database user'
                         when d.setrole <> 0 then 'user' else 'database' end as source
               from pg_db_role_setting d, unnest(d.setconfig) as c(item)
              where d.setdatabase in (0, (select oid from pg_database where datname = current_database()))
                and d.setrole in (0, (select oid from pg_roles where rolname = session_user))
                and split_part(c.item, '=', 1) = s.name
              order by d.setrole <> 0 desc, d.setdatabase <> 0 desc
              limit 1
           ) r on true
          where s.name = any($1::text[])
          order by s.name`,
        [[...names]],
      ),
    )
  },

  /** pg_stat_database.deadlocks for this database: compared across a sampling window. */
  async readDeadlockCount(ex) {
    const [row] = await ex.query<{deadlocks: string}>(
      statement('select deadlocks from pg_stat_database where datname = current_database()'),
    )
    return Number(row?.deadlocks ?? 0)
  },

  /**
   * One look at every client session of this database: what it runs, what it waits for, who
   * blocks it (pg_blocking_pids: the sessions directly in its way, not the root of the chain),
   * and the tuple and table locks it holds. pg_locks.waitstart exists from PostgreSQL 14; before
   * it the wait start is unknown (null).
   */
  async readLockSnapshot(ex, server) {
    return ex.query<SessionRow>(lockSnapshot[server.versionNum >= 140_000 ? 'withWaitStart' : 'withoutWaitStart'])
  },
  /** Task instances by id (the ids airlock's application_name tags carry), for naming them dag/run/task. */
  async findTaskInstancesById(ex, ids): Promise<Array<TaskInstanceKey & {id: string}>> {
    if (ids.length === 0) return []
    const rows = await ex.query<KeyedTaskInstanceRow>(
      statement(`select id::text, dag_id, run_id, task_id, map_index from task_instance where id = any($1::uuid[])`, [
        [...ids],
      ]),
    )
    return rows.map(keyedTaskInstanceOf)
  },

  /**
   * The task_instance row at a physical position (page, tuple): how a waiter's tuple lock names
   * the row it queues for. Best effort: an update since may have moved the row (the caller says so).
   */
  async findTaskInstanceByTuple(ex, page, tuple): Promise<(TaskInstanceKey & {id: string}) | undefined> {
    const [row] = await ex.query<KeyedTaskInstanceRow>(
      statement(
        `select id, dag_id, run_id, task_id, map_index from task_instance where ctid = format('(%s,%s)', $1::int, $2::int)::tid`,
        [page, tuple],
      ),
    )
    return row ? keyedTaskInstanceOf(row) : undefined
  },

  /**
   * pgrowlocks is a contrib extension, installed per database (CREATE EXTENSION pgrowlocks):
   * resolved as the call below resolves it, through the search path.
   */
  async readRowLockSupport(ex) {
    const [row] = await ex.query<{installed: boolean}>(
      statement(`select to_regprocedure('pgrowlocks(text)') is not null as installed`),
    )
    return row?.installed === true
  },

  /**
   * PostgreSQL keeps a row lock in the row itself (its xmax), not in pg_locks, so only a read of
   * the rows can tell which ones a transaction holds: pgrowlocks reads every row of the table
   * (measured: 145 ms for 1M rows, 233 MB, cached), and reports the live lockers of each locked
   * one. A row a transaction updated is reported as its old version, which is the one this
   * statement sees, found again by its position (a TID scan). Lockers are matched by
   * transaction id: a row locked inside a savepoint carries the subtransaction's id and is not
   * matched.
   */
  async readTaskInstanceRowLocks(ex, xids): Promise<TaskInstanceRowLock[]> {
    if (xids.length === 0) return []
    const rows = await ex.query<KeyedTaskInstanceRow & {xids: string[]; modes: string[]}>(
      statement(
        `select t.id::text, t.dag_id, t.run_id, t.task_id, t.map_index, l.xids::text[] as xids, l.modes
           from pgrowlocks('task_instance') l
           join task_instance t on t.ctid = l.locked_row
          where l.xids::text[] && $1::text[]
          order by t.dag_id, t.run_id, t.task_id, t.map_index`,
        [[...xids]],
      ),
    )
    return rows.map((row) => ({...keyedTaskInstanceOf(row), xids: row.xids, modes: row.modes}))
  },
}
