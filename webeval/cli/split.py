"""`webeval split TASKS... --by site --test-sites K --seed S --out DIR`: a website-level train/test split.

Writes DIR/train.jsonl and DIR/test.jsonl (the rows as they were) and DIR/split.json (the seed, the sites of each
side and the counts), then checks for leakage: no test site, start URL host or task id may appear in train.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from webeval.cli import CommandError
from webeval.tasks import TaskFileError
from webeval.tasks.splits import leaks, read_rows, site_of, split_by_site


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("split", help="split task files into train and test by website")
    parser.add_argument("tasks", type=Path, nargs="+", metavar="TASKS", help="task files (.jsonl) or folders of them")
    parser.add_argument("--by", choices=["site"], default="site", help="what a side is made of (default site)")
    parser.add_argument("--test-sites", type=int, required=True, metavar="K", help="how many sites go to test")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="the draw's seed (default 0)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.set_defaults(func=run)


def _files(paths: list[Path]) -> list[Path]:
    return [f for path in paths for f in (sorted(path.glob("*.jsonl")) if path.is_dir() else [path])]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    try:
        rows = read_rows(_files(args.tasks))
        train, test, sites = split_by_site(rows, args.test_sites, args.seed)
    except (TaskFileError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    problems = leaks(train, test)
    if problems:
        raise CommandError(f"leakage, nothing written: {problems[0]}" + (f" (and {len(problems) - 1} more)"
                                                                         if len(problems) > 1 else ""))
    args.out.mkdir(parents=True, exist_ok=True)
    _write(args.out / "train.jsonl", train)
    _write(args.out / "test.jsonl", test)
    (args.out / "split.json").write_text(json.dumps({
        "by": args.by, "seed": args.seed, "test_sites": sites,
        "train_sites": sorted({site_of(row) for row in train}), "train": len(train), "test": len(test)},
        indent=2), encoding="utf-8")
    print(f"{args.out}: train {len(train)} tasks, test {len(test)} tasks on {', '.join(sites)}; no leakage")
    return 0
