import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.0.0, part 2: assets, aliases, events, the references that tie them to
 * producing tasks and consuming DAGs, and the DAG-run queue. Ends by stamping the 3.0.0 alembic
 * head. Checked against the real dump by test/migrations/fixtureMatchesDump.test.ts.
 */
const tz = {useTz: true} as const

export const alembicHead = '29ce7909c52b'

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('asset', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('name', 1500).notNullable()
    t.string('uri', 1500).notNullable()
    t.string('group', 1500).notNullable()
    t.json('extra').notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.unique(['name', 'uri'], {indexName: 'idx_asset_name_uri_unique', useConstraint: false})
  })

  await knex.schema.createTable('asset_active', (t) => {
    t.string('name', 1500).notNullable()
    t.string('uri', 1500).notNullable()
    t.primary(['name', 'uri'], {constraintName: 'asset_active_pkey'})
    t.unique(['name'], {indexName: 'idx_asset_active_name_unique', useConstraint: false})
    t.unique(['uri'], {indexName: 'idx_asset_active_uri_unique', useConstraint: false})
    t.foreign(['name', 'uri'], 'asset_active_asset_name_uri_fkey')
      .references(['name', 'uri'])
      .inTable('asset')
      .onDelete('CASCADE')
  })

  await knex.schema.createTable('asset_alias', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('name', 1500).notNullable()
    t.string('group', 1500).notNullable()
    t.unique(['name'], {indexName: 'idx_asset_alias_name_unique', useConstraint: false})
  })

  await knex.schema.createTable('asset_alias_asset', (t) => {
    t.integer('alias_id').notNullable()
    t.integer('asset_id').notNullable()
    t.primary(['alias_id', 'asset_id'], {constraintName: 'asset_alias_asset_pkey'})
    t.index(['alias_id'], 'idx_asset_alias_asset_alias_id')
    t.index(['asset_id'], 'idx_asset_alias_asset_asset_id')
    t.foreign(['alias_id'], 'asset_alias_asset_alias_id_fkey')
      .references(['id'])
      .inTable('asset_alias')
      .onDelete('CASCADE')
    t.foreign(['asset_id'], 'asset_alias_asset_asset_id_fkey').references(['id']).inTable('asset').onDelete('CASCADE')
  })

  await knex.schema.createTable('asset_event', (t) => {
    t.increments('id', {primaryKey: true})
    t.integer('asset_id').notNullable()
    t.json('extra').notNullable()
    t.string('source_task_id', 250)
    t.string('source_dag_id', 250)
    t.string('source_run_id', 250)
    t.integer('source_map_index').defaultTo(-1)
    t.timestamp('timestamp', tz).notNullable()
    t.index(['asset_id', 'timestamp'], 'idx_asset_id_timestamp')
  })

  await knex.schema.createTable('asset_alias_asset_event', (t) => {
    t.integer('alias_id').notNullable()
    t.integer('event_id').notNullable()
    t.primary(['alias_id', 'event_id'], {constraintName: 'asset_alias_asset_event_pkey'})
    t.index(['alias_id'], 'idx_asset_alias_asset_event_alias_id')
    t.index(['event_id'], 'idx_asset_alias_asset_event_event_id')
    t.foreign(['alias_id'], 'asset_alias_asset_event_alias_id_fkey')
      .references(['id'])
      .inTable('asset_alias')
      .onDelete('CASCADE')
    t.foreign(['event_id'], 'asset_alias_asset_event_event_id_fkey')
      .references(['id'])
      .inTable('asset_event')
      .onDelete('CASCADE')
  })

  await knex.schema.createTable('asset_dag_run_queue', (t) => {
    t.integer('asset_id').notNullable()
    t.string('target_dag_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.primary(['asset_id', 'target_dag_id'], {constraintName: 'assetdagrunqueue_pkey'})
    t.index(['target_dag_id'], 'idx_asset_dag_run_queue_target_dag_id')
    t.foreign(['asset_id'], 'adrq_asset_fkey').references(['id']).inTable('asset').onDelete('CASCADE')
    t.foreign(['target_dag_id'], 'adrq_dag_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  await knex.schema.createTable('dagrun_asset_event', (t) => {
    t.integer('dag_run_id').notNullable()
    t.integer('event_id').notNullable()
    t.primary(['dag_run_id', 'event_id'], {constraintName: 'dagrun_asset_event_pkey'})
    t.index(['dag_run_id'], 'idx_dagrun_asset_events_dag_run_id')
    t.index(['event_id'], 'idx_dagrun_asset_events_event_id')
    t.foreign(['dag_run_id'], 'dagrun_asset_event_dag_run_id_fkey')
      .references(['id'])
      .inTable('dag_run')
      .onDelete('CASCADE')
    t.foreign(['event_id'], 'dagrun_asset_event_event_id_fkey')
      .references(['id'])
      .inTable('asset_event')
      .onDelete('CASCADE')
  })

  await knex.schema.createTable('task_outlet_asset_reference', (t) => {
    t.integer('asset_id').notNullable()
    t.string('dag_id', 250).notNullable()
    t.string('task_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.primary(['asset_id', 'dag_id', 'task_id'], {constraintName: 'toar_pkey'})
    t.index(['dag_id'], 'idx_task_outlet_asset_reference_dag_id')
    t.foreign(['asset_id'], 'toar_asset_fkey').references(['id']).inTable('asset').onDelete('CASCADE')
    t.foreign(['dag_id'], 'toar_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  await knex.schema.createTable('dag_schedule_asset_reference', (t) => {
    t.integer('asset_id').notNullable()
    t.string('dag_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.primary(['asset_id', 'dag_id'], {constraintName: 'dsar_pkey'})
    t.index(['dag_id'], 'idx_dag_schedule_asset_reference_dag_id')
    t.foreign(['asset_id'], 'dsar_asset_fkey').references(['id']).inTable('asset').onDelete('CASCADE')
    t.foreign(['dag_id'], 'dsar_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  await knex.schema.createTable('dag_schedule_asset_alias_reference', (t) => {
    t.integer('alias_id').notNullable()
    t.string('dag_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.primary(['alias_id', 'dag_id'], {constraintName: 'dsaar_pkey'})
    t.index(['dag_id'], 'idx_dag_schedule_asset_alias_reference_dag_id')
    t.foreign(['alias_id'], 'dsaar_asset_alias_fkey').references(['id']).inTable('asset_alias').onDelete('CASCADE')
    t.foreign(['dag_id'], 'dsaar_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  await knex.schema.createTable('dag_schedule_asset_name_reference', (t) => {
    t.string('name', 1500).notNullable()
    t.string('dag_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.primary(['name', 'dag_id'], {constraintName: 'dsanr_pkey'})
    t.index(['dag_id'], 'idx_dag_schedule_asset_name_reference_dag_id')
    t.foreign(['dag_id'], 'dsanr_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  await knex.schema.createTable('dag_schedule_asset_uri_reference', (t) => {
    t.string('uri', 1500).notNullable()
    t.string('dag_id', 250).notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.primary(['uri', 'dag_id'], {constraintName: 'dsaur_pkey'})
    t.index(['dag_id'], 'idx_dag_schedule_asset_uri_reference_dag_id')
    t.foreign(['dag_id'], 'dsaur_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  await knex('alembic_version').insert({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  await knex('alembic_version').delete()
  for (const table of [
    'dag_schedule_asset_uri_reference',
    'dag_schedule_asset_name_reference',
    'dag_schedule_asset_alias_reference',
    'dag_schedule_asset_reference',
    'task_outlet_asset_reference',
    'dagrun_asset_event',
    'asset_dag_run_queue',
    'asset_alias_asset_event',
    'asset_event',
    'asset_alias_asset',
    'asset_alias',
    'asset_active',
    'asset',
  ]) {
    await knex.schema.dropTableIfExists(table)
  }
}
