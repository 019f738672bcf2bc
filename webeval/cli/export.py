"""`webeval export DIR --out FILE.jsonl`: a run's trajectories as training data (fields: webeval.report.export)."""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.report.export import lines


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("export", help="write a run's trajectories as JSON lines for training")
    parser.add_argument("run_dir", type=Path, metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not (args.run_dir / POPULATION).is_file():
        raise CommandError(f"{args.run_dir} is not a run directory (no {POPULATION})")
    if not args.out.parent.is_dir():
        raise CommandError(f"--out {args.out}: no folder {args.out.parent}")
    counts: Counter = Counter()
    aside = args.out.with_name(f".{args.out.name}.{os.getpid()}")
    with open(aside, "w", encoding="utf-8") as out:  # written aside, so a reader never sees half a file
        for row in lines(RunDir(args.run_dir)):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts["masked" if row["mask"] else row["outcome"]] += 1
    os.replace(aside, args.out)
    print(f"{args.out}: {sum(counts.values())} trajectories (passed={counts['passed']}, failed={counts['failed']}, "
          f"masked={counts['masked']})")
    return 0
