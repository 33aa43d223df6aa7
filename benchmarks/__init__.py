"""The benchmarks: scripts run as `python benchmarks/bench_NAME.py` (each puts the repository root on
sys.path), importing one another and their helpers as `benchmarks.NAME`; a package so that mypy
names them so (tests/test_types.py checks them) and the tests import them the same way."""
