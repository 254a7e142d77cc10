"""Airflow's own code, run on a test database for the judge lane (test/judge/).

Run with the Python of one release's virtual environment (scripts/airflow/install.sh makes them):

    python harness.py STEPS_JSON

STEPS_JSON is a list of steps, run in order in one process against the database that
AIRFLOW__DATABASE__SQL_ALCHEMY_CONN names, with the DAG files of AIRFLOW__CORE__DAGS_FOLDER. The
last line printed on stdout is a JSON list with one result per step. Every step calls Airflow's
own functions, never SQL of ours: the point is to see what the release itself writes.

Steps:
  {"op": "reserialize"}                        the DAG processor's sync of the DAG files to the database
  {"op": "trigger", "dag": D, "run_id": R}     a run as `airflow dags trigger` creates it (trigger_dag);
                                               "partition_key": K gives it a partition key (3.2+)
  {"op": "start", "dag": D, "run_id": R, "task": T}
                                               the scheduler and a worker taking the task instance to
                                               running: try 1, start date, hostname, as they leave it
  {"op": "succeed", "dag": D, "run_id": R, "task": T, "emit": [...]}
                                               the worker reporting SUCCESS: the task SDK builds the
                                               payload (task_outlets, outlet_events) and the execution
                                               API's ti_update_state handles it in-process
  {"op": "states", "dag": D, "run_id": R, "states": {T: STATE}, "run_state": S}
                                               task instances and the run as a failed run leaves them
  {"op": "mark_success", "dag": D, "run_id": R, "task": T}
                                               the UI's mark-success (patch_task_instance, new_state=success)
  {"op": "schedule"}                           one pass of the scheduler's DAG-run creation
                                               (_create_dagruns_for_dags, which from 3.2 runs the
                                               partitioned step first): the runs it created and the
                                               events each consumed
  {"op": "version"}                            the release and its _REVISION_HEADS_MAP
  {"op": "load_serialized", "file": F}         serialized DAGs written by someone else (F: a JSON file of
                                               {dag_id: serialized_dag.data}) read back as the release
                                               reads them: its JSON schema's verdict and what
                                               SerializedDAG.from_dict makes of each

`emit` lists what the task recorded in its outlet_events accessors:
  {"asset": NAME, "extra": {...}}                    outlet_events[Asset(NAME)].extra = {...}
  {"alias": NAME, "asset": NAME, "extra": {...}}     outlet_events[AssetAlias(NAME)].add(Asset(NAME), extra)
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from datetime import datetime, timedelta, timezone

# Airflow logs to stdout; the result must stay the last line of it.
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")

import airflow  # noqa: E402
from airflow.utils.session import create_session  # noqa: E402

VERSION = tuple(int(part) for part in airflow.__version__.split(".")[:2])


def dag_bag_from_files():
    from airflow.models.dagbag import DagBag

    folder = os.environ["AIRFLOW__CORE__DAGS_FOLDER"]
    try:
        return DagBag(dag_folder=folder, include_examples=False)
    except TypeError:  # 3.3 dropped the examples switch (examples come from [core] load_examples)
        return DagBag(dag_folder=folder)


def reserialize(_step):
    """What the DAG processor writes for the folder's DAG files: dag, serialized_dag, dag_version,
    asset, alias and reference rows (`airflow dags reserialize`, in-process)."""
    from airflow.cli.commands import dag_command

    import argparse

    # A new DAG is unpaused ([core] dags_are_paused_at_creation is false in the lane's
    # environment) unless its file says is_paused_upon_creation=True.
    dag_command.dag_reserialize(argparse.Namespace(bundle_name=None, verbose=False, subdir=None))
    return {"dags": sorted(dag_bag_from_files().dag_ids)}


def trigger(step):
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.utils.types import DagRunTriggeredByType

    logical_date = datetime.fromisoformat(step["logical_date"]) if "logical_date" in step else None
    kwargs = {"run_id": step["run_id"], "triggered_by": DagRunTriggeredByType.TEST}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    if "partition_key" in step:
        kwargs["partition_key"] = step["partition_key"]
    run = trigger_dag(step["dag"], **kwargs)
    with create_session() as session:
        from airflow.models.dagrun import DagRun
        from airflow.utils.state import DagRunState

        dag_run = session.query(DagRun).filter_by(dag_id=step["dag"], run_id=step["run_id"]).one()
        dag_run.state = DagRunState.RUNNING
        dag_run.start_date = datetime.now(timezone.utc) - timedelta(minutes=5)

    return {"run_id": run.run_id if run else None}


def start(step):
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.state import TaskInstanceState

    with create_session() as session:
        ti = (
            session.query(TaskInstance)
            .filter_by(dag_id=step["dag"], run_id=step["run_id"], task_id=step["task"], map_index=-1)
            .one()
        )
        ti.state = TaskInstanceState.RUNNING
        ti.try_number = 1
        ti.start_date = datetime.now(timezone.utc) - timedelta(minutes=2)
        ti.hostname = "judge-worker"
        ti.queued_dttm = ti.start_date - timedelta(seconds=5)
        return {"ti_id": str(ti.id)}


def states(step):
    """Task instance and run states as a failed run leaves them (try 1, ended), set on Airflow's models."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance

    now = datetime.now(timezone.utc)
    with create_session() as session:
        for ti in session.query(TaskInstance).filter_by(dag_id=step["dag"], run_id=step["run_id"]):
            state = step["states"].get(ti.task_id)
            if state is None:
                continue
            ti.state = state
            if state in ("failed", "success"):
                ti.try_number = 1
                ti.start_date = now - timedelta(minutes=3)
                ti.end_date = now - timedelta(minutes=2)
                ti.duration = 60.0
        if "run_state" in step:
            run = session.query(DagRun).filter_by(dag_id=step["dag"], run_id=step["run_id"]).one()
            run.state = step["run_state"]
            run.end_date = now - timedelta(minutes=1)
    return {}


def mark_success(step):
    """The UI's and REST API's mark-success: patch_task_instance with new_state=success, called
    in-process as FastAPI would (its action_logging audit row is a route dependency, not run here)."""
    from airflow.api_fastapi.core_api.datamodels.task_instances import PatchTaskInstanceBody
    from airflow.api_fastapi.core_api.routes.public.task_instances import patch_task_instance

    class User:
        def get_name(self):
            return "judge"

        def get_id(self):
            return "judge"

    try:
        from airflow.models.dagbag import DBDagBag  # 3.1+

        dag_bag = DBDagBag()
    except ImportError:
        from airflow.models.dagbag import DagBag

        dag_bag = DagBag(read_dags_from_db=True)
    with create_session() as session:
        patch_task_instance(
            dag_id=step["dag"],
            dag_run_id=step["run_id"],
            task_id=step["task"],
            dag_bag=dag_bag,
            body=PatchTaskInstanceBody(new_state="success"),
            user=User(),
            session=session,
            map_index=-1,
            update_mask=None,
        )
    return {}


def outlet_payload(task, emit):
    """task_outlets and outlet_events exactly as the task SDK's runner builds them on success."""
    from airflow.sdk import Asset, AssetAlias
    from airflow.sdk.execution_time.context import OutletEventAccessors
    from airflow.sdk.execution_time.task_runner import _build_asset_profiles, _serialize_outlet_events

    accessors = OutletEventAccessors()
    for entry in emit:
        asset = Asset(name=entry["asset"], uri=entry.get("uri", entry["asset"]))
        if "alias" in entry:
            accessors[AssetAlias(entry["alias"])].add(asset, extra=entry.get("extra", {}))
        else:
            accessors[asset].extra = entry.get("extra", {})
    profiles = [profile.model_dump() for profile in _build_asset_profiles(task.outlets)]
    return profiles, list(_serialize_outlet_events(accessors))


def succeed(step):
    from airflow.api_fastapi.execution_api.datamodels.taskinstance import TISuccessStatePayload
    from airflow.api_fastapi.execution_api.routes.task_instances import ti_update_state
    from airflow.models.taskinstance import TaskInstance

    task = dag_bag_from_files().get_dag(step["dag"]).get_task(step["task"])
    task_outlets, outlet_events = outlet_payload(task, step.get("emit", []))
    with create_session() as session:
        ti_id = (
            session.query(TaskInstance.id)
            .filter_by(dag_id=step["dag"], run_id=step["run_id"], task_id=step["task"], map_index=-1)
            .scalar()
        )
    payload = TISuccessStatePayload.model_validate(
        {
            "state": "success",
            "end_date": datetime.now(timezone.utc),
            "task_outlets": task_outlets,
            "outlet_events": outlet_events,
        }
    )
    try:
        from airflow.models.dagbag import DBDagBag  # 3.1+

        dag_bag = DBDagBag()
    except ImportError:
        from airflow.models.dagbag import DagBag

        dag_bag = DagBag(read_dags_from_db=True)
    # FastAPI's SessionDep is a create_session() that commits when the request ends.
    with create_session() as session:
        ti_update_state(task_instance_id=uuid.UUID(str(ti_id)), ti_patch_payload=payload, session=session, dag_bag=dag_bag)
    return {"ti_id": str(ti_id), "task_outlets": task_outlets, "outlet_events": outlet_events}


def schedule(_step):
    """One pass of the scheduler loop's DAG-run creation, as _do_scheduling calls it."""
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.dagrun import DagRun
    from airflow.utils.sqlalchemy import prohibit_commit

    with create_session() as session:
        before = {row[0] for row in session.query(DagRun.id).all()}
    runner = SchedulerJobRunner(job=Job())
    with create_session() as session:
        with prohibit_commit(session) as guard:
            # From 3.2 this also runs _create_dagruns_for_partitioned_asset_dags first, as the loop does.
            runner._create_dagruns_for_dags(guard, session)
            guard.commit()
    created = []
    with create_session() as session:
        for run in session.query(DagRun).filter(DagRun.id.notin_(before)).order_by(DagRun.id):
            created.append(
                {
                    "dag_id": run.dag_id,
                    "run_id": run.run_id,
                    "run_type": str(run.run_type.value if hasattr(run.run_type, "value") else run.run_type),
                    "run_after": run.run_after.isoformat() if getattr(run, "run_after", None) else None,
                    "partition_key": getattr(run, "partition_key", None),
                    "event_ids": sorted(event.id for event in run.consumed_asset_events),
                }
            )
    return {"runs": created}


def load_serialized(step):
    """Each serialized DAG of the file as the release reads it back: SerializedDAG.validate_schema
    (the JSON schema the DAG processor's own to_dict validates against) and SerializedDAG.from_dict
    (what the scheduler and the UI load a serialized_dag row with), then what the loaded DAG says of
    its timetable and tasks, re-encoded by the release's own code."""
    import copy

    from airflow.serialization import serialized_objects
    from airflow.serialization.serialized_objects import BaseSerialization

    # 3.2 moved the loader to DagSerialization (SerializedDagModel.dag); before, SerializedDAG was both.
    loader = getattr(serialized_objects, "DagSerialization", None) or serialized_objects.SerializedDAG
    with open(step["file"]) as file:
        rows = json.load(file)
    read = {}
    for dag_id, data in sorted(rows.items()):
        entry = {}
        try:
            loader.validate_schema(copy.deepcopy(data))
            entry["schema"] = "valid"
        except Exception as error:  # the verdict is the result
            entry["schema"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        try:
            dag = loader.from_dict(copy.deepcopy(data))
            timetable = dag.timetable
            entry["loaded"] = {
                "dag_id": dag.dag_id,
                "timetable": {
                    "type": f"{type(timetable).__module__}.{type(timetable).__qualname__}",
                    "var": timetable.serialize(),
                    "summary": timetable.summary,
                },
                "tasks": [
                    {
                        "task_id": task.task_id,
                        "owner": task.owner,
                        "task_type": task.task_type,
                        "outlets": [BaseSerialization.serialize(outlet) for outlet in task.outlets],
                    }
                    for task in sorted(dag.tasks, key=lambda task: task.task_id)
                ],
            }
        except Exception as error:  # the verdict is the result
            entry["loaded"] = f"{type(error).__name__}: {error}"
        read[dag_id] = entry
    return read


def version(_step):
    from airflow.utils.db import _REVISION_HEADS_MAP

    return {"version": airflow.__version__, "heads": dict(_REVISION_HEADS_MAP)}


STEPS = {
    "reserialize": reserialize,
    "trigger": trigger,
    "start": start,
    "succeed": succeed,
    "schedule": schedule,
    "states": states,
    "mark_success": mark_success,
    "version": version,
    "load_serialized": load_serialized,
}


def main():
    steps = json.loads(sys.argv[1])
    results = []
    for step in steps:
        results.append(STEPS[step["op"]](step))
    sys.stdout.write("\n" + json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
