import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.1.0 (alembic head cc92b33c6709, shared by 3.1.0–3.1.7): inlet
 * references, teams, dag.deadline, and task_instance.dag_version_id's foreign key becoming
 * RESTRICT (Airflow's 3.1.0 migrations, airflow-core/src/airflow/migrations/versions/*_3_1_0_*.py).
 * 3.1.8's two migrations (0086_3_1_8_*, 0087_3_1_8_*) come after this head: the 3.2 fixture
 * (0004) applies them.
 */
const tz = {useTz: true} as const

export const alembicHead = 'cc92b33c6709'
const previousHead = '29ce7909c52b'

export async function up(knex: Knex): Promise<void> {
  // 0074_3_1_0_add_triggering_user_to_dag_run.py adds the column to backfill as well as dag_run.
  await knex.schema.alterTable('backfill', (t) => {
    t.string('triggering_user_name', 512)
  })
  await knex.schema.alterTable('dag_run', (t) => {
    t.string('triggering_user_name', 512)
  })
  // 0079_3_1_0_add_url_and_template_params_to_dagbundle_model.py (VARCHAR(200) until 3.1.8's 0087).
  await knex.schema.alterTable('dag_bundle', (t) => {
    t.string('signed_url_template', 200)
    t.json('template_params')
  })
  // 0082_3_1_0_make_bundle_name_not_nullable.py (its dag_bundle rows for DAGs without a bundle are
  // data, not schema: a fixture has no such DAG).
  await knex.raw('alter table dag alter column bundle_name set not null')
  // 0084_3_1_0_add_last_parse_duration_to_dag_model.py
  await knex.schema.alterTable('dag', (t) => {
    t.double('last_parse_duration')
  })
  await knex.schema.createTable('task_inlet_asset_reference', (t) => {
    t.integer('asset_id').notNullable()
    t.string('dag_id', 250).notNullable()
    t.string('task_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.primary(['asset_id', 'dag_id', 'task_id'], {constraintName: 'tiar_pkey'})
    t.index(['dag_id'], 'idx_task_inlet_asset_reference_dag_id')
    t.foreign(['asset_id'], 'tiar_asset_fkey').references(['id']).inTable('asset').onDelete('CASCADE')
    t.foreign(['dag_id'], 'tiar_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  // 0083_3_1_0_add_teams.py (a3c7f2b18d4e): teams keyed by a UUID, a bundle in at most one team.
  await knex.raw(`
    create table team (id uuid not null, name varchar(50) not null,
      constraint team_pkey primary key (id), constraint team_name_uq unique (name));
    create table dag_bundle_team (
      dag_bundle_name varchar(250) not null,
      team_id uuid not null,
      constraint dag_bundle_team_pkey primary key (dag_bundle_name, team_id),
      constraint dag_bundle_team_dag_bundle_name_fkey foreign key (dag_bundle_name) references dag_bundle (name) on delete cascade,
      constraint dag_bundle_team_team_id_fkey foreign key (team_id) references team (id) on delete cascade
    );
    create unique index idx_dag_bundle_team_dag_bundle_name on dag_bundle_team (dag_bundle_name);
    create index idx_dag_bundle_team_team_id on dag_bundle_team (team_id);
  `)

  await knex.schema.alterTable('dag', (t) => {
    t.json('deadline')
  })

  await knex.schema.alterTable('task_instance', (t) => {
    t.dropForeign(['dag_version_id'], 'task_instance_dag_version_id_fkey')
    t.foreign(['dag_version_id'], 'task_instance_dag_version_id_fkey')
      .references(['id'])
      .inTable('dag_version')
      .onDelete('RESTRICT')
  })

  await knex('alembic_version').update({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('task_instance', (t) => {
    t.dropForeign(['dag_version_id'], 'task_instance_dag_version_id_fkey')
    t.foreign(['dag_version_id'], 'task_instance_dag_version_id_fkey')
      .references(['id'])
      .inTable('dag_version')
      .onDelete('CASCADE')
  })
  await knex.schema.alterTable('dag', (t) => {
    t.dropColumn('deadline')
  })
  await knex.schema.dropTable('dag_bundle_team')
  await knex.schema.dropTable('team')
  await knex.schema.dropTable('task_inlet_asset_reference')
  await knex.schema.alterTable('dag', (t) => {
    t.dropColumn('last_parse_duration')
  })
  await knex.raw('alter table dag alter column bundle_name drop not null')
  await knex.schema.alterTable('dag_bundle', (t) => {
    t.dropColumn('template_params')
    t.dropColumn('signed_url_template')
  })
  await knex.schema.alterTable('dag_run', (t) => {
    t.dropColumn('triggering_user_name')
  })
  await knex.schema.alterTable('backfill', (t) => {
    t.dropColumn('triggering_user_name')
  })
  await knex('alembic_version').update({version_num: previousHead})
}
