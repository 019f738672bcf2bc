"""Pure data: tasks, oracle steps, verifier specs and populations. No browser, network or pytest here."""

from webeval.tasks.model import OracleStep, StateCheck, Task, VerifierSpec
from webeval.tasks.population import Population, TaskFileError, population_of, read_jsonl, sha256_of

__all__ = [
    "OracleStep", "Population", "StateCheck", "Task", "TaskFileError", "VerifierSpec",
    "population_of", "read_jsonl", "sha256_of",
]
