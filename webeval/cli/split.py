"""`webeval split TASKS... --by site|domain --test-sites K --seed S --out DIR`: a website-level train/test split.

Draws K sites (or registered domains) for test, then checks for leakage (webeval.tasks.splits): no test site,
registered domain, task id or near-duplicate goal may be in train. Leakage is listed and exits 1 with nothing
written; a clean split writes DIR/train.jsonl and DIR/test.jsonl (each line as it was written) and DIR/split.json
(the seed, the units and sites of each side, the counts, the sources' sha256).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from webeval.cli import CommandError
from webeval.cli.task_indexing import open_taskset
from webeval.tasks import TaskFileError
from webeval.tasks.splits import LeakFinder, draw
from webeval.tasks.taskset import TaskSet

LEAKS_SHOWN = 20
SPLIT_FILE = "split.json"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("split", help="split task files into train and test by website, leak-free")
    parser.add_argument("tasks", type=Path, nargs="+", metavar="TASKS",
                        help="task files (.jsonl, .jsonl.gz) or folders of them")
    parser.add_argument("--by", choices=["site", "domain"], default="site",
                        help="what a side is made of: sites, or registered domains (default site)")
    parser.add_argument("--test-sites", type=int, required=True, metavar="K",
                        help="how many sites (or registered domains, with --by domain) go to test")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="the draw's seed (default 0)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.set_defaults(func=run)


def _units(tasksets: list[TaskSet], by: str) -> list[list[str]]:
    pick = TaskSet.site if by == "site" else TaskSet.registered_domain
    return [[pick(taskset, n) for n in range(len(taskset))] for taskset in tasksets]


def _sides(tasksets: list[TaskSet], units: list[list[str]], test_units: set[str]) -> list[list[bool]]:
    return [[unit in test_units for unit in per_set] for per_set in units]


def _leaks(tasksets: list[TaskSet], test: list[list[bool]]) -> list:
    finder = LeakFinder(task for taskset, sides in zip(tasksets, test)
                        for task in taskset.get_many([taskset.ids[n] for n, t in enumerate(sides) if t]))
    for taskset, sides in zip(tasksets, test):
        for position, path, line, raw in taskset.lines():
            if not sides[position]:
                finder.check(taskset.parse(path, line, raw))
    return finder.leaks()


def _write(out: Path, tasksets: list[TaskSet], test: list[list[bool]]) -> tuple[int, int]:
    counts = [0, 0]
    out.mkdir(parents=True, exist_ok=True)
    partial = {side: out / f".{side}.jsonl.partial" for side in ("train", "test")}
    try:
        with open(partial["train"], "wb") as train, open(partial["test"], "wb") as tested:
            for taskset, sides in zip(tasksets, test):
                for position, _, _, raw in taskset.lines():
                    (tested if sides[position] else train).write(raw.rstrip(b"\r") + b"\n")
                    counts[sides[position]] += 1
        for side, path in partial.items():
            os.replace(path, out / f"{side}.jsonl")
    finally:
        for path in partial.values():
            path.unlink(missing_ok=True)
    return counts[0], counts[1]


def _one_id_each(tasksets: list[TaskSet]) -> None:
    seen: dict[str, TaskSet] = {}
    for taskset in tasksets:
        for task_id in taskset.ids:
            first = seen.setdefault(task_id, taskset)
            if first is not taskset:
                (path, line), (first_path, first_line) = taskset.where(task_id), first.where(task_id)
                raise CommandError(f"{path}:{line}: duplicate task id {task_id!r} (first on {first_path}:{first_line})")


def run(args: argparse.Namespace) -> int:
    tasksets = [open_taskset(path) for path in args.tasks]
    if len(tasksets) > 1:
        _one_id_each(tasksets)
    units = _units(tasksets, args.by)
    try:
        chosen = draw([unit for per_set in units for unit in per_set], args.test_sites, args.seed, args.by)
        test = _sides(tasksets, units, set(chosen))
        found = _leaks(tasksets, test)
    except (TaskFileError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    if found:
        kinds = {kind: sum(leak.kind == kind for leak in found) for kind in LeakFinder.KINDS}
        print(f"webeval split: leakage, nothing written: " + ", ".join(
            f"{count} {kind}{'s' if count != 1 else ''}" for kind, count in kinds.items() if count)
              + " shared by train and test", file=sys.stderr)
        for leak in found[:LEAKS_SHOWN]:
            print(f"  {leak.line()}", file=sys.stderr)
        if len(found) > LEAKS_SHOWN:
            print(f"  ... and {len(found) - LEAKS_SHOWN} more", file=sys.stderr)
        return 1
    train, tested = _write(args.out, tasksets, test)
    sites = {side: sorted({taskset.site(n) for taskset, sides in zip(tasksets, test) for n, t in enumerate(sides)
                           if t == (side == "test")}) for side in ("train", "test")}
    domains = sorted({taskset.registered_domain(n) for taskset, sides in zip(tasksets, test)
                      for n, t in enumerate(sides) if t})
    (args.out / SPLIT_FILE).write_text(json.dumps({
        "by": args.by, "seed": args.seed, "test_units": chosen, "test_sites": sites["test"],
        "test_domains": domains, "train_sites": sites["train"], "train": train, "test": tested,
        "sources": {str(taskset.source): taskset.sha256 for taskset in tasksets}}, indent=2), encoding="utf-8")
    shown = ", ".join(chosen[:10]) + (", ..." if len(chosen) > 10 else "")
    print(f"{args.out}: train {train} tasks, test {tested} tasks on {len(chosen)} "
          f"{'sites' if args.by == 'site' else 'registered domains'} ({shown}); no leakage")
    return 0
