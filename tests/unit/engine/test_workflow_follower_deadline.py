"""The deadline ends a follow before anything could be listed (API server unreachable from the start)."""

from __future__ import annotations

import asyncio

from airflow_provider_volcano_argo.engine.workflow_follower import WorkflowFollower
from airflow_provider_volcano_argo.models.follow import FollowSpec


def test_the_deadline_holds_before_the_watches_have_listed():
    follower = WorkflowFollower(
        None, FollowSpec(namespace="ns", workflow_name="wf", job_name="j", deadline=1.0), emit=lambda _: None
    )
    assert asyncio.run(follower.step(0.5)) is None  # nothing listed: no verdict on the run
    outcome = asyncio.run(follower.step(2.0))
    assert (outcome.status, outcome.reason) == ("timeout", "timeout")
