"""Benchmarks of the harness's own cost: `make bench` (bench/run.py) runs them all and writes bench/results.json."""
