"""The MPI pods' settings: KubernetesPodOperator's arguments checked against the API schema, merged per role."""

from __future__ import annotations

import pytest
from kubernetes.client import models as k8s

from airflow_provider_volcano_argo.models.params import InvalidParameterError
from airflow_provider_volcano_argo.models.pod_settings import MPIPodSettings

WORKER_BASE = {"requests": {"cpu": "100m", "memory": "128Mi"}}


def roles(**settings):
    return MPIPodSettings(**settings).role_parameters(WORKER_BASE)


def test_models_and_dicts_in_the_apis_names_give_the_same_pods():
    as_models = roles(
        volumes=[
            k8s.V1Volume(
                name="data", persistent_volume_claim=k8s.V1PersistentVolumeClaimVolumeSource(claim_name="mesh")
            )
        ],
        volume_mounts=[k8s.V1VolumeMount(name="data", mount_path="/data", read_only=True)],
        env_vars=[
            k8s.V1EnvVar(
                name="TOKEN",
                value_from=k8s.V1EnvVarSource(secret_key_ref=k8s.V1SecretKeySelector(name="creds", key="token")),
            )
        ],
        env_from=[k8s.V1EnvFromSource(config_map_ref=k8s.V1ConfigMapEnvSource(name="settings"), prefix="S_")],
        node_selector={"accelerator": "nvidia"},
        tolerations=[k8s.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
        affinity=k8s.V1Affinity(
            node_affinity=k8s.V1NodeAffinity(
                required_during_scheduling_ignored_during_execution=k8s.V1NodeSelector(
                    node_selector_terms=[
                        k8s.V1NodeSelectorTerm(
                            match_expressions=[k8s.V1NodeSelectorRequirement(key="zone", operator="In", values=["a"])]
                        )
                    ]
                )
            )
        ),
        image_pull_secrets=[k8s.V1LocalObjectReference(name="registry")],
    )
    as_dicts = roles(
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "mesh"}}],
        volume_mounts=[{"name": "data", "mountPath": "/data", "readOnly": True}],
        env_vars=[{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}],
        env_from=[{"configMapRef": {"name": "settings"}, "prefix": "S_"}],
        node_selector={"accelerator": "nvidia"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        },
        image_pull_secrets="registry",
    )
    assert as_models == as_dicts
    master, worker = as_dicts["mpimaster"], as_dicts["mpiworker"]
    for role in (master, worker):
        assert role["pod"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "mesh"}}]
        assert role["pod"]["tolerations"][0]["key"] == "nvidia.com/gpu"
        assert role["pod"]["imagePullSecrets"] == [{"name": "registry"}]
        assert role["container"]["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "creds", "key": "token"}
        assert role["container"]["volumeMounts"] == [{"name": "data", "mountPath": "/data", "readOnly": True}]
    assert master["pod"]["serviceAccountName"] == "argo" and "serviceAccountName" not in worker["pod"]
    assert worker["container"]["resources"] == WORKER_BASE and "resources" not in master["container"]


def test_a_service_account_and_resources_per_role():
    result = roles(
        service_account_name="mpi-runner",
        master_resources={"requests": {"cpu": 1, "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
        worker_resources=k8s.V1ResourceRequirements(requests={"cpu": "4"}, limits={"memory": "8Gi"}),
        env_vars={"OMP_NUM_THREADS": "4"},
        working_dir="/scratch/my run",
    )
    assert result["mpimaster"]["pod"]["serviceAccountName"] == "mpi-runner"
    assert result["mpiworker"]["pod"]["serviceAccountName"] == "mpi-runner"
    assert result["mpimaster"]["container"]["resources"] == {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    # the worker_resources entries replace the per-worker ones name by name; the others stay
    assert result["mpiworker"]["container"]["resources"] == {
        "requests": {"cpu": "4", "memory": "128Mi"},
        "limits": {"memory": "8Gi"},
    }
    for role in result.values():
        assert role["container"]["env"] == [{"name": "OMP_NUM_THREADS", "value": "4"}]
        assert role["container"]["workingDir"] == "/scratch/my run"


def test_pod_overrides_merge_into_one_role_only():
    result = roles(
        tolerations=[{"key": "a", "operator": "Exists"}],
        pod_overrides={
            "mpiworker": {
                "metadata": {"labels": {"team": "cfd"}, "annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {
                    "hostIPC": True,
                    "tolerations": [{"key": "b", "operator": "Exists"}],
                    "containers": [
                        {
                            "name": "mpiworker",
                            "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                            "resources": {"limits": {"hugepages-2Mi": "1Gi"}},
                        }
                    ],
                },
            },
            "mpimaster": k8s.V1PodTemplateSpec(spec=k8s.V1PodSpec(containers=[], host_network=True)),
        },
    )
    worker, master = result["mpiworker"], result["mpimaster"]
    assert worker["pod-labels"] == {"team": "cfd"} and master["pod-labels"] == {}
    assert worker["pod-annotations"] == {"sidecar.istio.io/inject": "false"}
    assert worker["pod"]["hostIPC"] is True and "hostIPC" not in master["pod"]
    assert [t["key"] for t in worker["pod"]["tolerations"]] == ["a", "b"]  # lists of the pod are extended
    assert worker["container"]["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert worker["container"]["resources"]["limits"] == {"hugepages-2Mi": "1Gi"}
    assert worker["container"]["resources"]["requests"] == WORKER_BASE["requests"]
    assert master["pod"]["hostNetwork"] is True


@pytest.mark.parametrize(
    ("settings", "field", "rule"),
    [
        ({"volumes": [{"name": "d", "configmap": {"name": "x"}}]}, "volumes[0].configmap", "did you mean 'configMap'"),
        ({"volumes": [{"name": "d", "config_map": {"name": "x"}}]}, "volumes[0].config_map", "'configMap'"),
        ({"volumes": [{"configMap": {"name": "x"}}]}, "volumes[0]", "`name`, must not be `None`"),
        ({"volumes": [{"name": "D", "emptyDir": {}}]}, "volumes[0].name", "DNS-1123"),
        ({"volumes": [{"name": "d", "emptyDir": {}}] * 2}, "volumes[1].name", "given twice"),
        ({"volume_mounts": [{"name": "nope", "mountPath": "/x"}]}, "volume_mounts[0].name", "names no volume"),
        ({"env_vars": {"A": 1}}, "env_vars['A']", "must be text"),
        ({"env_vars": [{"name": "A=B", "value": "x"}]}, "env_vars[0].name", "without '='"),
        (
            {"env_vars": [{"name": "A", "valueFrom": {"secretKeyRef": {"key": "k"}, "x": 1}}]},
            "env_vars[0].valueFrom.x",
            "not a field of V1EnvVarSource",
        ),
        ({"tolerations": [{"key": "a", "operator": "exists"}]}, "tolerations[0].operator", "Exists or Equal"),
        ({"tolerations": [{"key": "a", "effect": "NoSched"}]}, "tolerations[0].effect", "NoSchedule"),
        ({"node_selector": {"a b": "c"}}, "node_selector['a b']", "key must be"),
        ({"worker_resources": {"requests": {"cpu": "lots"}}}, "worker_resources.requests['cpu']", "quantity"),
        ({"master_resources": {"request": {"cpu": "1"}}}, "master_resources.request", "did you mean 'requests'"),
        ({"image_pull_secrets": ["registry"]}, "image_pull_secrets[0]", "V1LocalObjectReference"),
        ({"service_account_name": "Bad"}, "service_account_name", "subdomain"),
        ({"working_dir": ""}, "working_dir", "path"),
        ({"pod_overrides": {"launcher": {}}}, "pod_overrides", "mpimaster and/or mpiworker"),
        (
            {"pod_overrides": {"mpimaster": {"spec": {"restartPolicy": "Always"}}}},
            "pod_overrides['mpimaster'].spec.restartPolicy",
            "set by the template",
        ),
        (
            {"pod_overrides": {"mpimaster": {"spec": {"containers": [{"name": "mpimaster", "image": "x"}]}}}},
            "pod_overrides['mpimaster'].spec.containers[0].image",
            "use image",
        ),
        (
            {"pod_overrides": {"mpimaster": {"spec": {"containers": [{"name": "mpimaster", "command": ["x"]}]}}}},
            "pod_overrides['mpimaster'].spec.containers[0].command",
            "mpi_command",
        ),
        (
            {"pod_overrides": {"mpiworker": {"spec": {"containers": [{"name": "sidecar"}]}}}},
            "pod_overrides['mpiworker'].spec.containers",
            "no sidecars",
        ),
        (
            {"pod_overrides": {"mpiworker": {"metadata": {"name": "x"}}}},
            "pod_overrides['mpiworker'].metadata.name",
            "only labels and annotations",
        ),
        (
            {"pod_overrides": {"mpiworker": {"spec": {"nodeSelectr": {}}}}},
            "pod_overrides['mpiworker'].spec.nodeSelectr",
            "did you mean 'nodeSelector'",
        ),
        (
            {"pod_overrides": {"mpimaster": {"metadata": {"labels": {"app.kubernetes.io/managed-by": "me"}}}}},
            "pod_overrides['mpimaster'].metadata.labels['app.kubernetes.io/managed-by']",
            "watches select",
        ),
        (
            {"pod_overrides": {"mpiworker": {"metadata": {"labels": {"workflows.argoproj.io/workflow": "w"}}}}},
            "pod_overrides['mpiworker'].metadata.labels['workflows.argoproj.io/workflow']",
            "set by the template",
        ),
    ],
)
def test_bad_settings_are_refused_naming_the_field(settings, field, rule):
    with pytest.raises(InvalidParameterError) as err:
        roles(**settings)
    assert err.value.field == field
    assert rule in str(err.value)
