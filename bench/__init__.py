"""Benchmarks: `python -m bench [--quick]` (see bench/README.md). Never imported by the engine."""
