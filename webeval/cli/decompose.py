"""`webeval decompose TASKS... --out FILE.jsonl [--sizes 1,2]`: easier tasks from subsets of rubric tasks' fact
groups (webeval.tasks.splits.decompose); a task's difficulty is its number of facts, in its `facts-N` tag."""

from __future__ import annotations

import argparse
from pathlib import Path

from webeval.cli import CommandError
from webeval.cli.split import _files
from webeval.tasks import TaskFileError, read_jsonl
from webeval.tasks.splits import decompose


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("decompose", help="make easier tasks from subsets of rubric tasks' fact groups")
    parser.add_argument("tasks", type=Path, nargs="+", metavar="TASKS", help="task files (.jsonl) or folders of them")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl")
    parser.add_argument("--sizes", default=None, metavar="N,M", help="only subsets of these many groups")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        sizes = {int(size) for size in args.sizes.split(",")} if args.sizes else None
    except ValueError:
        raise CommandError(f"--sizes {args.sizes!r}: expected numbers, such as 1,2") from None
    try:
        tasks = [task for path in _files(args.tasks) for task in read_jsonl(path)]
    except TaskFileError as exc:
        raise CommandError(str(exc)) from None
    made = [easier for task in tasks for easier in decompose(task, sizes)]
    if not made:
        raise CommandError("no rubric task with two or more fact groups to decompose; nothing written")
    args.out.write_text("".join(task.model_dump_json(exclude_none=True, exclude_defaults=True) + "\n"
                                for task in made), encoding="utf-8")
    print(f"{args.out}: {len(made)} easier tasks from {sum(1 for t in tasks if decompose(t, sizes))} rubric tasks")
    return 0
