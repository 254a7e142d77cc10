import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.3.0 (alembic head d2f4e1b3c5a7): multi-team asset access control and
 * partition bookkeeping. Migrations (airflow-core/src/airflow/migrations/versions/):
 * - a7f3b2c1d4e5 "Add access control columns to dag_schedule_asset_reference":
 *   allow_producer_teams JSON NULL, and allow_global_producers (on the 3.3 model
 *   DagScheduleAssetReference, NOT NULL, default true as its consumer-side twin);
 * - c9d4e5f6a7b8 "Add allow_consumer_teams columns to task_outlet_asset_reference":
 *   allow_consumer_teams JSON NULL, allow_global_consumers BOOLEAN NOT NULL DEFAULT true;
 * - 9ff64e1c35d3: indexes on dag_run.created_dag_version_id and task_instance.dag_version_id;
 * - dd5f3a8e2b91: asset_partition_dag_run.rollup_fingerprint JSON NULL, and index idx_pakl_apdr_id on
 *   partitioned_asset_key_log.asset_partition_dag_run_id;
 * - d2f4e1b3c5a7: asset_partition_dag_run.partition_date (UtcDateTime NULL);
 * - fde9ed84d07b "Add task_state and asset_state tables": task_state only (a success clears it when
 *   `[state_store] clear_on_success` is on), as the stored copy of the migration creates it.
 * Migrations of tables airlock never touches (asset_state, deadlines, dag.partition_mapper_info,
 * …) are left out, as in the other fixtures.
 */
export const alembicHead = 'd2f4e1b3c5a7'
const previousHead = '1d6611b6ab7c'

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table dag_schedule_asset_reference
      add column allow_producer_teams json,
      add column allow_global_producers boolean not null default true;
    alter table task_outlet_asset_reference
      add column allow_consumer_teams json,
      add column allow_global_consumers boolean not null default true;
    alter table asset_partition_dag_run
      add column rollup_fingerprint json,
      add column partition_date timestamptz;
    create index idx_pakl_apdr_id on partitioned_asset_key_log (asset_partition_dag_run_id);
    create index ti_dag_version_id on task_instance (dag_version_id);
    create index idx_dag_run_created_dag_version_id on dag_run (created_dag_version_id);
    create table task_state (
      dag_run_id integer not null references dag_run (id) on delete cascade,
      task_id varchar(250) not null,
      map_index integer not null default -1,
      key varchar(512) not null,
      dag_id varchar(250) not null,
      run_id varchar(250) not null,
      value text not null,
      updated_at timestamptz not null,
      constraint task_state_pkey primary key (dag_run_id, task_id, map_index, key)
    );
    alter table task_state rename constraint task_state_dag_run_id_fkey to task_state_dag_run_fkey;
    create index idx_task_state_lookup on task_state (dag_id, run_id, task_id, map_index);
  `)
  await knex('alembic_version').update({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table task_state;
    drop index idx_dag_run_created_dag_version_id;
    drop index ti_dag_version_id;
    drop index idx_pakl_apdr_id;
    alter table asset_partition_dag_run drop column partition_date, drop column rollup_fingerprint;
    alter table task_outlet_asset_reference drop column allow_global_consumers, drop column allow_consumer_teams;
    alter table dag_schedule_asset_reference drop column allow_global_producers, drop column allow_producer_teams;
  `)
  await knex('alembic_version').update({version_num: previousHead})
}
