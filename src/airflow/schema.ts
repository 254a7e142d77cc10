import type {AirflowSetting, AirflowStringSetting} from './config.js'
import {compareVersions, type Placement} from './revisions.js'

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
  /**
   * dag.exceeds_max_non_backfill (3.2+, apache/airflow #60006, migration 0b112f49112d): the
   * scheduler's cached "max_active_runs reached" flag, which `dags_needing_dagruns` excludes a DAG
   * on, asset-triggered ones included.
   */
  maxRunsFlag: boolean
  /**
   * The scheduler's partition step (`SchedulerJobRunner._create_dagruns_for_partitioned_asset_dags`,
   * airflow/jobs/scheduler_job_runner.py). 'all_pending' (3.2.0–3.2.2): every pending
   * `asset_partition_dag_run`, its condition over the assets with a key log row. 'fresh_active'
   * (3.3.0–3.3.2, read the same in both): pending rows of DAGs that are not stale, oldest first, at
   * most 500 a loop; a row whose `rollup_fingerprint` is NULL or not the timetable's is deleted
   * with its key log rows; key log rows of inactive assets do not count. Told apart by the
   * `rollup_fingerprint` column (3.3.0's migration dd5f3a8e2b91).
   */
  partitionStep: 'all_pending' | 'fresh_active' | null
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
   * Partition keys a task chooses per event (3.3+: `outlet_events[asset].add_partitions(...)`,
   * apache/airflow #65447, one event per key server-side #66782, a key-less emission inheriting the
   * run's key #67718). Before 3.3 every event carries the run's partition key.
   */
  eventPartitionKeys: boolean
  /**
   * 3.3+: a key-less event that partition-aware consumers listen to is logged
   * (`Log(event="missing partition key")` in `AssetManager._queue_partitioned_dags`).
   */
  missingPartitionKeyLog: boolean
  /**
   * The asset an alias emission creates when its target does not exist. 'bare' (3.0, 3.1.0–3.1.4):
   * `AssetModel(name=…, uri=…)`, group '' and extra {} by the model's defaults. 'declared' (from
   * apache/airflow #58038, 3.1.5 as #58712; 3.2+): `SerializedAsset(name, uri, group="asset",
   * extra=dest_asset_extra)`, the asset's own extra as the task declared it.
   */
  aliasAssetShape: 'bare' | 'declared'
  /**
   * The events an asset-triggered run consumes before 3.4 (`_create_dag_runs_asset_triggered`,
   * airflow/jobs/scheduler_job_runner.py): those of the DAG's id-referenced assets stamped in
   * (previous asset-triggered run's `run_after`, the newest queue row's `created_at`]. 'assets'
   * (3.0): those assets' events only. 'assets_and_aliases' (3.1, 3.2): and the events of its
   * aliases. 'catchup_floor' (3.3, read in 3.3.2; apache/airflow #68749, backported to 3.3.1): with
   * no previous run and `catchup` off, the window starts at the DAG's earliest
   * `dag_schedule_asset_reference.created_at` instead of the beginning of time.
   */
  eventWindow: 'assets' | 'assets_and_aliases' | 'catchup_floor'
  /**
   * Whether consumers are filtered by team (3.3+ `AssetManager._filter_dags_by_team`): the
   * multi-team columns exist and Airflow's `[core] multi_team` is true (read as Airflow reads it:
   * src/airflow/config.ts).
   */
  teamFilter: boolean
  /**
   * The task state store table (3.3+, migration fde9ed84d07b, 0112_3_3_0_add_task_state_store_and_
   * asset_state_store_tables.py in 3.3.0–3.3.2): `task_state_store`, when the database has it.
   */
  taskStateTable: 'task_state_store' | null
  /** A success clears the task's state store: the table exists and `[state_store] clear_on_success` is true. */
  clearTaskStateOnSuccess: boolean
}

/** Airflow settings airlock read, where it found each (null: not read, the release has no use for it). */
export interface AirflowSettings {
  multiTeam: AirflowSetting | null
  clearStateOnSuccess: AirflowSetting | null
  /**
   * The worker-side task state backend (`[workers] state_store_backend`, 3.3+), read where the
   * release has a task state table; null there when none is set. A worker's success clears its
   * payloads (with `clear_on_success`); airlock, like REST mark-success, deletes only the rows.
   */
  workerStateBackend: AirflowStringSetting | null
}

export interface AirflowSchema {
  alembicHead: string
  /** The placed release as doctor shows it ('3.0.3–3.0.6', '3.1.8 (partly migrated)', '3.3.x (assumed; …)'). */
  airflowVersion: string
  /** The release whose behaviour airlock follows ('3.0.3'). */
  behaviourVersion: string
  placement: Placement['kind']
  capabilities: Capabilities
  settings: AirflowSettings
}

export type SchemaCheck =
  | {supported: true; schema: AirflowSchema}
  | {supported: false; alembicHead: string | undefined; reason: string; missing: string[]}

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
    // complete --continue-run (Airflow's clear): max_tries, external_executor_id, operator.
    'max_tries',
    'external_executor_id',
    'operator',
  ],
  serialized_dag: ['id', 'dag_id', 'dag_version_id', 'dag_hash', 'data', 'data_compressed', 'created_at'],
  task_instance_history: [
    'task_instance_id',
    'dag_id',
    'run_id',
    'task_id',
    'map_index',
    'try_number',
    'state',
    'start_date',
    'end_date',
    'updated_at',
  ],
  dag_run: [
    'id',
    'dag_id',
    'run_id',
    'logical_date',
    // complete --continue-run re-queues a finished run as Airflow's clear does.
    'state',
    'queued_at',
    'start_date',
    'end_date',
    'last_scheduling_decision',
    'clear_number',
    'updated_at',
    'bundle_version',
    'created_dag_version_id',
  ],
  dag: ['dag_id', 'is_paused', 'is_stale', 'owners'],
  asset: ['id', 'name', 'uri', 'group', 'extra', 'created_at', 'updated_at'],
  asset_active: ['name', 'uri'],
  asset_alias: ['id', 'name', 'group'],
  asset_alias_asset: ['alias_id', 'asset_id'],
  asset_alias_asset_event: ['alias_id', 'event_id'],
  asset_event: [
    'id',
    'asset_id',
    'extra',
    'source_dag_id',
    'source_run_id',
    'source_task_id',
    'source_map_index',
    'timestamp',
  ],
  asset_dag_run_queue: ['asset_id', 'target_dag_id', 'created_at'],
  dagrun_asset_event: ['dag_run_id', 'event_id'],
  task_outlet_asset_reference: ['asset_id', 'dag_id', 'task_id'],
  // created_at: the scheduler's event window floor for a first run with catchup off (3.3), and
  // explain's "did the DAG consume this asset when the event came".
  dag_schedule_asset_reference: ['asset_id', 'dag_id', 'created_at'],
  dag_schedule_asset_alias_reference: ['alias_id', 'dag_id', 'created_at'],
  dag_schedule_asset_name_reference: ['name', 'dag_id'],
  dag_schedule_asset_uri_reference: ['uri', 'dag_id'],
  log: [
    'id',
    'dttm',
    'dag_id',
    'task_id',
    'run_id',
    'map_index',
    'try_number',
    'event',
    'logical_date',
    'owner',
    'extra',
  ],
}

export const optionalTables = [
  'task_inlet_asset_reference',
  'asset_partition_dag_run',
  'partitioned_asset_key_log',
  'team',
  'dag_bundle_team',
  'task_state_store',
]

/**
 * What a release does that its tables do not show, read from its
 * `AssetManager.register_asset_change` and queue statements (airflow-core/src/airflow/assets/manager.py):
 *
 * - every release before 3.4 inserts queue rows with `ON CONFLICT DO NOTHING` (3.0 and 3.1
 *   `_postgres_queue_dagruns`, 3.2 and 3.3 `_queue_dagruns_nonpartitioned_postgres`);
 *   apache/airflow #62501 (keep the newest, stamped with the event's time: `ON CONFLICT DO UPDATE
 *   … WHERE created_at < excluded.created_at`) was merged to main between 2026-06-17 and
 *   2026-08-03, and 3.4 replaced it with one row per event (#70972); no 3.2 or 3.3 release carries
 *   it (`_queue_dagruns_nonpartitioned_postgres` uses `on_conflict_do_nothing()` in 3.2.0–3.2.2 and
 *   3.3.0–3.3.2), so airlock follows DO NOTHING on every release before 3.4;
 * - consumer filters changed with #60022, released in 3.1.7 and 3.2.0. Head `cc92b33c6709` is
 *   shared by 3.1.0 to 3.1.7, so airlock cannot tell 3.1.7 apart and follows 3.1.0–3.1.6;
 * - alias-created assets take the declared group and extra from #58038 (3.1.5, backported as
 *   #58712: in the 3.1.5 release notes); on the shared 3.1.0–3.1.7 head airlock follows 3.1.0;
 * - 3.3.0 lets a task choose partition keys per event (#65447, #66782, #67718): the task side is in
 *   Task SDK 1.3.0 (`OutletEventAccessor.add_partitions`), the server side in 3.3.0
 *   (`TaskInstance.register_asset_changes_in_db` `payloads_by_asset`, `ti_update_state`
 *   `_validate_outlet_event_partition_keys`; not in 3.2.0–3.2.2). The `missing partition key` log
 *   row for key-less events partition-aware consumers listen to is older: 3.2.0's
 *   `AssetManager._queue_partitioned_dags` already writes it, as 3.3.x does, so
 *   `missingPartitionKeyLog` starts at 3.2.0.
 */
export function releaseBehaviour(
  version: string,
): Pick<
  Capabilities,
  'consumerFilter' | 'eventPartitionKeys' | 'missingPartitionKeyLog' | 'aliasAssetShape' | 'eventWindow'
> {
  const before60022 = compareVersions(version, '3.1.7') < 0
  const from33 = compareVersions(version, '3.3.0') >= 0
  const from32 = compareVersions(version, '3.2.0') >= 0
  return {
    consumerFilter: before60022 ? 'id_and_alias_skip_paused_and_stale' : 'all_skip_paused',
    eventPartitionKeys: from33,
    missingPartitionKeyLog: from32,
    aliasAssetShape: compareVersions(version, '3.1.5') < 0 ? 'bare' : 'declared',
    eventWindow: from33 ? 'catchup_floor' : compareVersions(version, '3.1.0') >= 0 ? 'assets_and_aliases' : 'assets',
  }
}

export function detectCapabilities(
  shape: SchemaShape,
): Omit<Capabilities, keyof ReturnType<typeof releaseBehaviour> | 'teamFilter' | 'clearTaskStateOnSuccess'> {
  const has = (table: string, column: string) => shape.get(table)?.has(column) ?? false
  return {
    eventPartitionKey: has('asset_event', 'partition_key'),
    partitionedTimetables: has('dag', 'timetable_partitioned'),
    maxRunsFlag: has('dag', 'exceeds_max_non_backfill'),
    partitionStep: !shape.has('asset_partition_dag_run')
      ? null
      : has('asset_partition_dag_run', 'rollup_fingerprint')
        ? 'fresh_active'
        : 'all_pending',
    queueShape: has('asset_dag_run_queue', 'asset_event_id') ? 'per_event' : 'per_asset',
    multiTeam:
      has('dag_schedule_asset_reference', 'allow_producer_teams') &&
      has('dag_schedule_asset_reference', 'allow_global_producers') &&
      has('task_outlet_asset_reference', 'allow_consumer_teams') &&
      has('task_outlet_asset_reference', 'allow_global_consumers') &&
      has('dag_bundle_team', 'team_name'),
    inletReferences: shape.has('task_inlet_asset_reference'),
    taskStateTable:
      (['task_state_store'] as const).find((t) => ['dag_run_id', 'task_id', 'map_index'].every((c) => has(t, c))) ??
      null,
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

/**
 * The columns that differ between the releases airlock supports and that it adapts to, each with
 * the Airflow migration that adds it (airflow-core/src/airflow/migrations/versions/). A head
 * placed on the revision graph promises exactly the columns whose migration it has applied: a
 * missing one or an unexpected one means the head does not tell the truth about the tables
 * (a hand-edited alembic_version, a half-applied upgrade) and airlock refuses it.
 */
export const adaptiveColumns: ReadonlyArray<{table: string; column?: string; addedIn: string}> = [
  // 0073_3_1_0_add_task_inlet_asset_reference.py
  {table: 'task_inlet_asset_reference', addedIn: '583e80dfcef4'},
  // 0095_3_2_0_update_orm_asset_partitioning.py: events carry the run's partition key.
  {table: 'asset_event', column: 'partition_key', addedIn: '665854ef0536'},
  // "Add partition fields to DagModel" (3.2.0).
  {table: 'dag', column: 'timetable_partitioned', addedIn: '6222ce48e289'},
  // "Add exceeds max runs flag to dag model." (3.2.0, apache/airflow #60006).
  {table: 'dag', column: 'exceeds_max_non_backfill', addedIn: '0b112f49112d'},
  // 0096_3_2_0_remove_team_id.py renames 3.1.0's dag_bundle_team.team_id to team_name.
  {table: 'dag_bundle_team', column: 'team_name', addedIn: 'b12d4f98a91e'},
  // "Add access control columns to dag_schedule_asset_reference" (3.3.0): 3.3.0's
  // 0114_3_3_0_add_access_control_columns_to_dag_schedule_asset_reference.py adds both
  // allow_producer_teams and allow_global_producers (NOT NULL, server default true).
  {table: 'dag_schedule_asset_reference', column: 'allow_producer_teams', addedIn: 'a7f3b2c1d4e5'},
  {table: 'dag_schedule_asset_reference', column: 'allow_global_producers', addedIn: 'a7f3b2c1d4e5'},
  // "Add allow_consumer_teams columns to task_outlet_asset_reference" (3.3.0).
  {table: 'task_outlet_asset_reference', column: 'allow_consumer_teams', addedIn: 'c9d4e5f6a7b8'},
  {table: 'task_outlet_asset_reference', column: 'allow_global_consumers', addedIn: 'c9d4e5f6a7b8'},
  // 0128_3_4_0_add_asset_event_id_to_adrq.py: one queue row per event.
  {table: 'asset_dag_run_queue', column: 'asset_event_id', addedIn: 'b2f1a9c7d4e0'},
]

/**
 * The queue's primary key, which airlock's queue statement conflicts on: (asset_id, target_dag_id)
 * until 0128_3_4_0_add_asset_event_id_to_adrq.py (b2f1a9c7d4e0) makes it
 * (target_dag_id, asset_event_id).
 */
export const queueKeyRevision = 'b2f1a9c7d4e0'
export const queueKeys = {
  per_asset: ['asset_id', 'target_dag_id'],
  per_event: ['target_dag_id', 'asset_event_id'],
} as const

/** table name → its primary key's columns in key order. */
export type PrimaryKeys = Map<string, string[]>

/**
 * How the tables differ from what a head promises, in words naming the column: `missing column
 * asset_event.partition_key (added by 665854ef0536, Airflow 3.2.0)`. `applied` is every migration
 * up to the head (revisions.ts); `versionOf` names a migration's release.
 */
export function shapeMismatches(
  shape: SchemaShape,
  keys: PrimaryKeys,
  applied: ReadonlySet<string>,
  versionOf: (revision: string) => string | undefined,
): string[] {
  const mismatches: string[] = []
  for (const {table, column, addedIn} of adaptiveColumns) {
    const present = column === undefined ? shape.has(table) : (shape.get(table)?.has(column) ?? false)
    const expected = applied.has(addedIn)
    if (present === expected) continue
    const name = column === undefined ? `table ${table}` : `column ${table}.${column}`
    const origin = `${addedIn}, Airflow ${versionOf(addedIn) ?? '?'}`
    mismatches.push(
      expected
        ? `missing ${name} (added by migration ${origin})`
        : `unexpected ${name} (added by a later migration, ${origin})`,
    )
  }

  const expectedKey = queueKeys[applied.has(queueKeyRevision) ? 'per_event' : 'per_asset']
  const key = keys.get('asset_dag_run_queue') ?? []
  if (key.join(',') !== expectedKey.join(',')) {
    mismatches.push(
      `asset_dag_run_queue's primary key is ${key.length > 0 ? `(${key.join(', ')})` : 'missing'}, expected (${expectedKey.join(', ')})`,
    )
  }

  return mismatches
}
