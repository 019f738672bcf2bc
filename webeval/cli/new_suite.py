"""`webeval new-suite NAME [FOLDER]`: write a shipped benchmark's pytest suite into a folder (default `./NAME`), so
that a package installed with pip runs it as the repository runs `suites/NAME`: `pytest FOLDER`."""

from __future__ import annotations

import argparse
from pathlib import Path

from webeval.benchmarks import PACKAGES
from webeval.cli import CommandError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("new-suite", help="write a shipped benchmark's pytest suite into a folder")
    parser.add_argument("name", choices=sorted(PACKAGES), metavar="NAME",
                        help=f"the benchmark: {', '.join(sorted(PACKAGES))}")
    parser.add_argument("folder", type=Path, nargs="?", metavar="FOLDER", help="where (default ./NAME)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webeval.benchmarks.suite_folder import suite_files  # reads the benchmark package: not for --help

    folder: Path = args.folder or Path(args.name)
    files = suite_files(args.name, folder)
    for name in files:
        if (folder / name).exists():
            raise CommandError(f"{folder / name} exists: remove it, or name another folder "
                               f"(webeval new-suite {args.name} FOLDER)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {folder}: {exc.strerror}") from None
    print(f"wrote {', '.join(str(folder / name) for name in files)}")
    print(f"run it: pytest {folder}    (its options: pytest {folder} --help)")
    return 0
