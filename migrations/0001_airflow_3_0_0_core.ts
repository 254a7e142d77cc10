import type {Knex} from 'knex'

/**
 * Fixture schema, Airflow 3.0.0 (alembic head 29ce7909c52b), part 1: DAGs, runs, task instances,
 * the audit log, and the tables their foreign keys point at. Written from Airflow 3.0.0's models
 * and migrations (airflow-core/src/airflow/migrations/versions) and checked column by column against the real 3.0.0 dump by
 * test/migrations/fixtureMatchesDump.test.ts. Fixture databases only: airlock never migrates a
 * real Airflow database.
 */
const tz = {useTz: true} as const

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('alembic_version', (t) => {
    t.string('version_num', 32).notNullable()
    t.primary(['version_num'], {constraintName: 'alembic_version_pkc'})
  })

  await knex.schema.createTable('dag_bundle', (t) => {
    t.string('name', 250).notNullable().primary({constraintName: 'dag_bundle_pkey'})
    t.boolean('active')
    t.string('version', 200)
    t.timestamp('last_refreshed', tz)
  })

  await knex.schema.createTable('dag', (t) => {
    t.string('dag_id', 250).notNullable().primary({constraintName: 'dag_pkey'})
    t.boolean('is_paused')
    t.boolean('is_stale')
    t.timestamp('last_parsed_time', tz)
    t.timestamp('last_expired', tz)
    t.string('fileloc', 2000)
    t.string('relative_fileloc', 2000)
    t.string('bundle_name', 250)
    t.string('bundle_version', 200)
    t.string('owners', 2000)
    t.string('dag_display_name', 2000)
    t.text('description')
    t.text('timetable_summary')
    t.string('timetable_description', 1000)
    t.json('asset_expression')
    t.integer('max_active_tasks').notNullable()
    t.integer('max_active_runs')
    t.integer('max_consecutive_failed_dag_runs').notNullable()
    t.boolean('has_task_concurrency_limits').notNullable()
    t.boolean('has_import_errors').defaultTo(false)
    t.timestamp('next_dagrun', tz)
    t.timestamp('next_dagrun_data_interval_start', tz)
    t.timestamp('next_dagrun_data_interval_end', tz)
    t.timestamp('next_dagrun_create_after', tz)
    t.index(['next_dagrun_create_after'], 'idx_next_dagrun_create_after')
    t.foreign(['bundle_name'], 'dag_bundle_name_fkey').references(['name']).inTable('dag_bundle')
  })

  await knex.schema.createTable('dag_version', (t) => {
    t.uuid('id').notNullable().primary({constraintName: 'dag_version_pkey'})
    t.integer('version_number').notNullable()
    t.string('dag_id', 250).notNullable()
    t.string('bundle_name', 250)
    t.string('bundle_version', 250)
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('last_updated', tz).notNullable()
    t.unique(['dag_id', 'version_number'], {indexName: 'dag_id_v_name_v_number_unique_constraint', useConstraint: true})
    t.foreign(['dag_id'], 'dag_version_dag_id_fkey').references(['dag_id']).inTable('dag').onDelete('CASCADE')
  })

  // The DAG as the DAG processor serialized it, one row per DAG version: the task's declared
  // outlets (assets, Asset.ref references, aliases) come from here. `data` is JSON (jsonb from 3.2:
  // 0004), or NULL with `data_compressed` (zlib) when [core] compress_serialized_dags is on.
  await knex.schema.createTable('serialized_dag', (t) => {
    t.uuid('id').notNullable().primary({constraintName: 'serialized_dag_pkey'})
    t.string('dag_id', 250).notNullable()
    t.json('data')
    t.binary('data_compressed')
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('last_updated', tz).notNullable()
    t.string('dag_hash', 32).notNullable()
    t.uuid('dag_version_id').notNullable()
    t.unique(['dag_version_id'], {indexName: 'serialized_dag_dag_version_id_uq', useConstraint: true})
    t.foreign(['dag_version_id'], 'serialized_dag_dag_version_id_fkey')
      .references(['id'])
      .inTable('dag_version')
      .onDelete('CASCADE')
  })

  await knex.schema.createTable('log_template', (t) => {
    t.increments('id', {primaryKey: true})
    t.text('filename').notNullable()
    t.text('elasticsearch_id').notNullable()
    t.timestamp('created_at', tz).notNullable()
  })

  await knex.schema.createTable('backfill', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('dag_id', 250).notNullable()
    t.timestamp('from_date', tz).notNullable()
    t.timestamp('to_date', tz).notNullable()
    t.json('dag_run_conf').notNullable()
    t.boolean('is_paused')
    t.string('reprocess_behavior', 250).notNullable()
    t.integer('max_active_runs').notNullable()
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('completed_at', tz)
    t.timestamp('updated_at', tz).notNullable()
  })

  await knex.schema.createTable('trigger', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('classpath', 1000).notNullable()
    t.text('kwargs').notNullable()
    t.timestamp('created_date', tz).notNullable()
    t.integer('triggerer_id')
  })

  await knex.schema.createTable('dag_run', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('dag_id', 250).notNullable()
    t.timestamp('queued_at', tz)
    t.timestamp('logical_date', tz)
    t.timestamp('start_date', tz)
    t.timestamp('end_date', tz)
    t.string('state', 50)
    t.string('run_id', 250).notNullable()
    t.integer('creating_job_id')
    t.string('run_type', 50).notNullable()
    t.string('triggered_by', 50)
    t.jsonb('conf')
    t.timestamp('data_interval_start', tz)
    t.timestamp('data_interval_end', tz)
    t.timestamp('run_after', tz).notNullable()
    t.timestamp('last_scheduling_decision', tz)
    t.integer('log_template_id')
    t.timestamp('updated_at', tz)
    t.integer('clear_number').notNullable().defaultTo(0)
    t.integer('backfill_id')
    t.string('bundle_version', 250)
    t.integer('scheduled_by_job_id')
    t.jsonb('context_carrier')
    t.string('span_status', 250).notNullable().defaultTo('not_started')
    t.uuid('created_dag_version_id')
    t.unique(['dag_id', 'logical_date'], {indexName: 'dag_run_dag_id_logical_date_key', useConstraint: true})
    t.unique(['dag_id', 'run_id'], {indexName: 'dag_run_dag_id_run_id_key', useConstraint: true})
    t.index(['dag_id', 'state'], 'dag_id_state')
    t.index(['dag_id'], 'idx_dag_run_dag_id')
    t.index(['state', 'dag_id'], 'idx_dag_run_queued_dags', {predicate: knex.whereRaw("state = 'queued'")})
    t.index(['run_after'], 'idx_dag_run_run_after')
    t.index(['state', 'dag_id'], 'idx_dag_run_running_dags', {predicate: knex.whereRaw("state = 'running'")})
    t.foreign(['created_dag_version_id'], 'created_dag_version_id_fkey')
      .references(['id'])
      .inTable('dag_version')
      .onDelete('SET NULL')
    t.foreign(['backfill_id'], 'dag_run_backfill_id_fkey').references(['id']).inTable('backfill')
    t.foreign(['log_template_id'], 'task_instance_log_template_id_fkey').references(['id']).inTable('log_template')
  })

  await knex.schema.createTable('task_instance', (t) => {
    t.uuid('id').notNullable().primary({constraintName: 'task_instance_pkey'})
    t.string('task_id', 250).notNullable()
    t.string('dag_id', 250).notNullable()
    t.string('run_id', 250).notNullable()
    t.integer('map_index').notNullable().defaultTo(-1)
    t.timestamp('start_date', tz)
    t.timestamp('end_date', tz)
    t.double('duration')
    t.string('state', 20)
    t.integer('try_number')
    t.integer('max_tries').defaultTo(-1)
    t.string('hostname', 1000)
    t.string('unixname', 1000)
    t.string('pool', 256).notNullable()
    t.integer('pool_slots').notNullable()
    t.string('queue', 256)
    t.integer('priority_weight')
    t.string('operator', 1000)
    t.string('custom_operator_name', 1000)
    t.timestamp('queued_dttm', tz)
    t.timestamp('scheduled_dttm', tz)
    t.integer('queued_by_job_id')
    t.timestamp('last_heartbeat_at', tz)
    t.integer('pid')
    t.string('executor', 1000)
    t.binary('executor_config')
    t.timestamp('updated_at', tz)
    t.string('rendered_map_index', 250)
    t.jsonb('context_carrier')
    t.string('span_status', 250).notNullable().defaultTo('not_started')
    t.string('external_executor_id', 250)
    t.integer('trigger_id')
    t.timestamp('trigger_timeout', tz)
    t.string('next_method', 1000)
    t.jsonb('next_kwargs')
    t.string('task_display_name', 2000)
    t.uuid('dag_version_id')
    t.unique(['dag_id', 'task_id', 'run_id', 'map_index'], {
      indexName: 'task_instance_composite_key',
      useConstraint: true,
    })
    t.index(['dag_id', 'run_id'], 'ti_dag_run')
    t.index(['dag_id', 'state'], 'ti_dag_state')
    t.index(['last_heartbeat_at'], 'ti_heartbeat')
    t.index(['pool', 'state', 'priority_weight'], 'ti_pool')
    t.index(['state'], 'ti_state')
    t.index(['dag_id', 'task_id', 'run_id', 'state'], 'ti_state_lkp')
    t.index(['trigger_id'], 'ti_trigger_id')
    t.foreign(['dag_id', 'run_id'], 'task_instance_dag_run_fkey')
      .references(['dag_id', 'run_id'])
      .inTable('dag_run')
      .onDelete('CASCADE')
    t.foreign(['dag_version_id'], 'task_instance_dag_version_id_fkey')
      .references(['id'])
      .inTable('dag_version')
      .onDelete('CASCADE')
    t.foreign(['trigger_id'], 'task_instance_trigger_id_fkey').references(['id']).inTable('trigger').onDelete('CASCADE')
  })

  await knex.schema.createTable('task_instance_history', (t) => {
    t.uuid('task_instance_id').notNullable().primary({constraintName: 'task_instance_history_pkey'})
    t.string('task_id', 250).notNullable()
    t.string('dag_id', 250).notNullable()
    t.string('run_id', 250).notNullable()
    t.integer('map_index').notNullable().defaultTo(-1)
    t.integer('try_number').notNullable()
    t.timestamp('start_date', tz)
    t.timestamp('end_date', tz)
    t.double('duration')
    t.string('state', 20)
    t.integer('max_tries').defaultTo(-1)
    t.string('hostname', 1000)
    t.string('unixname', 1000)
    t.string('pool', 256).notNullable()
    t.integer('pool_slots').notNullable()
    t.string('queue', 256)
    t.integer('priority_weight')
    t.string('operator', 1000)
    t.string('custom_operator_name', 1000)
    t.timestamp('queued_dttm', tz)
    t.timestamp('scheduled_dttm', tz)
    t.integer('queued_by_job_id')
    t.integer('pid')
    t.string('executor', 1000)
    t.binary('executor_config')
    t.timestamp('updated_at', tz)
    t.string('rendered_map_index', 250)
    t.jsonb('context_carrier')
    t.string('span_status', 250).notNullable().defaultTo('not_started')
    t.string('external_executor_id', 250)
    t.integer('trigger_id')
    // Airflow 3.0 really declares this one without time zone (unlike task_instance's).
    t.timestamp('trigger_timeout', {useTz: false})
    t.string('next_method', 1000)
    t.jsonb('next_kwargs')
    t.string('task_display_name', 2000)
    t.uuid('dag_version_id')
    t.unique(['dag_id', 'task_id', 'run_id', 'map_index', 'try_number'], {
      indexName: 'task_instance_history_dtrt_uq',
      useConstraint: true,
    })
    t.index(['dag_id', 'run_id'], 'idx_tih_dag_run')
    t.foreign(['dag_id', 'task_id', 'run_id', 'map_index'], 'task_instance_history_ti_fkey')
      .references(['dag_id', 'task_id', 'run_id', 'map_index'])
      .inTable('task_instance')
      .onUpdate('CASCADE')
      .onDelete('CASCADE')
  })

  // What Airflow's clear touches besides the task instance (complete --continue-run): reschedules
  // are deleted (their foreign key does not follow a new id), a note follows by ON UPDATE CASCADE.
  await knex.schema.createTable('task_reschedule', (t) => {
    t.increments('id', {primaryKey: true})
    t.uuid('ti_id').notNullable()
    t.timestamp('start_date', tz).notNullable()
    t.timestamp('end_date', tz).notNullable()
    t.integer('duration').notNullable()
    t.timestamp('reschedule_date', tz).notNullable()
    t.foreign(['ti_id'], 'task_reschedule_ti_fkey').references(['id']).inTable('task_instance').onDelete('CASCADE')
  })

  await knex.schema.createTable('task_instance_note', (t) => {
    t.uuid('ti_id').notNullable().primary({constraintName: 'task_instance_note_pkey'})
    t.string('user_id', 128)
    t.string('content', 1000)
    t.timestamp('created_at', tz).notNullable()
    t.timestamp('updated_at', tz).notNullable()
    t.foreign(['ti_id'], 'task_instance_note_ti_fkey')
      .references(['id'])
      .inTable('task_instance')
      .onUpdate('CASCADE')
      .onDelete('CASCADE')
  })

  await knex.schema.createTable('log', (t) => {
    t.increments('id', {primaryKey: true})
    t.timestamp('dttm', tz)
    t.string('dag_id', 250)
    t.string('task_id', 250)
    t.integer('map_index')
    t.string('event', 60)
    t.timestamp('logical_date', tz)
    t.string('run_id', 250)
    t.string('owner', 500)
    t.string('owner_display_name', 500)
    t.text('extra')
    t.integer('try_number')
    t.index(['dttm'], 'idx_log_dttm')
    t.index(['event'], 'idx_log_event')
    t.index(['dag_id', 'task_id', 'run_id', 'map_index', 'try_number'], 'idx_log_task_instance')
  })

  // The scheduler's and the DAG processor's heartbeats (`Job`, airflow/jobs/job.py; created by
  // 0000_2_6_2_squashed_migrations.py and unchanged through 3.3.2), which explain and doctor read.
  await knex.schema.createTable('job', (t) => {
    t.increments('id', {primaryKey: true})
    t.string('dag_id', 250)
    t.string('state', 20)
    t.string('job_type', 30)
    t.timestamp('start_date', tz)
    t.timestamp('end_date', tz)
    t.timestamp('latest_heartbeat', tz)
    t.string('executor_class', 500)
    t.string('hostname', 500)
    t.string('unixname', 1000)
    t.index(['dag_id'], 'idx_job_dag_id')
    t.index(['state', 'latest_heartbeat'], 'idx_job_state_heartbeat')
    t.index(['job_type', 'latest_heartbeat'], 'job_type_heart')
  })
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'job',
    'log',
    'task_instance_note',
    'task_reschedule',
    'task_instance_history',
    'task_instance',
    'dag_run',
    'trigger',
    'backfill',
    'log_template',
    'serialized_dag',
    'dag_version',
    'dag',
    'dag_bundle',
    'alembic_version',
  ]) {
    await knex.schema.dropTableIfExists(table)
  }
}
