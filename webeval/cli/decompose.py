"""`webeval decompose TASKS... --out FILE.jsonl [--min-facts K] [--sizes 1,2]`: easier tasks from subsets of the
fact groups of tasks that have at least K of them (webeval.tasks.decomposition); each says its parent, and its
difficulty is its number of fact groups."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from webeval.cli import CommandError
from webeval.cli.task_indexing import open_taskset
from webeval.tasks.decomposition import MIN_GROUPS, decompose


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("decompose", help="make easier tasks from subsets of rubric tasks' fact groups")
    parser.add_argument("tasks", type=Path, nargs="+", metavar="TASKS",
                        help="task files (.jsonl, .jsonl.gz) or folders of them")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl")
    parser.add_argument("--min-facts", type=int, default=MIN_GROUPS, metavar="K",
                        help=f"decompose only tasks with at least K fact groups (default {MIN_GROUPS})")
    parser.add_argument("--sizes", default=None, metavar="N,M", help="only subsets of these many groups")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        sizes = {int(size) for size in args.sizes.split(",")} if args.sizes else None
    except ValueError:
        raise CommandError(f"--sizes {args.sizes!r}: expected numbers, such as 1,2") from None
    if args.min_facts < 2:
        raise CommandError(f"--min-facts {args.min_facts}: a task needs at least 2 fact groups to have a proper part")
    tasksets = [open_taskset(path) for path in args.tasks]
    made = parents = total = 0
    partial = args.out.with_name(args.out.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as out:
            for taskset in tasksets:
                for task in taskset:
                    total += 1
                    before = made
                    for easier in decompose(task, args.min_facts, sizes):
                        out.write(easier.model_dump_json(exclude_none=True, exclude_defaults=True) + "\n")
                        made += 1
                    parents += made > before
        if not made:
            raise CommandError(f"no task with {args.min_facts} or more fact groups to decompose; nothing written")
        os.replace(partial, args.out)
    finally:
        partial.unlink(missing_ok=True)
    print(f"{args.out}: {made} easier tasks from {parents} of {total} tasks (those with {args.min_facts} or more "
          f"fact groups)")
    return 0
