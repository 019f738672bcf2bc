"""The progress line of a long run: in a pseudo-terminal for real, one live line under pytest's own output (dots, or
`-v`'s one line per test), drawn again in place as results arrive; and how a result counts, from pytest's reports."""

from __future__ import annotations

import io
import os
import re
import sys

import pytest
from _pytest._io import TerminalWriter

from tests.conftest import ROOT
from tests.terminal import Screen, run_in_pty
from webeval.plugin.outcome import OUTCOME_PROPERTY
from webeval.plugin.progress import LiveLine, Tally, duration, scored_as

WIDTH = 120
TASKS = ("News--0", "Shop--1", "Shop--3")
STATUS = re.compile(r"webeval (\d+)/(\d+) \| passed=\d+, failed=\d+, masked=\d+ \| score [^|]+ \| ETA \S+")


def frames(raw: str) -> list[list[str]]:
    """The screen as it stood each time the live line had just been drawn (trailing empty lines dropped)."""
    shown = []
    for match in STATUS.finditer(raw):
        lines = Screen(WIDTH).feed(raw[:match.end()]).lines()
        while lines and not lines[-1]:
            lines.pop()
        shown.append(lines)
    return shown


@pytest.mark.parametrize("args", [["-n", "2"], ["-p", "no:xdist", "-v"]], ids=["xdist-dots", "verbose"])
def test_the_live_line_stays_under_pytests_output_in_a_terminal(tmp_path, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    status, raw = run_in_pty([sys.executable, "-m", "pytest", "suites/local", "-p", "no:cacheprovider", *args,
                              "-k", " or ".join(TASKS), "--run-dir", str(tmp_path / "run")], ROOT, env, WIDTH)
    screen = Screen(WIDTH).feed(raw).lines()
    assert status == 0, "\n".join(screen)
    shots = frames(raw)
    counts = [int(STATUS.search(shot[-1])[1]) for shot in shots]
    # Every time it is drawn, the live line is the last line, and the only one: the earlier ones were erased.
    assert all(len([line for line in shot if STATUS.search(line)]) == 1 and STATUS.search(shot[-1]) for shot in shots)
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] == len(TASKS)
    assert raw.count("\x1b[K") >= len(TASKS)  # drawn again in place, not printed line after line
    final = [line for line in screen if STATUS.search(line)]
    assert final == [f"webeval {len(TASKS)}/{len(TASKS)} | passed={len(TASKS)}, failed=0, masked=0 | "
                     "score 100.0%..100.0% | ETA 0s"]
    if "-v" in args:  # pytest's own meaning: one line per test, each once, whole
        for task_id in TASKS:
            assert sum(f"test_task[{task_id}] PASSED" in line for line in screen) == 1, "\n".join(screen)
    else:
        assert any(re.fullmatch(r"\.{3} +\[100%\]", line) for line in screen), "\n".join(screen)


def written(width: int, *steps) -> list[str]:
    """What a terminal shows after pytest's writer and a live line took turns (str: pytest writes; else a call)."""
    out = io.StringIO()
    writer = TerminalWriter(out)
    writer.fullwidth = width
    live = LiveLine(writer)
    for step in steps:
        if isinstance(step, str):
            live.hide()
            writer.write(step)
        else:
            step(live, writer)
    return Screen(width).feed(out.getvalue().replace("\n", "\r\n")).lines()  # as a terminal's line discipline does


def test_the_live_line_gives_pytests_line_back_before_pytest_writes():
    show = lambda text: lambda live, writer: live.show(text)  # noqa: E731
    assert written(40, "ab", show("1/3"), "c", show("2/3"), "\n[gw0] PASSED", show("3/3")) == [
        "abc", "[gw0] PASSED", "3/3"]
    # An empty current line: drawn on it, and given back at its start.
    assert written(40, "done\n", show("1/3"), "next", show("2/3")) == ["done", "next", "2/3"]
    # pytest's line fills the row: nothing is drawn until it ends.
    assert written(10, "x" * 9, show("1/3")) == ["x" * 9]
    # Something written past pytest's writer leaves the line where it was; the next one is drawn below.
    behind = lambda live, writer: writer.line("[gw1] node down")  # noqa: E731
    assert written(40, "..", show("1/3"), behind, ".", show("2/3")) == ["..", "1/3[gw1] node down", ".", "2/3"]
    assert written(20, show("a status longer than the row")) == ["a status longer tha"]


def report(outcome: str, when: str = "call", wasxfail: str | None = None, task: str | None = None) -> pytest.TestReport:
    """A report as the plugin leaves it: `task` is the outcome it recorded for the task (None: no task outcome)."""
    made = pytest.TestReport("suites/x.py::test_task[A--0]", ("suites/x.py", 0, "test_task[A--0]"), {"site": 1},
                             outcome, None, when, user_properties=[(OUTCOME_PROPERTY, task)] if task else [])
    if wasxfail is not None:
        made.wasxfail = wasxfail
    return made


@pytest.mark.parametrize("made, category, scored", [
    (report("passed", task="passed"), "passed", "passed"),
    (report("failed", task="failed"), "failed", "failed"),
    (report("skipped", wasxfail="infra[browser]: the browser died", task="infra_error"), "xfailed", "masked"),
    (report("skipped", wasxfail="judge_failed: HTTP 503", task="judge_failed"), "xfailed", "masked"),
    # a user's marker: the verdict counts, whatever its reason says
    (report("skipped", wasxfail="infra[tricky]: a known bug of the site", task="failed"), "xfailed", "failed"),
    (report("passed", wasxfail="a known bug of the site", task="passed"), "xpassed", "passed"),
    (report("skipped", task="not_run"), "skipped", "masked"),  # precondition[...]: never ran
    (report("failed", task="harness_error"), "error", "masked"),
    (report("skipped"), "skipped", "masked"),  # no task outcome: what pytest says
    (report("failed", when="setup"), "error", "masked"),
    (report("passed"), "passed", "passed"),
])
def test_each_result_counts_as_the_summary_will(made, category, scored):
    assert scored_as(made, category) == scored


def test_the_line_states_the_interval_and_the_time_left():
    tally = Tally(n=40, passed=10, failed=6, masked=4, started=100.0)
    assert tally.line(now=160.0) == "webeval 20/40 | passed=10, failed=6, masked=4 | score 25.0%..85.0% | ETA 1m00s"
    assert Tally(n=8).line(now=5.0) == "webeval 0/8 | passed=0, failed=0, masked=0 | score 0.0%..100.0% | ETA -"
    assert [duration(s) for s in (0.2, 59, 61, 3599.5, 7260)] == ["1s", "59s", "1m01s", "1h00m", "2h01m"]
