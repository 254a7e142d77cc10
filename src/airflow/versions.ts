/**
 * Alembic heads airlock has checked, as Airflow's `_REVISION_HEADS_MAP`
 * (airflow-core/src/airflow/utils/db.py) names them. A head not listed here is
 * refused (exit 8) until someone checks what its migrations changed; 3.3.x has no fixed head in
 * that table and is recognised by its multi-team columns instead.
 */
export const knownHeads: Readonly<Record<string, string>> = {
  '29ce7909c52b': '3.0.0',
  fe199e1abd77: '3.0.3–3.0.6',
  cc92b33c6709: '3.1.0–3.1.7',
  '658517c60c7f': '3.2.0',
  b2f1a9c7d4e0: '3.4.0 (unreleased)',
}

export const supportedVersionsText = '3.0.x, 3.1.0, 3.2.0, 3.3.x, 3.4.0'
