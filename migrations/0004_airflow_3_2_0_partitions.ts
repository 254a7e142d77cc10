import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.2.x (stamped with the release head 1d6611b6ab7c, shared by 3.2.0–3.2.2):
 * asset partitioning and teams keyed by name. Events and runs carry a partition_key; DAGs with a
 * partitioned timetable are queued through asset_partition_dag_run instead of asset_dag_run_queue
 * (0095_3_2_0_update_orm_asset_partitioning.py, 665854ef0536; dag.timetable_partitioned and
 * dag_run.partition_date from "Add partition fields to DagModel", 6222ce48e289); team loses its
 * UUID and dag_bundle_team.team_id becomes team_name (0096_3_2_0_remove_team_id.py, b12d4f98a91e).
 * The other 3.2.0 migrations of the fixture's tables, and 3.1.8's two (on 3.2.0's chain, after the
 * 3.1 fixture's head), are applied as well, each under the name of its file.
 */
const tz = {useTz: true} as const

export const alembicHead = '1d6611b6ab7c'
const previousHead = 'cc92b33c6709'

export async function up(knex: Knex): Promise<void> {
  // 0086_3_1_8_add_index_to_task_reschedule_ti_id.py (3.1.8, after the 3.1 fixture's head).
  await knex.raw('create index idx_task_reschedule_ti_id_id_desc on task_reschedule (ti_id, id desc)')
  // 0087_3_1_8_change_signed_url_template_from_varchar_.py (3.1.8, after the 3.1 fixture's head).
  await knex.raw('alter table dag_bundle alter column signed_url_template type text')
  // 0089_3_2_0_change_serialized_dag_data_column_to_jsonb.py
  await knex.raw('alter table serialized_dag alter column data type jsonb using data::jsonb')
  // 0092_3_2_0_add_fail_fast_to_dag_table.py
  await knex.schema.alterTable('dag', (t) => {
    t.boolean('fail_fast').notNullable().defaultTo(false)
  })
  // 0097_3_2_0_enforce_log_event_and_dag_is_stale_not_null.py
  await knex.raw(`
    alter table log alter column event set not null;
    alter table dag alter column is_stale set not null;
  `)
  // 0098_3_2_0_add_queue_column_to_trigger.py
  await knex.schema.alterTable('trigger', (t) => {
    t.string('queue', 256)
  })
  // 0100_3_2_0_add_timetable_type_to_dag_table_for_.py: NOT NULL, no default (Airflow writes the
  // timetable's class name).
  await knex.schema.alterTable('dag', (t) => {
    t.string('timetable_type', 255).notNullable()
  })
  // 0102_3_2_0_make_external_executor_id_text.py
  await knex.raw(`
    alter table task_instance alter column external_executor_id type text;
    alter table task_instance_history alter column external_executor_id type text;
  `)
  // 0105_3_2_0_add_allowed_run_types_to_dag.py
  await knex.schema.alterTable('dag', (t) => {
    t.json('allowed_run_types')
  })
  // 0106_3_2_0_add_partition_key_to_backfill_dag_run.py adds dag_run.created_at as well.
  await knex.schema.alterTable('dag_run', (t) => {
    t.timestamp('created_at', tz)
  })
  // 0108_3_2_0_fix_migration_file_ORM_inconsistencies.py
  await knex.raw(`
    alter table dag alter column is_paused set not null;
    alter table task_instance alter column try_number set not null, alter column max_tries set not null;
  `)

  await knex.schema.createTable('partitioned_asset_key_log', (t) => {
    t.increments('id', {primaryKey: true})
    t.integer('asset_id').notNullable()
    t.integer('asset_event_id').notNullable()
    t.integer('asset_partition_dag_run_id').notNullable()
    t.string('source_partition_key', 250).notNullable()
    t.string('target_dag_id', 250).notNullable()
    t.string('target_partition_key', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
  })

  await knex.schema.createTable('asset_partition_dag_run', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('target_dag_id', 250).notNullable()
    t.integer('created_dag_run_id')
    t.string('partition_key', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.foreign(['created_dag_run_id'], 'apdr_created_dag_run_id_fkey')
      .references(['id'])
      .inTable('dag_run')
      .onDelete('CASCADE')
  })

  await knex.schema.alterTable('asset_event', (t) => {
    t.string('partition_key', 250)
  })
  await knex.schema.alterTable('dag_run', (t) => {
    t.string('partition_key', 250)
    t.timestamp('partition_date', tz)
  })
  await knex.schema.alterTable('dag', (t) => {
    t.boolean('timetable_partitioned').notNullable().defaultTo(false)
    // The same migration (0107_3_2_0_add_partition_fields_to_dag.py) adds the next run's partition.
    t.string('next_dagrun_partition_key', 255)
    t.timestamp('next_dagrun_partition_date', tz)
    // 0b112f49112d "Add exceeds max runs flag to dag model." (apache/airflow #60006):
    // sa.Column("exceeds_max_non_backfill", sa.Boolean(), server_default="0", nullable=False).
    t.boolean('exceeds_max_non_backfill').notNullable().defaultTo(false)
  })

  await knex.raw(`
    alter table dag_bundle_team drop constraint dag_bundle_team_team_id_fkey;
    drop index idx_dag_bundle_team_team_id;
    alter table dag_bundle_team rename column team_id to team_name;
    alter table dag_bundle_team alter column team_name type varchar(50);
    alter table team drop constraint team_pkey, drop constraint team_name_uq, drop column id;
    alter table team add constraint team_pkey primary key (name);
    create index idx_dag_bundle_team_team_name on dag_bundle_team (team_name);
    alter table dag_bundle_team add constraint dag_bundle_team_team_name_fkey foreign key (team_name) references team (name) on delete cascade;
  `)

  await knex('alembic_version').update({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  // Fixture teams are test data: the 3.1 shape comes back empty.
  await knex.raw(`
    delete from dag_bundle_team; delete from team;
    alter table dag_bundle_team drop constraint dag_bundle_team_team_name_fkey;
    drop index idx_dag_bundle_team_team_name;
    alter table dag_bundle_team alter column team_name type uuid using null;
    alter table dag_bundle_team rename column team_name to team_id;
    alter table team drop constraint team_pkey, add column id uuid not null;
    alter table team add constraint team_pkey primary key (id), add constraint team_name_uq unique (name);
    create index idx_dag_bundle_team_team_id on dag_bundle_team (team_id);
    alter table dag_bundle_team add constraint dag_bundle_team_team_id_fkey foreign key (team_id) references team (id) on delete cascade;
  `)
  await knex.schema.alterTable('dag', (t) => {
    t.dropColumn('timetable_partitioned')
    t.dropColumn('next_dagrun_partition_key')
    t.dropColumn('next_dagrun_partition_date')
    t.dropColumn('exceeds_max_non_backfill')
  })
  await knex.schema.alterTable('dag_run', (t) => {
    t.dropColumn('partition_date')
    t.dropColumn('partition_key')
  })
  await knex.schema.alterTable('asset_event', (t) => t.dropColumn('partition_key'))
  await knex.schema.dropTable('asset_partition_dag_run')
  await knex.schema.dropTable('partitioned_asset_key_log')

  await knex.raw(`
    alter table task_instance alter column try_number drop not null, alter column max_tries drop not null;
    alter table dag alter column is_paused drop not null;
  `)
  await knex.schema.alterTable('dag_run', (t) => t.dropColumn('created_at'))
  await knex.schema.alterTable('dag', (t) => {
    t.dropColumn('allowed_run_types')
    t.dropColumn('timetable_type')
    t.dropColumn('fail_fast')
  })
  await knex.raw(`
    alter table task_instance_history alter column external_executor_id type varchar(250);
    alter table task_instance alter column external_executor_id type varchar(250);
  `)
  await knex.schema.alterTable('trigger', (t) => t.dropColumn('queue'))
  await knex.raw(`
    alter table dag alter column is_stale drop not null;
    alter table log alter column event drop not null;
    alter table serialized_dag alter column data type json using data::json;
    alter table dag_bundle alter column signed_url_template type varchar(200);
    drop index idx_task_reschedule_ti_id_id_desc;
  `)
  await knex('alembic_version').update({version_num: previousHead})
}
