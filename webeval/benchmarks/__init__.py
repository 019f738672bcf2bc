"""Benchmarks as packages: each `webeval.benchmarks.<name>` is a pytest plugin module that a suite's conftest loads
(`pytest_plugins = ["webeval.benchmarks.<name>"]`), so its options and hooks exist only in sessions that use it."""
