"""`webeval prepare webvoyager --population NAME`: download a pinned population into the cache, sha256 checked.

A file whose sha256 is not its pin's is an error and is never stored: the suite reads only what matched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from webeval.cli import CommandError
from webeval.judges.protocols import PROMPT_PINS
from webeval.judges.protocols.pinned import PromptPin, prompts_folder
from webeval.benchmarks.webvoyager.settings import cache_root
from webeval.tasks.population import sha256_of
from webeval.benchmarks.webvoyager.tasks import POPULATIONS, PinnedFile, PopulationPin


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("prepare", help="download a benchmark's pinned task files into the cache")
    parser.add_argument("benchmark", choices=["webvoyager", "judge-prompts"],
                        help="webvoyager: a task population; judge-prompts: the pinned prompt files of the judge "
                             "protocols (into $WEBEVAL_JUDGE_PROMPTS, else ~/.cache/webeval/judge-prompts)")
    parser.add_argument("--population", default="original", choices=sorted(POPULATIONS),
                        help="which population (default original)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="cache folder (default $WEBEVAL_CACHE, else ~/.cache/webeval/webvoyager)")
    parser.add_argument("--mirror", default="https://raw.githubusercontent.com",
                        help="where raw repository files are served, as MIRROR/OWNER/REPO/COMMIT/PATH")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="copy from a local folder instead of downloading (still sha256 checked)")
    parser.add_argument("--protocol", dest="protocols", action="append", choices=sorted(PROMPT_PINS),
                        help="judge-prompts: only this protocol's file (repeatable; default all)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per download (default 60)")
    parser.set_defaults(func=run)


def _fetch(pin: PinnedFile, args: argparse.Namespace, target: Path) -> None:
    if args.source is not None:
        for candidate in (args.source / pin.name, args.source / pin.path):
            if candidate.is_file():
                shutil.copyfile(candidate, target)
                return
        raise CommandError(f"{args.source}: no {pin.name} ({pin.describe()})")
    url = f"{args.mirror.rstrip('/')}/{pin.repo}/{pin.commit}/{pin.path}"
    try:
        with urllib.request.urlopen(url, timeout=args.timeout) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out)
    except urllib.error.HTTPError as exc:
        raise CommandError(f"{url}: HTTP {exc.code}{_elsewhere(pin)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise CommandError(f"{url}: {getattr(exc, 'reason', exc)}{_elsewhere(pin)}") from None


def _elsewhere(pin: PinnedFile | PromptPin) -> str:
    """Where the file comes from, and how to bring it to a machine that cannot download it."""
    return (f"; this machine cannot download {pin.name} ({pin.describe()}, sha256 {pin.sha256}): fetch it where "
            f"that URL is reachable and pass the folder holding it with --from DIR (it is sha256 checked)")


def prepare(pin: PinnedFile | PromptPin, folder: Path, args: argparse.Namespace) -> str:
    target = folder / pin.name
    if target.is_file() and sha256_of([target]) == pin.sha256:
        return f"{target}: already prepared"
    partial = target.with_name(f".{pin.name}.partial")
    try:
        _fetch(pin, args, partial)
        actual = sha256_of([partial])
        if actual != pin.sha256:
            raise CommandError(f"{pin.describe()}: sha256 {actual} does not match the pin {pin.sha256}; not stored")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return f"{target}: sha256 {pin.sha256[:12]} ok"


def run(args: argparse.Namespace) -> int:
    if args.benchmark == "judge-prompts":
        folder = prompts_folder(args.cache_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for protocol in args.protocols or PROMPT_PINS:
            print(prepare(PROMPT_PINS[protocol], folder, args))
        return 0
    prepare_population(POPULATIONS[args.population], args.cache_dir or cache_root(), args)
    return 0


def prepare_population(pin: PopulationPin, cache: Path, args: argparse.Namespace) -> Path:
    """Every file of a population's pin into `cache/<name>`, each sha256 checked; its folder."""
    folder = cache / pin.name
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for file in pin.files:
            print(prepare(file, folder, args))
    except CommandError:
        if not any(folder.iterdir()):
            folder.rmdir()  # nothing prepared: no folder that looks prepared
        raise
    print(f"population {pin.name} ({pin.size} tasks) is ready in {folder}")
    return folder
