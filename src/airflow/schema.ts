/** table name → its column names, for the public schema's tables airlock cares about. */
export type SchemaShape = Map<string, Set<string>>

/**
 * What airlock needs to know about an Airflow database before writing to it: the version from
 * the alembic head, and capabilities read from the catalog. The catalog wins over the version
 * number: a head that claims 3.2 without partition columns is refused.
 */
export interface Capabilities {
  /** asset_event.partition_key (3.2+): events carry the dag_run's partition key. */
  eventPartitionKey: boolean
  /** dag.timetable_partitioned (3.2+): partition-aware consumers exist and must not be queued by airlock. */
  partitionedTimetables: boolean
  /** 'per_asset': (asset_id, target_dag_id) upserted (before 3.4); 'per_event': one row per event (3.4). */
  queueShape: 'per_asset' | 'per_event'
  /** dag_schedule_asset_reference.allow_producer_teams etc. (3.3+). */
  multiTeam: boolean
  /** task_inlet_asset_reference (3.1+). */
  inletReferences: boolean
  /**
   * Which paused or stale consumer DAGs the release skips (`AssetManager.register_asset_change`,
   * airflow-core/src/airflow/assets/manager.py). `id_and_alias_skip_paused_and_stale`: 3.0.x and
   * 3.1.0–3.1.6 skip paused and stale DAGs scheduled by asset id or alias, and queue DAGs
   * scheduled by name or uri (`Asset.ref`) unfiltered. `all_skip_paused`: from apache/airflow
   * #60022 (3.1.7 as #61106, 3.2.0 and later) every reference kind skips paused DAGs only, and a
   * stale DAG is queued.
   */
  consumerFilter: 'id_and_alias_skip_paused_and_stale' | 'all_skip_paused'
  /**
   * Whether consumers are filtered by team (3.3+ `AssetManager._filter_dags_by_team`): the
   * multi-team columns exist and `[core] multi_team` is on. airlock cannot read Airflow's
   * configuration file: it takes `AIRFLOW__CORE__MULTI_TEAM` when set, else counts teams as on
   * when any DAG bundle is assigned to a team (`dag_bundle_team`).
   */
  teamFilter: boolean
}

export interface AirflowSchema {
  alembicHead: string
  airflowVersion: string
  capabilities: Capabilities
}

export type SchemaCheck =
  {supported: true; schema: AirflowSchema} | {supported: false; alembicHead: string | undefined; reason: string; missing: string[]}

/** Every table and column airlock reads or writes, in every supported version. */
export const requiredColumns: Readonly<Record<string, readonly string[]>> = {
  task_instance: [
    'id',
    'dag_id',
    'run_id',
    'task_id',
    'map_index',
    'state',
    'start_date',
    'end_date',
    'duration',
    'try_number',
    'next_method',
    'next_kwargs',
    'updated_at',
    'dag_version_id',
  ],
  serialized_dag: ['id', 'dag_version_id', 'dag_hash', 'data', 'data_compressed'],
  task_instance_history: ['task_instance_id', 'dag_id', 'run_id', 'task_id', 'map_index', 'try_number', 'state'],
  dag_run: ['id', 'dag_id', 'run_id', 'logical_date'],
  dag: ['dag_id', 'is_paused', 'is_stale', 'owners'],
  asset: ['id', 'name', 'uri', 'group', 'extra', 'created_at', 'updated_at'],
  asset_active: ['name', 'uri'],
  asset_alias: ['id', 'name', 'group'],
  asset_alias_asset: ['alias_id', 'asset_id'],
  asset_alias_asset_event: ['alias_id', 'event_id'],
  asset_event: ['id', 'asset_id', 'extra', 'source_dag_id', 'source_run_id', 'source_task_id', 'source_map_index', 'timestamp'],
  asset_dag_run_queue: ['asset_id', 'target_dag_id', 'created_at'],
  dagrun_asset_event: ['dag_run_id', 'event_id'],
  task_outlet_asset_reference: ['asset_id', 'dag_id', 'task_id'],
  dag_schedule_asset_reference: ['asset_id', 'dag_id'],
  dag_schedule_asset_alias_reference: ['alias_id', 'dag_id'],
  dag_schedule_asset_name_reference: ['name', 'dag_id'],
  dag_schedule_asset_uri_reference: ['uri', 'dag_id'],
  log: ['id', 'dttm', 'dag_id', 'task_id', 'run_id', 'map_index', 'try_number', 'event', 'logical_date', 'owner', 'extra'],
}

export const optionalTables = ['task_inlet_asset_reference', 'asset_partition_dag_run', 'partitioned_asset_key_log', 'team', 'dag_bundle_team']

/**
 * What a release does that its tables do not show, read from its
 * `AssetManager.register_asset_change` and queue statements (airflow-core/src/airflow/assets/manager.py):
 *
 * - every release before 3.4 inserts queue rows with `ON CONFLICT DO NOTHING` (3.0 and 3.1
 *   `_postgres_queue_dagruns`, 3.2 and 3.3 `_queue_dagruns_nonpartitioned_postgres`);
 *   apache/airflow #62501 (keep the newest, stamped with the event's time) reached main only and
 *   was replaced by the per-event queue of 3.4 (#70972) before any release carried it;
 * - consumer filters changed with #60022, released in 3.1.7 and 3.2.0. Head `cc92b33c6709` is
 *   shared by 3.1.0 to 3.1.7, so airlock cannot tell 3.1.7 apart and follows 3.1.0–3.1.6.
 */
export function releaseBehaviour(version: string): Pick<Capabilities, 'consumerFilter'> {
  const before60022 = version.startsWith('3.0') || version.startsWith('3.1.0')
  return {consumerFilter: before60022 ? 'id_and_alias_skip_paused_and_stale' : 'all_skip_paused'}
}

export function detectCapabilities(shape: SchemaShape): Omit<Capabilities, 'consumerFilter' | 'teamFilter'> {
  const has = (table: string, column: string) => shape.get(table)?.has(column) ?? false
  return {
    eventPartitionKey: has('asset_event', 'partition_key'),
    partitionedTimetables: has('dag', 'timetable_partitioned'),
    queueShape: has('asset_dag_run_queue', 'asset_event_id') ? 'per_event' : 'per_asset',
    multiTeam:
      has('dag_schedule_asset_reference', 'allow_producer_teams') &&
      has('dag_schedule_asset_reference', 'allow_global_producers') &&
      has('task_outlet_asset_reference', 'allow_consumer_teams') &&
      has('task_outlet_asset_reference', 'allow_global_consumers') &&
      has('dag_bundle_team', 'team_name'),
    inletReferences: shape.has('task_inlet_asset_reference'),
  }
}

export function missingColumns(shape: SchemaShape): string[] {
  const missing: string[] = []
  for (const [table, columns] of Object.entries(requiredColumns)) {
    const present = shape.get(table)
    if (!present) {
      missing.push(`table ${table}`)
      continue
    }

    for (const column of columns) if (!present.has(column)) missing.push(`${table}.${column}`)
  }

  return missing
}

/** Which capabilities a version's head promises; a schema lacking them is not what its head claims. */
export function expectedFor(version: string): Partial<Capabilities> {
  if (version.startsWith('3.4')) return {eventPartitionKey: true, partitionedTimetables: true, queueShape: 'per_event', inletReferences: true}
  if (version.startsWith('3.3'))
    return {eventPartitionKey: true, partitionedTimetables: true, queueShape: 'per_asset', inletReferences: true, multiTeam: true}
  if (version.startsWith('3.2')) return {eventPartitionKey: true, partitionedTimetables: true, queueShape: 'per_asset', inletReferences: true}
  if (version.startsWith('3.1')) return {eventPartitionKey: false, queueShape: 'per_asset', inletReferences: true}
  return {eventPartitionKey: false, partitionedTimetables: false, queueShape: 'per_asset', inletReferences: false}
}

/**
 * `[core] multi_team` as Airflow reads it from its environment (`AIRFLOW__CORE__MULTI_TEAM`,
 * `conf.getboolean`: true/t/1 and false/f/0, any case); undefined when not set.
 */
export function multiTeamSetting(env: NodeJS.ProcessEnv = process.env): boolean | undefined {
  const value = env.AIRFLOW__CORE__MULTI_TEAM?.trim().toLowerCase()
  if (value === undefined || value === '') return undefined
  if (['true', 't', '1'].includes(value)) return true
  if (['false', 'f', '0'].includes(value)) return false
  return undefined
}
