"""Provider metadata, the extra link's URL, and the shipped template's structure."""

from __future__ import annotations

import importlib
import re
import types

from airflow_provider_volcano_argo import templates
from airflow_provider_volcano_argo.get_provider_info import get_provider_info
from airflow_provider_volcano_argo.links.argo import ArgoWorkflowLink, argo_workflow_url


def test_provider_info_points_at_importable_modules():
    info = get_provider_info()
    assert info["package-name"] == "airflow-provider-volcano-argo"
    for section in ("operators", "hooks", "triggers", "sensors"):
        for entry in info[section]:
            for module in entry["python-modules"]:
                importlib.import_module(module)
    for link in info["extra-links"]:
        module, name = link.rsplit(".", 1)
        assert getattr(importlib.import_module(module), name)().name == "Argo Workflow"


def test_argo_link_url():
    assert (
        argo_workflow_url("https://argo.example.com/", "argo", "wf-1") == "https://argo.example.com/workflows/argo/wf-1"
    )
    assert argo_workflow_url(None, "argo", "wf-1") is None


def test_the_link_is_always_stored_so_the_task_runner_finds_it():
    """``task_runner.finalize`` reads every extra link's XCom; a missing key is logged as an error."""
    pushed: dict[str, str] = {}
    ti = types.SimpleNamespace(xcom_push=lambda key, value: pushed.__setitem__(key, value))
    link = ArgoWorkflowLink()
    link.persist({"ti": ti}, None, "argo", "wf-1")
    assert pushed == {link.xcom_key: ""}
    link.persist({"ti": ti}, "https://argo.example.com", "argo", "wf-1")
    assert pushed == {link.xcom_key: "https://argo.example.com/workflows/argo/wf-1"}


def test_shipped_template_declares_every_parameter_it_uses_and_valid_policies():
    for name in templates.TEMPLATE_FILES:
        body = templates.workflow_template(name)
        declared = {p["name"] for p in body["spec"]["arguments"]["parameters"]}
        text = str(body)
        used = set(re.findall(r"\{\{workflow\.parameters\.([\w-]+)\}\}", text))
        assert used <= declared, used - declared
        resource = next(t for t in body["spec"]["templates"] if "resource" in t)["resource"]
        assert resource["setOwnerReference"] is True
        assert resource["failureCondition"] == "status.state.phase in (Failed,Terminated,Aborted)"
        manifest = resource["manifest"]
        for policy in ("event: TaskCompleted", "event: PodFailed", "event: PodEvicted"):
            assert manifest.count(policy) == 1  # Volcano refuses duplicate events
    assert (
        "dependsOn"
        in templates.workflow_template(templates.MASTER_AFTER_WORKERS_TEMPLATE)["spec"]["templates"][1]["resource"][
            "manifest"
        ]
    )


def test_airflow_role_is_exactly_the_verbs_the_provider_uses():
    """Every rule, exactly: a verb added to the Role fails here (and R9 proves each one listed is needed)."""
    granted = {
        (group, resource, verb)
        for rule in templates.airflow_rules()
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {
        *(("argoproj.io", "workflows", v) for v in ("create", "get", "list", "watch", "patch", "delete")),
        ("argoproj.io", "workflowtemplates", "get"),
        *(("batch.volcano.sh", "jobs", v) for v in ("get", "list", "watch")),
        ("scheduling.volcano.sh", "podgroups", "get"),
        ("bus.volcano.sh", "commands", "create"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods/log", "get"),
        ("", "events", "list"),
    }


def test_airflow_knows_the_providers_configuration_and_its_defaults():
    from airflow.configuration import conf
    from airflow.providers_manager import ProvidersManager

    from airflow_provider_volcano_argo.engine import followed_log_slots as slots_module
    from airflow_provider_volcano_argo.engine import log_records

    # as every Airflow command does at start (the triggerer's too); Airflow 3.0 reads no provider's defaults before
    ProvidersManager().initialize_providers_configuration()
    options = get_provider_info()["config"][slots_module.SECTION]["options"]
    assert set(options) == {"max_followed_logs", "overflow_log_poll_interval", "log_lines_per_record"}
    # no fallback: Airflow read these defaults from the provider's metadata (as `airflow config list` shows them)
    assert conf.getint(slots_module.SECTION, "max_followed_logs") == slots_module.DEFAULT_MAX_FOLLOWED_LOGS
    assert (
        conf.getfloat(slots_module.SECTION, "overflow_log_poll_interval") == slots_module.DEFAULT_OVERFLOW_POLL_SECONDS
    )
    assert conf.getint(slots_module.SECTION, "log_lines_per_record") == log_records.DEFAULT_LINES_PER_RECORD
