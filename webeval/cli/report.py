"""`webeval report DIR`: the run's HTML report (Allure 3) as a folder (a single file on request), with its history."""

from __future__ import annotations

import argparse
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.disk import disk_error, full_disk, megabytes, short_of_space
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.report.build import ReportError, build, find_allure
from webeval.report.run_environment import ENVIRONMENT, environment
from webeval.report.identity import report_name
from webeval.report.pictures import add_pictures
from webeval.report.results import RESULTS_DIR, complete_results


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="build a run directory's HTML report (Allure 3), with the score's trend across runs",
        description="Build DIR/report/index.html (and with --single-file the file DIR/report.html) from "
                    "DIR/allure-results; tasks without a result are added, so the report always shows the "
                    "population's N.")
    parser.add_argument("run_dir", type=Path, metavar="DIR", help="a run directory (reports/runs/<run-id>)")
    parser.add_argument("--results", type=Path, default=None,
                        help=f"the run's Allure results, if written with --alluredir (default DIR/{RESULTS_DIR})")
    parser.add_argument("--output", type=Path, default=None, help="where report/ and report.html go (default DIR)")
    parser.add_argument("--single-file", action="store_true",
                        help="also DIR/report.html, one file to send around: it holds every screenshot again "
                             "(base64), about 1.6 times the screenshots' own size; the folder links them")
    history = parser.add_mutually_exclusive_group()
    history.add_argument("--history", type=Path, default=None, metavar="FILE",
                         help="the history file shared by the runs to compare (default: reports/history/"
                              "<population>.jsonl beside reports/runs/, else DIR/../history/<population>.jsonl)")
    history.add_argument("--no-history", action="store_true", help="a report of this run alone")
    parser.set_defaults(func=run)


def default_history(run_dir: Path, population: str) -> Path:
    """Runs kept side by side share one history: reports/runs/<id> -> reports/history/<population>.jsonl."""
    runs = run_dir.absolute().parent
    base = runs.parent if runs.name == "runs" else runs
    return base / "history" / f"{population}.jsonl"


def run(args: argparse.Namespace) -> int:
    run_dir = RunDir(args.run_dir)
    if not (run_dir.path / POPULATION).is_file():
        raise CommandError(f"{run_dir.path} is not a run directory (no {POPULATION})")
    results: Path = args.results or run_dir.path / RESULTS_DIR
    if args.results is not None and not results.is_dir():
        raise CommandError(f"--results {results}: no such folder")
    try:
        population = run_dir.population()
    except ValueError as exc:
        raise CommandError(f"{run_dir.path / POPULATION}: unreadable ({str(exc).splitlines()[0]})") from None
    try:
        allure = find_allure()
    except ReportError as exc:
        raise CommandError(str(exc)) from None

    try:
        missing, pictured, built = _build(args, run_dir, results, population.name, allure)
    except OSError as exc:
        error = disk_error(exc)
        if error is None:
            raise
        raise CommandError(f"{full_disk(error, run_dir.path).line}; free space there, then run "
                           f"`webeval report {args.run_dir}` again (what it wrote is whole)") from None
    print(f"{population.name}: {population.size} tasks in the report, {len(missing)} of them without a test result "
          "of their own")
    if pictured:
        print(f"pictures: click marks and a replay drawn for {pictured} test result{'s' if pictured != 1 else ''}")
    print(f"report: {built.folder.absolute() / 'index.html'}")
    if built.single_file is not None:
        print(f"single file: {built.single_file.absolute()} ({megabytes(built.single_file.stat().st_size)}: every "
              "screenshot in it again)")
    if built.history is not None:
        runs = sum(1 for line in built.history.read_text(encoding="utf-8").splitlines() if line.strip())
        print(f"history: {built.history.absolute()} ({runs} run{'s' if runs != 1 else ''})")
    return 0


def _build(args: argparse.Namespace, run_dir: RunDir, results: Path, population: str, allure: Path):
    """The results completed to N (a recorded task without a result gets one from its record), the pictures, the
    report: (tasks without a test result of their own, results given pictures, the report built)."""
    env = None
    if not (results / ENVIRONMENT).exists():  # a run without the Allure plugin: say what can still be known
        from webeval.runtime.browser import find_chromium

        env = environment(run_dir.population(), run_dir.records(), policy=None, model=None,
                          chromium=find_chromium(None), root=Path.cwd())
    missing = complete_results(results, run_dir, env)
    pictured = add_pictures(results)  # click marks and replays: the workers leave them to the report
    history = None if args.no_history else (args.history or default_history(run_dir.path, population))
    try:
        built = build(results, args.output or run_dir.path, report_name(population, run_dir.run_id), history,
                      allure, single_file=args.single_file)
    except ReportError as exc:
        full = short_of_space(args.output or run_dir.path)  # Allure (Node) meets a full disk in its own words
        raise CommandError(full.line + "; free space there, then run this again" if full else str(exc)) from None
    return missing, pictured, built
