"""A run whose first task failed: the world of `complete --continue-run` and the UI's mark-success."""

from datetime import datetime

from airflow.sdk import DAG

try:
    from airflow.providers.standard.operators.empty import EmptyOperator
except ImportError:  # pragma: no cover
    from airflow.operators.empty import EmptyOperator

with DAG("chain", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    extract = EmptyOperator(task_id="extract", retries=2)
    transform = EmptyOperator(task_id="transform")
    load = EmptyOperator(task_id="load")
    audit = EmptyOperator(task_id="audit")
    extract >> transform >> load
    extract >> audit
