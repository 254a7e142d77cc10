/**
 * Airflow migrations seen in stored copies of apache/airflow's migration files
 * (airflow-core/src/airflow/migrations/versions/) but placed neither on the graph in
 * revisions.json (main's chain up to ee86eed19e24, as its migrations-ref.rst read at one commit)
 * nor in a newer release's readable chain (newerReleases.ts). The copies were taken before rebases,
 * which rewrite down_revision, and disagree on their parents (several name the same one; some ids
 * carry two different migrations). Airflow 3.4.0 shipped on 2026-11-06, but its migration
 * reference could be read only to its seventh row, so whether it carries each 3.4.0 migration below
 * and where, and the shape of the tables after each, is not established. A database at one of them
 * is refused by name (exit 8) with what the migration is known to change, rather than treated as an
 * unknown head or guessed at: several rewrite the tables airlock writes. `version` is the
 * `airflow_version` the file declares. Regenerate revisions.json from a checkout
 * (scripts/refresh-airflow-revisions.mjs) to place them.
 */
export interface UnplacedRevision {
  version: string
  /** What the migration is known to change, as the refusal says it ("it adds …"). */
  changes: string
}

export const unplacedRevisions: Readonly<Record<string, UnplacedRevision>> = {
  e7c2a91bd540: {
    version: '3.4.0',
    changes: 'drops task_instance_history (archived tries become task_instance rows) and renames xcom',
  },
  '4f6723e37686': {version: '3.4.0', changes: 'drops dag_run.log_template_id and the log_template table'},
  '76c46545c91e': {version: '3.4.0', changes: 'adds an index on trigger'},
  c7f0a5d2e9b4: {
    version: '3.4.0',
    changes: 'lower-cases team names (team, dag_bundle_team and the tables referring to them)',
  },
  '8d3f1a6b2c47': {version: '3.4.0', changes: 'adds log.team_name'},
  '3c5f8e9a1d2b': {version: '3.4.0', changes: 'adds the task_instance_launch table'},
  '8d1f4a2b6c37': {version: '3.4.0', changes: 'adds backfill.selected_task_ids'},
  '0f4c9a2b8e1d': {version: '3.4.0', changes: 'adds callback.dagrun_id'},
  c70138c21ecf: {version: '3.4.0', changes: 'adds deadline_alert.fire_on_failure'},
  '60e5d30563ae': {version: '3.4.0', changes: "adds run_type to dag_run's (dag_id, logical_date) unique key"},
  e5a91c7f42b3: {version: '3.4.0', changes: 'adds dag_code.language'},
  '3b7a91c5df20': {version: '3.4.0', changes: 'folds task_map into xcom.mapped_length and drops task_map'},
  c9f4b3e7a218: {version: '3.4.0', changes: 'replaces job.team_name with a job_team table'},
  '8a1d6c4f0b53': {version: '3.4.0', changes: 'adds the dag_run_state_store table'},
  a61f0c9d2b47: {version: '3.4.0', changes: 'moves try_number forward for pending retries and cleared task instances'},
  '9f8d3473abf9': {version: '3.4.0', changes: 'removes duplicate dag_run indexes'},
  f954ddd21484: {version: '3.4.0', changes: 'adds indexes on asset_partition_dag_run'},
  a2c4e6f8091b: {version: '3.4.0', changes: 'changes dag_run.conf from JSONB to JSON'},
  a4f3c8d19e72: {
    version: '3.4.0',
    changes:
      'adds dag_bundle.refresh_generation, or (another migration under the same id) makes dag_priority_parsing_request.relative_fileloc nullable',
  },
  f7ed13533d23: {version: '3.4.0', changes: 'adds the lang_sdk_task_handler tables'},
  a1c4e8b73f92: {version: '3.4.0', changes: 'adds the agent and agent_state_store tables'},
  f8c2a1d94e03: {version: '3.4.0', changes: 'adds job.team_name and job.bundle_names'},
  b6a9c2e7d410: {
    version: '3.4.0',
    changes:
      'adds dag.is_draining: a draining DAG still gets queue rows but no asset-triggered run (apache/airflow #72407), which the queue rules, the preview and explain would have to learn',
  },
  b7a04c9e12d5: {
    version: '3.4.0',
    changes:
      "adds deadline.task_instance_id (task-level deadlines, #72559): a success would have to settle the task instance's deadline rows",
  },
  '0808389e656e': {
    version: '3.3.0',
    changes:
      'adds deadline.task_instance_id and deadline_alert.task_id (task-level deadlines; no 3.3 release carries it)',
  },
  '806e4be38d60': {
    version: '3.4.0',
    changes: 'adds task_instance.ignore_upstream_deps (set when the clear API force-runs a task instance, #73376)',
  },
  c7d4e8f1a203: {
    version: '3.4.0',
    changes:
      "adds task_instance.workload_run_id (the scheduler's enqueue id, which executor events are matched against, #73546)",
  },
  ca8499dc1004: {
    version: '3.4.0',
    changes:
      'renames import_error.filename to source_reference, or adds source_reference beside it (three copies disagree)',
  },
  '90e4d18ccadf': {
    version: '3.4.0',
    changes: "was main's newest migration around 2026-09-30; its own file could not be read",
  },
  '38c8df3fcb9c': {version: '3.4.0', changes: 'adds an index on dag_run (dag_id, run_after)'},
  c71065a1b14f: {version: '3.5.0', changes: 'adds job.session_id and job.registration_id'},
  e941ab8243b7: {version: '3.5.0', changes: 'adds the dag_parse_checkpoint table'},
  '687eb253de24': {version: '3.5.0', changes: 'adds dag_bundle.parse_revision'},
}
