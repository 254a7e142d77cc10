/**
 * Airflow 3.4.0 development migrations newer than the graph in revisions.json (which ends at
 * ee86eed19e24), seen in stored copies of apache/airflow's migration files
 * (airflow-core/src/airflow/migrations/versions/) but not placed: those copies disagree on their
 * parents (several name the same one, some revisions appear with two), and no migrations-ref.rst
 * newer than that graph could be read, so their order, and the shape of the tables after each, is
 * not established. A database at one of them is refused by name (exit 8) with what the migration
 * is known to change, rather than treated as an unknown head or guessed at: several rewrite the
 * tables airlock writes (task_instance_history dropped into task_instance, map_index renamed).
 * Regenerate revisions.json from a checkout (scripts/refresh-airflow-revisions.mjs) to place them.
 */
export const unplacedRevisions: Readonly<Record<string, string>> = {
  '4f6723e37686': 'drops dag_run.log_template_id and the log_template table',
  '76c46545c91e': 'adds an index on trigger',
  c7f0a5d2e9b4: 'lower-cases team names (team, dag_bundle_team and the tables referring to them)',
  '8d3f1a6b2c47': 'adds log.team_name',
  '3c5f8e9a1d2b': 'adds the task_instance_launch table',
  '8d1f4a2b6c37': 'adds backfill.selected_task_ids',
  '0f4c9a2b8e1d': 'adds callback.dagrun_id',
  c70138c21ecf: 'adds deadline_alert.fire_on_failure',
  '60e5d30563ae': "adds run_type to dag_run's (dag_id, logical_date) unique key",
  e5a91c7f42b3: 'adds dag_code.language',
  '3b7a91c5df20': 'folds task_map into xcom.mapped_length and drops task_map',
  c9f4b3e7a218: 'replaces job.team_name with a job_team table',
  '8a1d6c4f0b53': 'adds the dag_run_state_store table',
  a61f0c9d2b47: 'moves try_number forward for pending retries and cleared task instances',
  '9f8d3473abf9': 'removes duplicate dag_run indexes',
  e7c2a91bd540: 'drops task_instance_history (archived tries become task_instance rows) and renames xcom',
  f954ddd21484: 'adds indexes on asset_partition_dag_run',
  a2c4e6f8091b: 'changes dag_run.conf from JSONB to JSON',
  '54a27b6f9d01': 'adds dynamic_region and task_instance.region_id',
  '7f8c9a2d410e': 'renames task_instance.map_index to region_index',
  c3e7a9182f64: 'adds asset_event.source_task_instance_id and log.task_instance_id indexes',
  a5d7b9c13e40: 'adds writer columns to asset_state_store',
  a4f3c8d19e72: 'makes dag_priority_parsing_request.relative_fileloc nullable',
  f7ed13533d23: 'adds the lang_sdk_task_handler tables',
  a1c4e8b73f92: 'adds the agent and agent_state_store tables',
}
