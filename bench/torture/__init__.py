"""The torture run: real `jobsctl worker` processes on a real PostgreSQL under faults, counted.

`python -m bench.torture --jobs N --seconds S` (bench/README.md, "Torture"); tests/torture runs
the CI size.
"""
