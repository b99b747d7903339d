"""The framework the emulators are built on.

A dict-based API client, shared informers, a work-queue controller, and the ``Cluster`` every emulator is handed.
"""
