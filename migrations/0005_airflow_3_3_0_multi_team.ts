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
 * - fde9ed84d07b (0112_3_3_0_add_task_state_store_and_asset_state_store_tables.py): task_state_store
 *   only (a success clears it when `[state_store] clear_on_success` is on), as 3.3.2's `airflow db
 *   migrate` creates it;
 * - the 3.3.0 migrations of other columns of the fixture's tables, each under its file's name.
 * Migrations of tables airlock never touches (asset_state_store, deadlines, …) are left out, as in
 * the other fixtures.
 */
export const alembicHead = 'd2f4e1b3c5a7'
const previousHead = '1d6611b6ab7c'

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- 0111_3_3_0_add_timetable_periodic_to_dag.py
    alter table dag add column timetable_periodic boolean not null default false;
    -- 0113_3_3_0_add_retry_policy_fields_to_ti.py
    alter table task_instance add column retry_delay_override double precision, add column retry_reason varchar(500);
    alter table task_instance_history add column retry_delay_override double precision, add column retry_reason varchar(500);
    -- 0115_3_3_0_add_version_data_to_dag_version.py
    alter table dag_version add column version_data json;
    -- 0116_3_3_0_add_team_name_to_trigger_table.py
    alter table trigger add column team_name varchar(50);
    create index idx_trigger_team_name on trigger (team_name);
    alter table trigger add constraint trigger_team_name_fkey foreign key (team_name) references team (name) on delete set null;
    -- 0120_3_3_0_add_partition_mapper_info_to_dag.py: NOT NULL, no default (Airflow writes '[]'
    -- for a DAG without partition mappers).
    alter table dag add column partition_mapper_info json not null;
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
    create table task_state_store (
      id serial,
      dag_run_id integer not null,
      task_id varchar(250) not null,
      map_index integer not null default -1,
      key varchar(512) not null,
      dag_id varchar(250) not null,
      run_id varchar(250) not null,
      value text not null,
      updated_at timestamptz not null,
      expires_at timestamptz,
      constraint task_state_store_pkey primary key (id),
      constraint task_state_store_uq unique (dag_run_id, task_id, map_index, key),
      constraint task_state_store_dag_run_fkey foreign key (dag_run_id) references dag_run (id) on delete cascade
    );
    create index idx_task_state_store_lookup on task_state_store (dag_id, run_id, task_id, map_index);
    create index idx_task_state_store_expires_at on task_state_store (expires_at);
  `)
  await knex('alembic_version').update({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table task_state_store;
    drop index idx_dag_run_created_dag_version_id;
    drop index ti_dag_version_id;
    drop index idx_pakl_apdr_id;
    alter table asset_partition_dag_run drop column partition_date, drop column rollup_fingerprint;
    alter table task_outlet_asset_reference drop column allow_global_consumers, drop column allow_consumer_teams;
    alter table dag_schedule_asset_reference drop column allow_global_producers, drop column allow_producer_teams;
    alter table dag drop column partition_mapper_info;
    alter table trigger drop constraint trigger_team_name_fkey;
    drop index idx_trigger_team_name;
    alter table trigger drop column team_name;
    alter table dag_version drop column version_data;
    alter table task_instance_history drop column retry_reason, drop column retry_delay_override;
    alter table task_instance drop column retry_reason, drop column retry_delay_override;
    alter table dag drop column timetable_periodic;
  `)
  await knex('alembic_version').update({version_num: previousHead})
}
