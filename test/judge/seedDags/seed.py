"""The sandbox's demo world (`airlock sandbox seed`, defaultSeed in src/worlds/seed.ts) as DAG files.

The seed writes its serialized DAGs in SQL; the judge lane (test/judge/seed.judge.test.ts) has the
release's own DAG processor parse this file and compares what each writes. The world, for the
default options (3 producers, 4 tasks each, 3 outlets per task, 3 consumers):

- producers etl_001..etl_003, scheduled @daily, owned by data-eng, analytics and platform, with
  tasks task_1..task_4, each declaring its outlets etl_NNN.task_T.out_K (s3://lake/etl_NNN/task_T/out_K);
- the assets numbered 1..36 in that order (the seed's asset ids): asset n is scheduled on by
  report_(1 + n % 3), and report_001 is scheduled on every etl_001 asset too;
- report_001: all of its assets and the alias lake.daily_alias;
- report_002: (Asset.ref(name="etl_001.task_1.out_1") | Asset.ref(uri="s3://lake/etl_001/task_2/out_1"))
  & all of its assets;
- report_003: all of its assets, paused at creation;
- each consumer owned by analytics, with one task, build_report, declaring no outlets.
"""

from datetime import datetime

from airflow.sdk import DAG, Asset, AssetAlias, AssetAll, AssetAny

try:
    from airflow.providers.standard.operators.python import PythonOperator
except ImportError:  # pragma: no cover
    from airflow.operators.python import PythonOperator

PRODUCERS = 3
TASKS = 4
OUTLETS = 3
CONSUMERS = 3
OWNERS = ["data-eng", "analytics", "platform"]
START = datetime(2026, 1, 1)


def asset(d, t, k):
    return Asset(name=f"etl_{d:03d}.task_{t}.out_{k}", uri=f"s3://lake/etl_{d:03d}/task_{t}/out_{k}")


# In the seed's order (producer, task, outlet): the position is the asset's id.
ASSETS = [asset(d, t, k) for d in range(1, PRODUCERS + 1) for t in range(1, TASKS + 1) for k in range(1, OUTLETS + 1)]


def scheduled_on(consumer):
    """The assets consumer n (1-based) is scheduled on, in id order."""
    return [
        a
        for n, a in enumerate(ASSETS, start=1)
        if 1 + n % CONSUMERS == consumer or (consumer == 1 and a.name.startswith("etl_001."))
    ]


def work():
    pass


for d in range(1, PRODUCERS + 1):
    with DAG(
        f"etl_{d:03d}",
        schedule="@daily",
        start_date=START,
        catchup=False,
        default_args={"owner": OWNERS[(d - 1) % 3]},
    ):
        for t in range(1, TASKS + 1):
            PythonOperator(
                task_id=f"task_{t}",
                python_callable=work,
                outlets=[asset(d, t, k) for k in range(1, OUTLETS + 1)],
            )

schedules = {
    1: AssetAll(*scheduled_on(1), AssetAlias("lake.daily_alias")),
    2: AssetAll(
        AssetAny(Asset.ref(name="etl_001.task_1.out_1"), Asset.ref(uri="s3://lake/etl_001/task_2/out_1")),
        *scheduled_on(2),
    ),
    3: AssetAll(*scheduled_on(3)),
}

for c in range(1, CONSUMERS + 1):
    with DAG(
        f"report_{c:03d}",
        schedule=schedules[c],
        start_date=START,
        catchup=False,
        default_args={"owner": "analytics"},
        is_paused_upon_creation=c == CONSUMERS,
    ):
        PythonOperator(task_id="build_report", python_callable=work)
