import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.2.x (stamped with the release head 1d6611b6ab7c, shared by 3.2.0–3.2.2):
 * asset partitioning and teams keyed by name. Events and runs carry a partition_key; DAGs with a
 * partitioned timetable are queued through asset_partition_dag_run instead of asset_dag_run_queue
 * (0095_3_2_0_update_orm_asset_partitioning.py, 665854ef0536; dag.timetable_partitioned and
 * dag_run.partition_date from "Add partition fields to DagModel", 6222ce48e289); team loses its
 * UUID and dag_bundle_team.team_id becomes team_name (0096_3_2_0_remove_team_id.py, b12d4f98a91e).
 */
const tz = {useTz: true} as const

export const alembicHead = '1d6611b6ab7c'
const previousHead = 'cc92b33c6709'

export async function up(knex: Knex): Promise<void> {
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

  // Only used by Airflow on SQLite as a mutex, but created on every backend.
  await knex.schema.createTable('asset_partition_dag_run_mutex_lock', (t) => {
    t.string('target_dag_id', 250).notNullable()
    t.string('partition_key', 250).notNullable()
    t.primary(['target_dag_id', 'partition_key'], {constraintName: 'apdr_mutex_lock_pkey'})
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
    t.dropColumn('exceeds_max_non_backfill')
  })
  await knex.schema.alterTable('dag_run', (t) => {
    t.dropColumn('partition_date')
    t.dropColumn('partition_key')
  })
  await knex.schema.alterTable('asset_event', (t) => t.dropColumn('partition_key'))
  await knex.schema.dropTable('asset_partition_dag_run_mutex_lock')
  await knex.schema.dropTable('asset_partition_dag_run')
  await knex.schema.dropTable('partitioned_asset_key_log')
  await knex('alembic_version').update({version_num: previousHead})
}
