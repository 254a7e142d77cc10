import type {Knex} from 'knex'

import type {AirflowSchema} from '../../src/airflow/schema.js'
import type {CreatedRun} from './scheduler.js'

/**
 * Every row a success can write, read back in a form two runs of the same world can be compared
 * by: ids and fresh timestamps replaced by what they stand for. A timestamp at or after `since`
 * (the moment the path under test started) reads `new`; an older one, written by the test's own
 * setup, keeps its value, so "created_at did not move" is visible.
 */
export interface Snapshot {
  taskInstance: {
    state: string | null
    endDateIsNew: boolean
    durationIsEndMinusStart: boolean
    nextMethod: unknown
    nextKwargs: unknown
  }
  events: string[]
  assets: string[]
  aliases: string[]
  aliasAssets: string[]
  queue: string[]
  runs: string[]
  logs: Array<Record<string, unknown>>
  /** 3.2+: the pending partition runs and the keys each received (left out before 3.2). */
  partitionRuns?: string[]
  keyLog?: string[]
}

const canonical = (value: unknown): string =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? `{${Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`)
        .join(',')}}`
    : JSON.stringify(value)

export async function snapshot(
  knex: Knex,
  schema: AirflowSchema,
  since: Date,
  tiKey: {dag_id: string; run_id: string; task_id: string; map_index: number},
  /** The scheduler's step, run once the rows are read (it writes no events, so they describe its runs too). */
  schedule: () => Promise<CreatedRun[]>,
): Promise<Snapshot> {
  const at = (t: Date | null) => (t === null ? 'null' : t >= since ? 'new' : t.toISOString())
  const partition = schema.capabilities.eventPartitionKey ? 'e.partition_key' : 'null as partition_key'
  const {rows: events} = await knex.raw<{
    rows: Array<{
      id: number
      name: string
      extra: unknown
      source_dag_id: string | null
      source_run_id: string | null
      source_task_id: string | null
      source_map_index: number
      timestamp: Date
      partition_key: string | null
      aliases: string[] | null
    }>
  }>(
    `select e.id, a.name, e.extra, e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index, e."timestamp", ${partition},
            (select array_agg(al.name order by al.name) from asset_alias_asset_event l join asset_alias al on al.id = l.alias_id where l.event_id = e.id) as aliases
       from asset_event e join asset a on a.id = e.asset_id`,
  )
  const describe = new Map(
    events.map((e) => [
      e.id,
      `${e.name} extra=${canonical(e.extra)} from=${e.source_dag_id}.${e.source_task_id}/${e.source_run_id}[${e.source_map_index}] at=${at(e.timestamp)}` +
        `${e.partition_key === null ? '' : ` partition=${e.partition_key}`}${e.aliases ? ` via=${e.aliases.join('+')}` : ''}`,
    ]),
  )

  const {rows: assets} = await knex.raw<{
    rows: Array<{name: string; uri: string; group: string; extra: unknown; active: boolean}>
  }>(
    `select a.name, a.uri, a."group", a.extra, exists (select 1 from asset_active aa where aa.name = a.name and aa.uri = a.uri) as active from asset a`,
  )
  const {rows: aliases} = await knex.raw<{rows: Array<{name: string; group: string}>}>(
    `select name, "group" from asset_alias`,
  )
  const {rows: aliasAssets} = await knex.raw<{rows: Array<{alias: string; asset: string}>}>(
    `select al.name as alias, a.name as asset from asset_alias_asset l join asset_alias al on al.id = l.alias_id join asset a on a.id = l.asset_id`,
  )
  const perEvent = schema.capabilities.queueShape === 'per_event'
  const {rows: queue} = await knex.raw<{
    rows: Array<{name: string; target_dag_id: string; created_at: Date; asset_event_id: number | null}>
  }>(
    `select a.name, q.target_dag_id, q.created_at, ${perEvent ? 'q.asset_event_id' : 'null as asset_event_id'}
       from asset_dag_run_queue q join asset a on a.id = q.asset_id`,
  )
  const {rows: tis} = await knex.raw<{
    rows: Array<{
      state: string | null
      end_date: Date | null
      start_date: Date | null
      duration: number | null
      next_method: unknown
      next_kwargs: unknown
    }>
  }>(
    `select state, end_date, start_date, duration, next_method, next_kwargs from task_instance where dag_id = ? and run_id = ? and task_id = ? and map_index = ?`,
    [tiKey.dag_id, tiKey.run_id, tiKey.task_id, tiKey.map_index],
  )
  const ti = tis[0]!
  const {rows: logs} = await knex.raw<{rows: Array<Record<string, unknown>>}>(
    `select event, dag_id, task_id, run_id, map_index, try_number, logical_date, owner, extra from log where dttm >= ? order by id`,
    [since],
  )

  const partitions = schema.capabilities.partitionedTimetables ? await partitionRows(knex, describe, at) : {}

  const runs = await schedule()
  return {
    ...partitions,
    taskInstance: {
      state: ti.state,
      endDateIsNew: ti.end_date !== null && ti.end_date >= since,
      durationIsEndMinusStart:
        ti.end_date !== null &&
        ti.start_date !== null &&
        Math.abs(Number(ti.duration) - (ti.end_date.getTime() - ti.start_date.getTime()) / 1000) < 0.01,
      nextMethod: ti.next_method,
      nextKwargs: ti.next_kwargs,
    },
    events: events.map((e) => describe.get(e.id)!).sort(),
    assets: assets
      .map((a) => `${a.name} uri=${a.uri} group=${a.group} extra=${canonical(a.extra)} active=${a.active}`)
      .sort(),
    aliases: aliases.map((a) => `${a.name} group=${a.group}`).sort(),
    aliasAssets: aliasAssets.map((l) => `${l.alias} -> ${l.asset}`).sort(),
    queue: queue
      .map(
        (q) =>
          `${q.name} -> ${q.target_dag_id} created=${at(q.created_at)}${q.asset_event_id === null ? '' : ` event=(${describe.get(q.asset_event_id)})`}`,
      )
      .sort(),
    runs: runs
      .map(
        (r) =>
          `${r.dagId} run_after=${at(r.runAfter)} consumes=[${r.eventIds
            .map((id) => describe.get(id))
            .sort()
            .join('; ')}]`,
      )
      .sort(),
    logs,
  }
}

/**
 * The partition runs a success queued (`asset_partition_dag_run`) and what each received
 * (`partitioned_asset_key_log`). A run the scheduler already created reads `run=created`; from 3.3
 * the rollup fingerprint and partition date are named by whether they were stamped.
 */
async function partitionRows(
  knex: Knex,
  describe: Map<number, string>,
  at: (t: Date | null) => string,
): Promise<Pick<Snapshot, 'partitionRuns' | 'keyLog'>> {
  const {rows: columns} = await knex.raw<{rows: Array<{column_name: string}>}>(
    `select column_name from information_schema.columns
      where table_schema = current_schema() and table_name = 'asset_partition_dag_run'`,
  )
  const has = (name: string) => columns.some((c) => c.column_name === name)
  const {rows: runs} = await knex.raw<{
    rows: Array<{
      target_dag_id: string
      partition_key: string
      created_at: Date
      created: boolean
      fingerprint: string | null
      partition_date: Date | null
    }>
  }>(
    `select target_dag_id, partition_key, created_at, created_dag_run_id is not null as created,
            ${has('rollup_fingerprint') ? 'rollup_fingerprint::text' : 'null'} as fingerprint,
            ${has('partition_date') ? 'partition_date' : 'null'} as partition_date
       from asset_partition_dag_run`,
  )
  const {rows: log} = await knex.raw<{
    rows: Array<{name: string; event_id: number; source: string; target: string; dag_id: string}>
  }>(
    `select a.name, l.asset_event_id as event_id, l.source_partition_key as source, l.target_partition_key as target, l.target_dag_id as dag_id
       from partitioned_asset_key_log l join asset a on a.id = l.asset_id`,
  )
  return {
    partitionRuns: runs
      .map(
        (r) =>
          `${r.target_dag_id} key=${r.partition_key} created_at=${at(r.created_at)}${r.created ? ' run=created' : ''}` +
          `${r.fingerprint === null ? '' : ` fingerprint=${r.fingerprint}`}${r.partition_date === null ? '' : ` date=${r.partition_date.toISOString()}`}`,
      )
      .sort(),
    keyLog: log
      .map((l) => `${l.name} ${l.source} -> ${l.dag_id} ${l.target} event=(${describe.get(l.event_id)})`)
      .sort(),
  }
}
