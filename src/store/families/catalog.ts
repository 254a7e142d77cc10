import type {PrimaryKeys, SchemaShape} from '../../airflow/schema.js'
import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'

/** What airlock reads before it knows the Airflow version: the catalog, the server, its sessions. */
export interface CatalogStore {
  /** The alembic head(s), or undefined when there is no alembic_version table (not Airflow). */
  readAlembicHeads(ex: Executor): Promise<string[] | undefined>
  readSchemaShape(ex: Executor, tables: readonly string[]): Promise<SchemaShape>
  /** Each named public table's primary key columns, in key order. */
  readPrimaryKeys(ex: Executor, tables: readonly string[]): Promise<PrimaryKeys>
  readServerInfo(ex: Executor): Promise<ServerInfo>
  /** Whether a transaction begun now may write, and if not, what makes it read-only. */
  readWriteAccess(ex: Executor): Promise<WriteAccess>
  readTablePrivileges(ex: Executor, checks: readonly PrivilegeCheck[]): Promise<PrivilegeResult[]>
  readSettings(ex: Executor, names: readonly string[]): Promise<ServerSetting[]>
  readDeadlockCount(ex: Executor): Promise<number>
  /** `server` says what the server can report (the wait start exists from PostgreSQL 14). */
  readLockSnapshot(ex: Executor, server: Pick<ServerInfo, 'versionNum'>): Promise<SessionRow[]>
  findTaskInstanceByTuple(
    ex: Executor,
    page: number,
    tuple: number,
  ): Promise<(TaskInstanceKey & {id: string}) | undefined>
  findTaskInstancesById(ex: Executor, ids: readonly string[]): Promise<Array<TaskInstanceKey & {id: string}>>
  /** Whether pgrowlocks can be called here (installed in this database, on the search path). */
  readRowLockSupport(ex: Executor): Promise<boolean>
  /**
   * The task_instance rows that transactions `xids` hold row locks on, from pgrowlocks, which
   * reads the whole table: call it once per report, with a statement timeout.
   */
  readTaskInstanceRowLocks(ex: Executor, xids: readonly string[]): Promise<TaskInstanceRowLock[]>
}

/** A task_instance row that some transactions hold a row lock on, as pgrowlocks reports it. */
export interface TaskInstanceRowLock extends TaskInstanceKey {
  id: string
  /** The locking transactions (several when the row is share-locked by more than one). */
  xids: string[]
  /** Their lock modes, in the order of xids: `For Update`, `For No Key Update`, `For Share`, `For Key Share`, `Update`, `No Key Update`. */
  modes: string[]
}

export interface ServerInfo {
  version: string
  versionNum: number
  currentUser: string
  database: string
  isSuperuser: boolean
  /** Member of pg_monitor (or superuser): can see every session's locks and queries. */
  canMonitor: boolean
  /** The TLS version of this session ('TLSv1.3'), null when it is not encrypted. */
  tls: string | null
}

/**
 * What a writer's transaction will get: `readOnly` is transaction_read_only as a transaction begun
 * now sees it (on for every transaction of a hot standby, or where default_transaction_read_only
 * is on), with the two reasons it can be on.
 */
export interface WriteAccess {
  readOnly: boolean
  /** pg_is_in_recovery(): a hot standby, which accepts no writes whatever the settings say. */
  inRecovery: boolean
  /** default_transaction_read_only as this session got it. */
  defaultReadOnly: boolean
  /** Where that value comes from (pg_settings.source: `database`, `user`, `configuration file`, `client`, …). */
  defaultReadOnlySource: string
}

export interface PrivilegeCheck {
  object: string
  kind: 'table' | 'sequence'
  privilege: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'USAGE'
}

export interface PrivilegeResult extends PrivilegeCheck {
  granted: boolean
}

export interface ServerSetting {
  name: string
  /** What a new session of this role on this database gets (pg_settings.reset_val). */
  setting: string
  unit: string | null
  /** Where that value comes from (`default`, `server configuration`, `database`, `user`, `database user`, …). */
  source: string
  /** airlock's own session value, where it set one that differs (its read limits). */
  sessionSetting: string | null
}

/**
 * One look at a client session of this database: what it runs, what it waits for, who blocks it
 * (the sessions directly in its way), and the row locks it holds.
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
  /** The client's address; null for a Unix-socket connection. */
  client_addr: string | null
  backend_start: Date | null
  /** Its transaction's id, once it has one (a write or a row lock takes one); what pgrowlocks names lockers by. */
  backend_xid: string | null
  blocked_by: number[]
  sampled_at: Date
  /** When the current lock wait began, where the server reports it, else null. */
  wait_start: Date | null
  /** The lock this session waits for, if any. */
  waiting_on: {
    locktype: string
    relation: string | null
    page: number | null
    tuple: number | null
    mode: string
  } | null
  /** Tuple locks it holds (a row-lock waiter holds the tuple lock of the row it queues for). */
  held_tuples: Array<{relation: string; page: number; tuple: number}>
  /** Tables on which it holds row-level intent locks (FOR UPDATE or writes). */
  row_locked_tables: string[]
}
