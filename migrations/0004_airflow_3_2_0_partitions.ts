import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.2.x (stamped with the release head 1d6611b6ab7c): asset partitioning. Events and runs
 * carry a partition_key; DAGs with a partitioned timetable are queued through
 * asset_partition_dag_run instead of asset_dag_run_queue (Airflow's migration 0093,
 * airflow-core/src/airflow/migrations/versions).
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
    t.foreign(['created_dag_run_id'], 'apdr_created_dag_run_id_fkey').references(['id']).inTable('dag_run').onDelete('CASCADE')
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
  })

  await knex('alembic_version').update({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('dag', (t) => t.dropColumn('timetable_partitioned'))
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
