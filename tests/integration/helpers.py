"""Small helpers for integration tests against the sandbox."""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_volcano_argo import templates
from airflow_provider_volcano_argo.sandbox.kubelet import ScriptedProgram

if TYPE_CHECKING:
    from airflow_provider_volcano_argo.sandbox.emulation.kubeapi import KubeApi


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 60.0,
    interval: float = 0.2,
    what: str = "condition",
    describe: Callable[[], str] | None = None,
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    detail = f"\n{describe()}" if describe else ""
    raise AssertionError(f"{what} not reached within {timeout:.0f} s (last: {last!r}){detail}")


def submit_from_template(api: KubeApi, namespace: str, template: str, parameters: dict[str, str] | None = None) -> dict:
    """What ``argo submit --from workflowtemplate/NAME -p k=v`` creates (``NewWorkflowFromWorkflowTemplate``)."""
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": f"{template}-", "labels": {"workflows.argoproj.io/workflow-template": template}},
        "spec": {"workflowTemplateRef": {"name": template}},
    }
    if parameters:
        body["spec"]["arguments"] = {"parameters": [{"name": k, "value": v} for k, v in parameters.items()]}
    return api.create("workflows", body, namespace)


def volcano_job(
    name: str,
    workers: int,
    cpu: str = "100m",
    master_policies=None,
    policies=None,
    max_retry: int = 3,
    restart: str = "OnFailure",
) -> dict:
    """Build a Volcano MPI Job: one ``mpimaster`` (``TaskCompleted -> CompleteJob``) and ``workers`` sshd workers."""
    worker_spec = {
        "containers": [
            {
                "name": "mpiworker",
                "image": "volcanosh/example-mpi:0.0.3",
                "command": ["/bin/sh", "-c", "exec /usr/sbin/sshd -D"],  # sshd as PID 1: ends on SIGTERM
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
        "restartPolicy": "OnFailure",
    }
    master_spec = {
        "containers": [
            {"name": "mpimaster", "image": "volcanosh/example-mpi:0.0.3", "command": ["/bin/sh", "-c", "echo master"]}
        ],
        "restartPolicy": restart,
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": workers + 1,
            "schedulerName": "volcano",
            "queue": "default",
            "maxRetry": max_retry,
            "plugins": {"ssh": [], "svc": []},
            "policies": policies or [],
            "tasks": [
                {
                    "name": "mpimaster",
                    "replicas": 1,
                    "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}, *(master_policies or [])],
                    "template": {"spec": master_spec},
                },
                {"name": "mpiworker", "replicas": workers, "template": {"spec": worker_spec}},
            ],
        },
    }


def phase_of(api: KubeApi, kind: str, name: str, namespace: str) -> str:
    obj = api.get_or_none(kind, name, namespace) or {}
    status = obj.get("status") or {}
    return (status.get("state") or {}).get("phase", "") if kind == "vcjobs" else status.get("phase", "")


def pod_log(api: KubeApi, namespace: str, pod: str, container: str) -> str:
    """A container's whole log read through ``pods/log`` (the API server's proxy to the kubelet)."""
    response = api.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log", query={"container": container}, stream=True
    )
    return response.data.decode()


def install_mpi_templates(sandbox, namespace: str) -> str:
    """Install the shipped WorkflowTemplates and Argo-side RBAC in ``namespace`` (as cluster admin); return it."""
    for name in templates.TEMPLATE_FILES:
        body = templates.workflow_template(name)
        body["metadata"]["namespace"] = namespace
        sandbox.apply(body)
    for doc in templates.argo_rbac(namespace):
        sandbox.apply(doc)
    # kube-apiserver's RBAC authorizer reads Roles and RoleBindings from its informers: a run started before they
    # arrive has its steps (and the master's ``kubectl wait``) refused, so wait until its authorizer allows them
    argo = f"system:serviceaccount:{namespace}:argo"
    needed = (("", "pods", "list"), ("batch.volcano.sh", "jobs", "create"))
    wait_for(lambda: all(allowed(sandbox, argo, namespace, *rule) for rule in needed), 30, what="argo RBAC in force")
    return namespace


def allowed(sandbox, user: str, namespace: str, group: str, resource: str, verb: str) -> bool:
    """Ask the API server's own authorizer (a SubjectAccessReview) whether ``user`` may ``verb`` ``resource``
    (``plural`` or ``plural/subresource``) now.
    """
    plural, _, sub = resource.partition("/")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "resourceAttributes": {
                "namespace": namespace, "group": group, "resource": plural, "subresource": sub, "verb": verb,
            },
        },
    }  # fmt: skip
    answer = sandbox.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
    return answer["status"].get("allowed") is True


def grant_upstream_rbac(sandbox, upstream_dir, namespace: str) -> None:
    """The seed's ``rbac.yaml`` (Role + RoleBinding for the ``argo`` service account) in ``namespace``, and that
    service account (what Argo's quick start leaves in namespace ``argo``, where the seed's guide runs).
    """
    import yaml

    sandbox.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "argo", "namespace": namespace}})

    path = upstream_dir / "volcano/example/integrations/argo/mpi/rbac.yaml"
    for doc in yaml.safe_load_all(path.read_text()):
        doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespace
        sandbox.apply(doc)


def example_dag(dag_id: str):
    """A DAG from the project's ``dags/`` folder, loaded as Airflow's DAG processor loads it."""
    from pathlib import Path

    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow < 3.2
        from airflow.models.dagbag import DagBag

    bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


def unpause(dag_id: str) -> None:
    """Unpause ``dag_id`` as a user would: the scheduler queues asset events only for unpaused DAGs. The DAG
    folder is written to the metadata database first, as the DAG processor (or ``dag.test()``) writes it.
    """
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session

    manager = DagBundlesManager()
    with create_session() as session:
        manager.sync_bundles_to_db(session=session)
    bundle = manager.get_bundle("example-dags")
    bundle.initialize()
    bag = BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
    sync_bag_to_db(bag, bundle.name, bundle.version)
    with create_session() as session:
        updated = session.query(DagModel).filter(DagModel.dag_id == dag_id).update({DagModel.is_paused: False})
    assert updated == 1, f"{dag_id} is not in the example-dags bundle"


def scheduler_creates_asset_triggered_run(dag_id: str):
    """Run the scheduler's DAG-run creation step once; return the asset-triggered run it made for ``dag_id``."""
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.sqlalchemy import prohibit_commit
    from airflow.utils.types import DagRunType
    from sqlalchemy import select
    from sqlalchemy.orm import selectinload

    runner = SchedulerJobRunner(job=Job())
    with create_session() as session:
        with prohibit_commit(session) as guard:
            runner._create_dagruns_for_dags(guard, session)
        found = session.scalars(
            select(DagRun)
            .where(DagRun.dag_id == dag_id, DagRun.run_type == DagRunType.ASSET_TRIGGERED)
            .options(selectinload(DagRun.consumed_asset_events))
            .order_by(DagRun.id.desc())
        ).first()
        assert found is not None, f"the scheduler created no asset-triggered run of {dag_id}"
        session.expunge_all()
        return found


def run_task_of(dag_run, task) -> str:
    """Run ``task`` of ``dag_run`` in this process as ``dag.test()`` does; return the task instance's state."""
    from airflow.sdk.definitions.dag import _run_task
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = session.merge(dag_run).get_task_instance(task.task_id, session=session)
        session.expunge(ti)
    _run_task(ti=ti, task=task)
    return ti.state


def dag_test_runs_in_core() -> bool:
    """Tell whether ``dag.test()`` runs tasks in Airflow core's own process (3.0: ``TaskInstance._run_raw_task``)
    rather than through the task SDK's runner and supervisor, as a deployment and Airflow >= 3.1 do.
    """
    from airflow.sdk import DAG

    return not hasattr(DAG, "test")


#: Why a test that needs the task SDK's runner inside ``dag.test()`` does not run on Airflow 3.0.
NEEDS_SDK_RUNNER = "Airflow 3.0's dag.test() runs tasks in core, not through the task SDK's runner"


def _dag_test(dag, conf: dict, caplog):
    """Run ``dag.test(run_conf=conf)`` as the installed Airflow offers it; return the DAG run."""
    if hasattr(dag, "test"):
        return dag.test(run_conf=conf)
    # Airflow 3.0: only the scheduler's DAG has test() (`airflow dags test` converts as here). Its logging set-up (at
    # import, and again when a DagBag loads) gives the root logger a RedirectStdHandler, which writes every record
    # to the sys.stdout of the moment, and the second time drops pytest's handlers: capfd got each line a second
    # time beside caplog, or caplog got none. One sink while the DAG runs: caplog.
    from airflow.models.dag import DAG

    root = logging.getLogger()
    echoes = [handler for handler in root.handlers if type(handler).__name__ == "RedirectStdHandler"]
    restore_caplog = caplog.handler not in root.handlers
    for handler in echoes:
        root.removeHandler(handler)
    if restore_caplog:
        root.addHandler(caplog.handler)
    try:
        return DAG.from_sdk_dag(dag).test(run_conf=conf)
    finally:
        if restore_caplog:
            root.removeHandler(caplog.handler)
        for handler in echoes:
            root.addHandler(handler)


class _TaskLog:
    """A trigger's own logger whose info lines (its task log) go to a callable; other levels go on as before."""

    def __init__(self, logger: Any, emit: Callable[[str], Any]) -> None:
        self._logger, self._emit = logger, emit

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._emit(msg % args if args else msg)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)


def capture_task_log(trigger, emit: Callable[[str], Any]) -> None:
    """Hand each info line ``trigger`` logs (what its task log shows) to ``emit``.

    Set on this trigger alone: Airflow 3.0's trigger logger is the standard library's, one object per class, so
    patching ``trigger.log.info`` sent every trigger's lines, later tests' too, to the last one patched.
    """
    trigger._log = _TaskLog(trigger.log, emit)


#: Every log ``run_dag`` captured in this session (R13 searches them for secrets).
CAPTURED_LOGS: list[str] = []


def run_dag(dag, caplog, capfd, **conf) -> tuple[dict, str]:
    """Run ``dag`` with ``dag.test(run_conf=conf)``; return task states and everything it logged."""
    caplog.set_level(logging.INFO)
    dagrun = _dag_test(dag, conf, caplog)
    states = {ti.task_id: ti.state for ti in dagrun.get_task_instances()}
    out, err = capfd.readouterr()
    log = caplog.text + out + err
    CAPTURED_LOGS.append(log)
    if os.environ.get("VOLCANO_ARGO_TEST_LOG_DIR"):  # keep every run's log for reading after a failure
        target = Path(os.environ["VOLCANO_ARGO_TEST_LOG_DIR"]) / f"{len(CAPTURED_LOGS):03d}-{dag.dag_id}.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(log)
    return states, log


def xcom_result(dag_id: str, task_id: str, key: str = "return_value") -> Any:
    """The latest XCom ``key`` (default ``return_value``) of ``dag_id.task_id``."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter(XComModel.dag_id == dag_id, XComModel.task_id == task_id, XComModel.key == key)
            .order_by(XComModel.timestamp.desc())
            .first()
        )
        return XComModel.deserialize_value(row)


@dataclasses.dataclass
class AttemptProgram(ScriptedProgram):
    """Print ``lines`` each tagged with the Volcano Job attempt of the pod that prints it (`` a1``, `` a2``, ...).

    A replayed or lost attempt then shows: the lines a test expects come from its script and the attempts the
    scenario causes, not from the log under test. ``first_duration``, if given, is how long the first attempt
    stays up (a scenario that ends it from outside needs it up until it does, however loaded the machine).
    """

    first_duration: float | None = None

    def run(self, ctx) -> int:
        retry = int((ctx.pod["metadata"].get("annotations") or {}).get("volcano.sh/job-retry-count", 0) or 0)
        duration = self.first_duration if retry == 0 and self.first_duration is not None else self.duration
        attempt = dataclasses.replace(self, lines=attempt_lines(self.lines or [], retry + 1), duration=duration)
        return ScriptedProgram.run(attempt, ctx)


def attempt_lines(lines: list[str], attempt: int) -> list[str]:
    """Return ``lines`` as ``AttemptProgram`` prints them in ``attempt`` (1-based)."""
    return [f"{line} a{attempt}" for line in lines]


def defer_without_triggerer(dag, task_id: str = "mpi", **conf) -> tuple[str, str]:
    """Start a run of ``dag`` and run ``task_id`` as a worker runs it, up to its deferral; no trigger runs.

    What a deployment whose triggerers are all down (or not yet started) leaves: the Workflow submitted, the task
    instance deferred. Return (dag_id, run_id).
    """
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dagrun import DagRun, get_or_create_dagrun
    from airflow.sdk import timezone
    from airflow.serialization.encoders import coerce_to_core_timetable
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.utils.session import create_session
    from airflow.utils.types import DagRunTriggeredByType, DagRunType

    manager = DagBundlesManager()  # the DAG in the metadata database, as dag.test() writes it
    with create_session() as session:
        manager.sync_bundles_to_db(session=session)
    bundle = manager.get_bundle("test-dags")
    bundle.initialize()
    sync_bag_to_db(BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name),
                   bundle.name, bundle.version)  # fmt: skip
    now = timezone.utcnow()
    with create_session() as session:
        run = get_or_create_dagrun(
            dag=DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag)),
            run_id=DagRun.generate_run_id(run_type=DagRunType.MANUAL, logical_date=now, run_after=now),
            logical_date=now,
            data_interval=coerce_to_core_timetable(dag.timetable).infer_manual_data_interval(run_after=now),
            run_after=now,
            conf=conf,
            triggered_by=DagRunTriggeredByType.TEST,
            triggering_user_name="test",
            start_date=now,
            session=session,
        )
        ids = (run.dag_id, run.run_id)
    defer_next_try(dag, *ids, task_id=task_id)
    return ids


def defer_next_try(dag, dag_id: str, run_id: str, task_id: str = "mpi") -> None:
    """Schedule the task instance's next try and run it as a worker does, up to its deferral (no trigger runs)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.sdk.definitions.dag import _run_task
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState

    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id).one()
        ti.try_number += 1  # as the scheduler schedules it
        ti.state = TaskInstanceState.SCHEDULED
        session.commit()
        session.expunge(ti)
    _run_task(ti=ti, task=dag.task_dict[task_id])  # run_triggerer=False: the trigger row waits for a triggerer
    assert ti.state == TaskInstanceState.DEFERRED, ti.state


def set_task_state(dag_id: str, run_id: str, state: str, task_id: str = "mpi") -> None:
    """Set a task instance's state as a user marking it does (``TaskInstance.set_state``: end date included)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id).one()
        ti.set_state(state, session=session)


def delete_dag_run(dag_id: str, run_id: str) -> None:
    """Delete a DAG run and its task instances, as a user deleting it in the UI does."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        session.delete(session.query(DagRun).filter_by(dag_id=dag_id, run_id=run_id).one())


def clear_task(dag_id: str, run_id: str, task_id: str = "mpi") -> None:
    """Clear a task instance as a user does, through Airflow's own ``clear_task_instances`` (state None)."""
    from airflow.models.taskinstance import TaskInstance, clear_task_instances
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.query(TaskInstance).filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id).all()
        clear_task_instances(tis, session, dag_run_state=False)


@dataclasses.dataclass
class StoppedProbe:
    """What a trigger probe (``trigger_probe.py --stream``) showed before it was stopped, and what it had stored."""

    lines: list[str]  # every task-log line it showed, in order
    stored: int  # how many of them the cursors it stored last cover (0: it stored none)

    def shown(self, prefix: str) -> list[str]:
        return [line for line in self.lines if line.startswith(prefix)]

    def stored_lines(self, prefix: str) -> list[str]:
        return [line for line in self.lines[: self.stored] if line.startswith(prefix)]


def stop_probe_mid_stream(
    command: list[str],
    prefix: str,
    after: int,
    how: int,
    started: Callable[[], Any] | None = None,
    timeout: float = 180.0,
) -> StoppedProbe:
    """Run a trigger probe until it has shown ``after`` lines starting with ``prefix`` and stored its cursors at
    least once, then send it signal ``how`` (SIGKILL: a triggerer killed hard; SIGTERM: stopped cleanly); return
    what it showed and stored until it ended. ``started`` runs once the probe is started (e.g. creates the job).
    A probe that shows none of that within ``timeout`` seconds is killed and the test fails, naming what it saw.
    """
    import subprocess
    import threading

    probe = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert probe.stdout is not None
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        probe.kill()

    overdue = threading.Timer(timeout, kill)
    overdue.start()
    if started is not None:
        started()
    result = StoppedProbe([], 0)

    def read(line: str) -> None:
        if line.startswith("LINE "):
            result.lines.append(line[5:].rstrip("\n"))
        elif line.startswith("SAVED "):
            result.stored = int(line.split()[1])

    for line in probe.stdout:
        read(line)
        if len(result.shown(prefix)) >= after and result.stored:
            break
    overdue.cancel()
    assert not killed.is_set(), (
        f"the probe showed {len(result.shown(prefix))} of {after} lines and stored {result.stored} in {timeout} s: "
        f"{result.lines[-5:]}"
    )
    probe.send_signal(how)
    for line in probe.stdout:  # what it printed before the signal landed was shown too
        read(line)
    probe.wait(60)
    return result


def bound_claim(sandbox, namespace: str, claim: str, files: dict[str, str], node: str = "sandbox-node-0") -> str:
    """Create ``claim`` bound to a hostPath PersistentVolume on ``node`` holding ``files``; return the PV's name.

    kube-controller-manager's persistentvolume-binder completes the binding (the PV names its claim).
    """
    volume = f"{claim}-{namespace}"
    root = sandbox.kubelet.node_root(node) / "srv" / volume
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (root / name).write_text(content)
    access = {"accessModes": ["ReadOnlyMany"], "storageClassName": ""}
    sandbox.api.create("persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
        "spec": {**access, "capacity": {"storage": "1Gi"}, "hostPath": {"path": f"/srv/{volume}"},
                 "claimRef": {"namespace": namespace, "name": claim}},
    }, None)  # fmt: skip
    sandbox.api.create("persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
        "spec": {**access, "resources": {"requests": {"storage": "1Gi"}}, "volumeName": volume},
    }, namespace)  # fmt: skip
    return volume


def create_secret(sandbox, namespace: str, name: str, data: dict[str, str], kind: str = "secrets") -> None:
    """Create a Secret (or, with ``kind="configmaps"``, a ConfigMap) holding ``data``."""
    if kind == "secrets":
        data = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    body = {"apiVersion": "v1", "kind": "Secret" if kind == "secrets" else "ConfigMap", "metadata": {"name": name},
            "data": data}  # fmt: skip
    sandbox.api.create(kind, body, namespace)
