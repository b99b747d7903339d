"""The emulated kubelet (``Kubelet``) and the container programs tests script (``ScriptedProgram``)."""

from airflow_provider_volcano_argo.sandbox.kubelet.kubelet import Kubelet
from airflow_provider_volcano_argo.sandbox.kubelet.programs import (
    ContainerContext,
    Program,
    ProgramRegistry,
    ScriptedProgram,
)

__all__ = ["ContainerContext", "Kubelet", "Program", "ProgramRegistry", "ScriptedProgram"]
