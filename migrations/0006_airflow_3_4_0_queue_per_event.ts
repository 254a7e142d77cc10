import type {Knex} from 'knex'

/**
 * Fixture schema, main's 3.4.0 development line (stamped with main's head ee86eed19e24 at dd3e57b;
 * the 3.4.0 release re-parented that migration and is refused): the DAG-run queue keeps one row per
 * event. asset_dag_run_queue gains asset_event_id (FK → asset_event ON
 * DELETE CASCADE) and its key becomes (target_dag_id, asset_event_id), so writers insert instead
 * of upserting (apache/airflow #70972, 0128_3_4_0_add_asset_event_id_to_adrq.py, b2f1a9c7d4e0;
 * asset_id stays, indexed). asset_partition_dag_run gains pending_partition_key, unique per target
 * DAG (0130_3_4_0_add_pending_partition_key_to_apdr.py, ee86eed19e24).
 */
export const alembicHead = 'ee86eed19e24'
const previousHead = 'd2f4e1b3c5a7'

export async function up(knex: Knex): Promise<void> {
  // Rows of the old shape cannot name their event; fixture databases hold none worth keeping.
  await knex('asset_dag_run_queue').delete()
  await knex.schema.alterTable('asset_dag_run_queue', (t) => {
    t.dropPrimary('assetdagrunqueue_pkey')
  })
  await knex.schema.alterTable('asset_dag_run_queue', (t) => {
    t.integer('asset_event_id').notNullable()
    t.primary(['target_dag_id', 'asset_event_id'], {constraintName: 'assetdagrunqueue_pkey'})
    t.foreign(['asset_event_id'], 'adrq_asset_event_fkey').references(['id']).inTable('asset_event').onDelete('CASCADE')
    t.index(['asset_id'], 'idx_adrq_asset_id')
    // The new key leads with target_dag_id, so its own index goes.
    t.dropIndex(['target_dag_id'], 'idx_asset_dag_run_queue_target_dag_id')
  })
  await knex.schema.alterTable('asset_partition_dag_run', (t) => {
    t.string('pending_partition_key', 250)
    t.unique(['target_dag_id', 'pending_partition_key'], {
      indexName: 'apdr_target_dag_id_pending_partition_key_uq',
      useConstraint: true,
    })
  })
  await knex('alembic_version').update({version_num: alembicHead})
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('asset_partition_dag_run', (t) => {
    t.dropUnique(['target_dag_id', 'pending_partition_key'], 'apdr_target_dag_id_pending_partition_key_uq')
    t.dropColumn('pending_partition_key')
  })
  await knex('asset_dag_run_queue').delete()
  await knex.schema.alterTable('asset_dag_run_queue', (t) => {
    t.dropIndex(['asset_id'], 'idx_adrq_asset_id')
    t.index(['target_dag_id'], 'idx_asset_dag_run_queue_target_dag_id')
    t.dropForeign(['asset_event_id'], 'adrq_asset_event_fkey')
    t.dropPrimary('assetdagrunqueue_pkey')
    t.dropColumn('asset_event_id')
  })
  await knex.schema.alterTable('asset_dag_run_queue', (t) => {
    t.primary(['asset_id', 'target_dag_id'], {constraintName: 'assetdagrunqueue_pkey'})
  })
  await knex('alembic_version').update({version_num: previousHead})
}
