"""`--rejudge DIR`: judge a finished run's stored evidence again, each task a test, with no display or browser.

Works for any suite whose judge reads the evidence. Tasks that never ran in DIR are deselected (there is nothing to
judge); with `--judge-failed-only` so is every task whose final record is not judge_failed. The new records are
appended to DIR and supersede the verdicts they replace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.flags import add_pytest_options
from webeval.judges.judge_options import REJUDGE_FLAGS, unparseable_convention
from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.plugin.keys import RUN_DIR, TASK

FINAL = pytest.StashKey[dict[str, AttemptRecord]]()
UNPARSEABLE = pytest.StashKey[str]()


def unparseable(config: pytest.Config) -> str:
    """This session's convention for an unreadable verdict: `--judge-unparseable` as given, else the run directory's
    own (a resumed or re-judged run keeps it), else mask; read once."""
    if UNPARSEABLE not in config.stash:
        run_dir: RunDir | None = config.stash.get(RUN_DIR, None)
        existing = run_dir.conventions() if run_dir is not None else {}
        config.stash[UNPARSEABLE] = unparseable_convention(config.option.judge_unparseable, existing)
    return config.stash[UNPARSEABLE]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webeval")
    group.addoption("--rejudge", default=None, metavar="DIR",
                    help="judge a finished run's evidence again, each task a test; no browser starts")
    add_pytest_options(group, REJUDGE_FLAGS)


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    if option.judge_failed_only and not option.rejudge:
        raise pytest.UsageError("--judge-failed-only goes with --rejudge DIR")
    if option.rejudge is None:
        return
    path = Path(option.rejudge)
    if not (path / POPULATION).is_file():
        raise pytest.UsageError(f"--rejudge {path}: not a run directory (no {POPULATION}); nothing was changed")
    if option.resume or (option.run_dir and Path(option.run_dir).resolve() != path.resolve()):
        raise pytest.UsageError("--rejudge DIR appends to DIR: do not also pass --resume or a different --run-dir")
    run_dir = RunDir(path)
    config.stash[FINAL] = final_records(run_dir.population(), run_dir.records())[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    final = config.stash.get(FINAL, None)
    if final is None:
        return
    keep, drop = [], []
    for item in items:
        record = final.get(item.stash[TASK].id) if TASK in item.stash else None
        wanted = record is not None and (not config.option.judge_failed_only
                                         or record.outcome is Outcome.judge_failed)
        (keep if wanted or TASK not in item.stash else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
