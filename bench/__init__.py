"""Benchmarks of the engine against the alternatives it replaces (run as ``python -m bench.<name>``)."""
