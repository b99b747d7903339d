"""The real control plane: its binaries, certificates and processes, and what is loaded into it (CRDs, manifests)."""
