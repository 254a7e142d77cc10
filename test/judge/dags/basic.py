"""Producers and consumers of assets declared directly, by reference and through an alias."""

from datetime import datetime

from airflow.sdk import DAG, Asset, AssetAlias

try:
    from airflow.providers.standard.operators.empty import EmptyOperator
except ImportError:  # pragma: no cover
    from airflow.operators.empty import EmptyOperator

orders = Asset(name="orders", uri="s3://judge/orders")
customers = Asset(name="customers", uri="s3://judge/customers")
invoices = Asset(name="invoices", uri="s3://judge/invoices")
alias = AssetAlias("dynamic")

START = datetime(2026, 1, 1)

with DAG("producer", schedule=None, start_date=START, catchup=False):
    EmptyOperator(task_id="load", outlets=[orders, customers])
    EmptyOperator(task_id="by_ref", outlets=[Asset.ref(name="orders"), Asset.ref(uri="s3://judge/customers")])
    EmptyOperator(task_id="via_alias", outlets=[alias])
    EmptyOperator(task_id="twice", outlets=[orders, Asset.ref(name="orders")])

with DAG("on_orders", schedule=[orders], start_date=START, catchup=False):
    EmptyOperator(task_id="consume")

with DAG("on_both", schedule=orders & customers, start_date=START, catchup=False):
    EmptyOperator(task_id="consume")

with DAG("on_either", schedule=orders | invoices, start_date=START, catchup=False):
    EmptyOperator(task_id="consume")

with DAG("on_nested", schedule=(orders & customers) | invoices, start_date=START, catchup=False):
    EmptyOperator(task_id="consume")

with DAG("on_alias", schedule=[alias], start_date=START, catchup=False):
    EmptyOperator(task_id="consume")

with DAG("feeds_invoices", schedule=None, start_date=START, catchup=False):
    EmptyOperator(task_id="make", outlets=[invoices])
