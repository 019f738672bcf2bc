"""Progress of a long run: done/N, passed, failed, masked, the running score interval and an estimate of the rest.

On a terminal, one live line stays under pytest's own output (dots, or `-v`'s one line per test) and is drawn again
as each result arrives; elsewhere (a CI log) it degrades to a plain line at every tenth of the run. `-v` and `-q`
keep pytest's meaning, `-qq` turns the line off, and so does `-p no:webeval.progress`.

It runs where results arrive (the xdist controller, or the one process) and reads only pytest's reports and the
documented reasons of masked outcomes: `infra[<kind>]: ...` and `judge_failed: ...` xfails, `precondition[<kind>]: ...`
skips. An xfail of any other reason is a user's own marker on a task, scored by its verdict: a failure.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from webeval.plugin.outcome import outcome_of

if TYPE_CHECKING:
    from _pytest._io import TerminalWriter  # what config.get_terminal_writer() returns

_ERASE = "\r\x1b[K"


@dataclass
class Tally:
    n: int = 0
    passed: int = 0
    failed: int = 0
    masked: int = 0
    started: float | None = None  # when the tests to run were known (time.monotonic)

    @property
    def done(self) -> int:
        return self.passed + self.failed + self.masked

    def line(self, now: float) -> str:
        """`webeval 12/45 | passed=10, failed=1, masked=1 | score 22.2%..97.8% | ETA 1m40s`: a comma after every
        count, so that no count stands before another outcome's word (a log reader that looks for `[0-9]+ failed`
        would take `passed=10 failed` for 10 failures)."""
        n = max(self.n, self.done)
        if n:
            interval = f"{self.passed / n:.1%}..{(n - self.failed) / n:.1%}"
        else:
            interval = "-"
        return (f"webeval {self.done}/{n} | passed={self.passed}, failed={self.failed}, masked={self.masked} | "
                f"score {interval} | ETA {self.eta(now)}")

    def eta(self, now: float) -> str:
        if self.started is None or not self.done:
            return "-"
        if self.done >= self.n:
            return "0s"
        return duration((now - self.started) / self.done * (self.n - self.done))


def duration(seconds: float) -> str:
    seconds = math.ceil(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def scored_as(report: pytest.TestReport, category: str) -> str:
    """passed, failed or masked: how the summary will count the test whose deciding report this is (from the
    task's outcome when the report carries one)."""
    found = outcome_of(report)
    if found is not None:
        return found[0].value if found[0].valid else "masked"
    if report.skipped or category == "error" or report.when == "setup":
        return "masked"  # not run (a precondition), a harness error, a fixture that broke
    return "passed" if report.passed else "failed"


class LiveLine:
    """One line under pytest's output, put away before anyone writes and drawn again after.

    It is written past pytest's terminal writer (write_raw), so the writer's idea of its current line stays right:
    the cursor goes back to the end of that line before pytest writes on.
    """

    def __init__(self, writer: TerminalWriter) -> None:
        self.writer = writer
        self.shown = False
        self.below = False  # drawn on the line under pytest's current one (else on that empty line itself)
        self.column = 0

    def hide(self) -> None:
        if not self.shown:
            return
        self.shown = False
        if self.writer.width_of_current_line != self.column:
            return  # something was written without telling us: the line is left where it is
        self.writer.write_raw(_ERASE + (f"\x1b[1A\x1b[{self.column + 1}G" if self.below else ""), flush=True)

    def show(self, text: str) -> None:
        width = self.writer.fullwidth
        column = self.writer.width_of_current_line
        if self.shown or column >= width - 1:
            return  # pytest's line fills the terminal row: wait for it to end
        self.below, self.column = column > 0, column
        self.writer.write_raw(("\n" if self.below else "\r") + text[: width - 1], flush=True)
        self.shown = True


def _redrawn(**options):
    """A wrapper of a hook in which pytest may write: the live line goes before, and comes back after."""

    @pytest.hookimpl(wrapper=True, tryfirst=True, **options)
    def around(self: "Progress"):
        self.hide()
        try:
            return (yield)
        finally:
            self.draw()

    return around


@dataclass
class Progress:
    config: pytest.Config
    live: LiveLine | None  # None: plain lines
    tally: Tally = field(default_factory=Tally)
    active: bool = False
    deciding: dict[str, str] = field(default_factory=dict)  # node id -> how its deciding report scored it
    printed: tuple[int, int] = (0, 0)  # plain lines: the tenth of the run and the count last printed
    ended: bool = False  # the test loop is over: pytest writes its summary now

    def draw(self) -> None:
        if not self.active or self.ended:
            return
        text = self.tally.line(time.monotonic())
        if self.live is not None:
            self.live.show(text)
            return
        done, n = self.tally.done, self.tally.n
        tenth = done * 10 // n if n else 10
        if done > self.printed[1] and (tenth > self.printed[0] or done >= n):
            self.printed = (tenth, done)
            self.write_line(text)

    def write_line(self, text: str) -> None:
        """A line of its own, whatever pytest's writer has on its current line (dots, or a test's name)."""
        writer = self.config.get_terminal_writer()
        if writer.width_of_current_line:
            writer.line()
        writer.line(text)

    def hide(self) -> None:
        if self.live is not None:
            self.live.hide()

    def count(self, report: pytest.TestReport) -> None:
        if report.when in ("setup", "call"):
            if report.when == "call" or not report.passed:
                category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
                self.deciding[report.nodeid] = scored_as(report, category)
                self.active = self.active or outcome_of(report) is not None  # a task's result is in
            return
        # teardown ends a test; a report of any other phase is xdist's for a test whose worker crashed
        scored = self.deciding.pop(report.nodeid, None)
        if scored is None and report.when != "teardown":
            scored = scored_as(report, "failed")
        if scored is not None:
            setattr(self.tally, scored, getattr(self.tally, scored) + 1)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport):
        self.hide()
        try:
            return (yield)
        finally:
            self.count(report)
            self.draw()

    pytest_runtest_logstart = _redrawn()
    pytest_runtest_logfinish = _redrawn()
    pytest_testnodedown = _redrawn(optionalhook=True)  # xdist: a worker's exit can print a line

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self):
        """Inside pytest's own wrapper, which writes the last `[100%]` once the loop is over: the line goes first."""
        try:
            return (yield)
        finally:
            self.hide()
            self.ended = True

    def begin(self, n: int) -> None:
        """The tests to run are known: the clock starts."""
        self.tally.n = n
        if self.tally.started is None:
            self.tally.started = time.monotonic()
            # A session that evaluates a policy shows progress from its start; any other once a task's result is in.
            self.active = getattr(self.config.option, "policy", None) is not None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.begin(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        self.begin(len(ids))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self):
        self.hide()
        # The state it ended in, unless a plain line already said it (a stopped or interrupted run ends early).
        if self.active and self.tally.done and (self.live is not None or self.printed[1] != self.tally.done):
            self.write_line(self.tally.line(time.monotonic()))
        self.ended = True
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_keyboard_interrupt(self):
        self.hide()
        self.ended = True
        return (yield)


def on_a_terminal() -> bool:
    return sys.stdout.isatty() and os.environ.get("TERM", "") != "dumb"


@pytest.hookimpl(trylast=True)  # after pytest's terminal reporter exists
def pytest_configure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if hasattr(config, "workerinput") or reporter is None or config.get_verbosity() < -1:
        return
    progress = Progress(config, LiveLine(config.get_terminal_writer()) if on_a_terminal() else None)
    config.pluginmanager.register(progress, "webeval.progress.live")
