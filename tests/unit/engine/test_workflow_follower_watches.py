"""Which watches a follower asks for: narrowed by the provider's label where the run's objects carry it."""

from __future__ import annotations

from airflow_provider_volcano_argo.engine.object_follower import ObjectPhaseFollower
from airflow_provider_volcano_argo.engine.workflow_follower import WorkflowFollower
from airflow_provider_volcano_argo.models.follow import FollowSpec
from airflow_provider_volcano_argo.models.selectors import OWNED_SELECTOR, SharedSelectors, split_selectors


def _shared(watchers) -> dict[str, SharedSelectors]:
    out = {}
    for w in watchers:
        shared, _ = split_selectors(w.field_selector, w.label_selector, w.per_object_on_server)
        out[w.resource.plural] = shared
    return out


def _follower(labelled: list[str]) -> WorkflowFollower:
    spec = FollowSpec(namespace="ns", workflow_name="wf-1", workflow_uid="u", job_name="job-1", labelled=labelled)
    return WorkflowFollower(hook=None, spec=spec, emit=lambda line: None)


def test_a_run_whose_objects_carry_the_label_watches_only_labelled_objects():
    assert _shared(_follower(["jobs", "pods", "workflow"]).watchers()) == {
        "workflows": SharedSelectors(OWNED_SELECTOR),
        "jobs": SharedSelectors(OWNED_SELECTOR),
        "pods": SharedSelectors(f"{OWNED_SELECTOR},volcano.sh/task-spec=mpimaster"),
    }


def test_without_the_label_a_run_watches_as_older_versions_did():
    """A trigger deferred by an older version (no ``labelled``), or a template without the label."""
    assert _shared(_follower([]).watchers()) == {
        "workflows": SharedSelectors(),
        "jobs": SharedSelectors(),
        "pods": SharedSelectors("volcano.sh/task-spec=mpimaster"),
    }
    assert _shared(_follower(["workflow"]).watchers())["workflows"] == SharedSelectors(OWNED_SELECTOR)


def test_a_sensor_watches_its_object_by_name_on_the_server():
    follower = ObjectPhaseFollower(
        None, "volcano_job", "their-job", "ns", ["Completed"], ["Failed"], log_task="mpimaster", emit=lambda _: None
    )
    assert _shared(follower.watchers()) == {
        "jobs": SharedSelectors("", "metadata.name=their-job"),
        "pods": SharedSelectors("volcano.sh/job-name=their-job,volcano.sh/task-spec=mpimaster"),
    }
