"""The emulated Volcano job controller and gang scheduler (volcano-sh/volcano)."""
