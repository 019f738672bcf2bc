"""`webeval tasks index FILE`: index a task file (JSONL, .gz, or a folder of them) once; print its count, sites,
sha256 and where the index is kept. Every command that reads a task set opens it here (`open_taskset`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from webeval.cli import CommandError
from webeval.tasks import TaskFileError
from webeval.tasks.taskset import TaskSet

SHOWN_SITES = 10


def add_parser(commands) -> None:
    index = commands.add_parser("index", help="index a task file once; print its count, sites, sha256, index")
    index.add_argument("source", type=Path, metavar="FILE", help="a .jsonl or .jsonl.gz file, or a folder of them")
    index.set_defaults(func=run_index)


def open_taskset(source: Path, quiet: bool = False) -> TaskSet:
    """The task set, its index built (saying so on stderr as it goes) when missing or stale."""
    began = time.monotonic()

    def progress(path: Path, count: int) -> None:
        if not quiet:
            print(f"webeval: indexing {path}: {count:,} tasks so far", file=sys.stderr, flush=True)

    try:
        taskset = TaskSet.open(source, progress=progress)
    except TaskFileError as exc:
        raise CommandError(str(exc)) from None
    if taskset.built and not quiet and time.monotonic() - began >= 1:
        print(f"webeval: indexed {len(taskset):,} tasks in {time.monotonic() - began:.1f} s",
              file=sys.stderr, flush=True)
    return taskset


def run_index(args: argparse.Namespace) -> int:
    taskset = open_taskset(args.source)
    sites = taskset.sites
    largest = sorted(sites.items(), key=lambda item: -item[1])[:SHOWN_SITES]
    shown = ", ".join(f"{site} ({count})" for site, count in largest)
    print(f"{args.source}: {len(taskset):,} tasks on {len(sites):,} sites in {len(taskset.files)} file(s)")
    print(f"sites: {shown}" + (", ..." if len(sites) > SHOWN_SITES else ""))
    print(f"sha256: {taskset.sha256}")
    print(f"index: {taskset.index_path} ({'built now' if taskset.built else 'reused: the files are unchanged'})")
    return 0
