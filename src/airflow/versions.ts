/**
 * Alembic heads airlock has checked, with the release each one places: the heads of Airflow's
 * `_REVISION_HEADS_MAP` (airflow-core/src/airflow/utils/db.py) and, where no stored copy of that
 * map names them, the last migration of each release in airflow-core/docs/migrations-ref.rst
 * (the rule of scripts/ci/prek/version_heads_map.py). A head not listed here is refused (exit 8)
 * until someone checks what its migrations changed; an unlisted head with multi-team and
 * partition columns is placed as 3.3.x by its shape.
 */
export const knownHeads: Readonly<Record<string, string>> = {
  '29ce7909c52b': '3.0.0',
  fe199e1abd77: '3.0.3–3.0.6',
  cc92b33c6709: '3.1.0–3.1.7',
  // 3.1.8: an index on task_reschedule, then dag_bundle.signed_url_template as TEXT.
  '82dbd68e6171': '3.1.8 (partly migrated)',
  '509b94a1042d': '3.1.8+',
  // The 3.2.0 head of a development copy of _REVISION_HEADS_MAP (task_instance.next_trigger_id),
  // dropped from Airflow before the release.
  '658517c60c7f': '3.2.0 (development head)',
  '1d6611b6ab7c': '3.2.x',
  d2f4e1b3c5a7: '3.3.0',
  b2f1a9c7d4e0: '3.4.0 (unreleased, development head)',
  ee86eed19e24: '3.4.0 (unreleased)',
}

export const supportedVersionsText = '3.0.x, 3.1.x, 3.2.x, 3.3.x, 3.4.0 (unreleased)'
