"""Upstream Argo and Volcano, installed from their modules' own manifests and run as processes."""
