"""Partitioned producers and consumers (Airflow 3.2+): a run's partition key on its events, and
consumers with a partitioned timetable, which get their runs from asset_partition_dag_run."""

from datetime import datetime

from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, StartOfDayMapper

try:  # 3.3 accepts a partition key on a triggered run only when the timetable says so
    from airflow.sdk import PartitionedAtRuntime

    BY_KEY = PartitionedAtRuntime()
except ImportError:  # 3.2: any run may carry one
    BY_KEY = None

try:
    from airflow.providers.standard.operators.empty import EmptyOperator
except ImportError:  # pragma: no cover
    from airflow.operators.empty import EmptyOperator

daily_a = Asset(name="daily_a", uri="s3://judge/daily_a")
daily_b = Asset(name="daily_b", uri="s3://judge/daily_b")
plain = Asset(name="plain", uri="s3://judge/plain")

START = datetime(2026, 1, 1)

# Triggered with or without a partition key: its events carry the run's key.
with DAG("keyed_producer", schedule=BY_KEY, start_date=START, catchup=False):
    EmptyOperator(task_id="make_a", outlets=[daily_a])
    EmptyOperator(task_id="make_b", outlets=[daily_b])
    EmptyOperator(task_id="make_plain", outlets=[plain])

# Partitioned consumers: the default mapper is the identity; a temporal mapper maps a key to its day.
with DAG("on_a_and_b", schedule=PartitionedAssetTimetable(assets=daily_a & daily_b), start_date=START):
    EmptyOperator(task_id="consume")

with DAG("on_a_daily", schedule=PartitionedAssetTimetable(assets=daily_a, default_partition_mapper=StartOfDayMapper()), start_date=START):
    EmptyOperator(task_id="consume")

# A consumer without a partitioned timetable: keyed events do not queue it, key-less ones do.
with DAG("plain_on_a", schedule=[daily_a], start_date=START, catchup=False):
    EmptyOperator(task_id="consume")

with DAG("plain_on_plain", schedule=[plain], start_date=START, catchup=False):
    EmptyOperator(task_id="consume")
