"""`webeval tasks index|generate|sample`: task sets at training scale (docs/tasksets.md).

- `index FILE`: index a task file (JSONL, .gz, or a folder of them) once; print its count, sites, sha256 and where
  the index is kept.
- `generate SEEDS.jsonl --judge-profile P --out tasks.jsonl`: a model writes each seed's rubric as fact groups.
- `sample FILE --n N`: a curriculum batch (difficulty bands, sites balanced, the test split left out).
"""

from __future__ import annotations

from webeval.cli import task_generation, task_indexing, task_sampling


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("tasks", help="index, generate and sample task sets at training scale")
    commands = parser.add_subparsers(dest="tasks_command", required=True, metavar="SUBCOMMAND")
    task_indexing.add_parser(commands)
    task_generation.add_parser(commands)
    task_sampling.add_parser(commands)
