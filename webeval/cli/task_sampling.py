"""`webeval tasks sample FILE --n N [--bands 1-2,3-4,5+] [--max-site-share X] [--exclude SPLIT] [--seed S]`:
curriculum batches (webeval.tasks.curriculum), one JSON line per choice, as the rollout engine would draw them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from webeval.cli import CommandError
from webeval.cli.task_indexing import open_taskset
from webeval.tasks.curriculum import Band, Curriculum, CurriculumError, Exclusion

DEFAULT_BANDS = "1-2,3-4,5+"


def add_parser(commands) -> None:
    parser = commands.add_parser("sample", help="draw curriculum batches: difficulty bands, sites balanced, the "
                                                "test split left out")
    parser.add_argument("source", type=Path, metavar="FILE", help="the training task set (file or folder)")
    parser.add_argument("--n", type=int, required=True, metavar="N", help="tasks per batch")
    parser.add_argument("--batches", type=int, default=1, metavar="B", help="how many batches (default 1)")
    parser.add_argument("--first-batch", type=int, default=0, metavar="K", help="the number of the first (default 0)")
    parser.add_argument("--bands", default=DEFAULT_BANDS, metavar="BANDS",
                        help=f"difficulty bands, each LOW-HIGH or LOW+ with an optional :WEIGHT (default "
                             f"{DEFAULT_BANDS}, equal weights)")
    parser.add_argument("--max-site-share", type=float, default=0.25, metavar="X",
                        help="no site more than this share of a batch (default 0.25)")
    parser.add_argument("--exclude", type=Path, default=None, metavar="SPLIT",
                        help="leave out a test split: `webeval split`'s folder or split.json, or the test task file")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.set_defaults(func=run)


def exclusion(path: Path | None) -> Exclusion | None:
    if path is None:
        return None
    if (path / "split.json").is_file() or path.name == "split.json":
        return Exclusion.from_split(path)
    return Exclusion.from_tasks(open_taskset(path))


def run(args: argparse.Namespace) -> int:
    if args.batches < 1:
        raise CommandError(f"--batches {args.batches}: ask for at least 1")
    try:
        curriculum = Curriculum(open_taskset(args.source), Band.parse_many(args.bands), args.max_site_share,
                                exclusion(args.exclude), args.seed)
        for number in range(args.first_batch, args.first_batch + args.batches):
            for choice in curriculum.batch(args.n, number):
                print(json.dumps(choice.model_dump(), ensure_ascii=False))
    except CurriculumError as exc:
        raise CommandError(str(exc)) from None
    return 0
