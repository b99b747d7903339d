"""The emulated Argo workflow-controller (argoproj/argo-workflows v3.7)."""
