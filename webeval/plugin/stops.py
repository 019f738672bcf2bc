"""Stops from outside: SIGTERM, SIGHUP and Ctrl-C (SIGINT) end a session the same way, and so does a full disk.

What a CI runner's cancel, a Kubernetes eviction or a closed terminal sends must not lose what was done, nor leave a
browser behind. On the first of these signals a process stops starting tasks; the task it has in flight is cancelled
and recorded as `infra_error[interrupted]` (its evidence written, its browser context closed); the session then ends
as it would after its last task: the slots are closed, the summary and the Allure results are written, and the exit
status is 12 with one line that says the run is incomplete and how to go on (`--resume DIR`).

On the xdist controller the signal is passed on to each worker (a Kubernetes eviction signals the container's first
process only), and the controller waits for them to end their tasks. A second signal to the controller (Ctrl-C
pressed again) stops it at once; a process whose in-flight task has not ended within GRACE_S stops at once too.

A full disk stops the session the same way (webeval.outcomes.disk): the attempt that met it is masked
`infra_error[disk]`, no task starts after it, and the one line names the filesystem and the space a task needs.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import signal
import threading
from typing import Iterator

import psutil
import pytest

from webeval.agent.evaluate import INTERRUPTED
from webeval.plugin.allure import forget
from webeval.plugin.halting import HALT_OUTPUT, halt, halted
from webeval.plugin.keys import TASK, dry_run, finished_run_dir

STOPPING = pytest.StashKey["Stopping"]()
CAUGHT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# From the first signal to the end of the task in flight: a cancelled episode closes its watched work (5 s) and its
# browser context (10 s); past this the process stops at once. Kubernetes' default grace period is 30 s.
GRACE_S = 20.0
_XDIST_WORKER = "import sys;exec(eval(sys.stdin.readline()))"  # the command line execnet starts workers with


class Stopping:
    """This process's signal handlers, and the asyncio task of the task test in flight (to cancel it)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: pytest.Session | None = None
        self.signals = 0
        self.hard = False
        self.flying: dict[asyncio.Task, asyncio.AbstractEventLoop] = {}  # several, when one process runs slots
        self.previous: dict[int, object] = {}
        self.timer: threading.Timer | None = None

    @property
    def controller(self) -> bool:
        return not hasattr(self.config, "workerinput")

    def install(self, numbers: tuple[int, ...] = CAUGHT) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in numbers:
            if number not in self.previous:
                self.previous[number] = signal.signal(number, self.on_signal)

    def uninstall(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        self.previous = {}

    def on_signal(self, number: int, frame: object) -> None:
        self.signals += 1
        if self.hard or (self.signals > 1 and self.controller):
            raise KeyboardInterrupt  # asked twice, or past the grace period: stop now
        if self.signals > 1:
            return  # a worker meets the same stop twice (the terminal's Ctrl-C and the controller's word)
        halt(self.config, INTERRUPTED, f"stopped by {signal.Signals(number).name}", self.session)
        for task, loop in list(self.flying.items()):
            loop.call_soon_threadsafe(task.cancel)
        if self.controller:
            self._pass_on()
        self.timer = threading.Timer(GRACE_S, self._past_grace)
        self.timer.daemon = True
        self.timer.start()

    def _pass_on(self) -> None:
        """Each xdist worker gets the stop too (a signal to this process alone, as Kubernetes sends, reaches no
        worker); a worker that had it already from the terminal takes it once."""
        try:
            children = psutil.Process().children()
        except psutil.Error:
            return
        for child in children:
            with contextlib.suppress(psutil.Error):
                if _XDIST_WORKER in " ".join(child.cmdline()):
                    child.send_signal(signal.SIGTERM)

    def _past_grace(self) -> None:
        self.hard = True
        _thread.interrupt_main(signal.SIGINT)

    def watch(self, task: asyncio.Task) -> None:
        """`task` is a task's attempt (with --slots, not the test's own): a stop cancels it, whether it runs or still
        waits for a slot (a stop starts no more episodes)."""
        self.flying[task] = asyncio.get_running_loop()
        task.add_done_callback(lambda done: self.flying.pop(done, None))

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """Around a task's run: the signal cancels it, to be recorded as interrupted."""
        task = asyncio.current_task()
        self.flying[task] = asyncio.get_running_loop()
        try:
            yield
        finally:
            self.flying.pop(task, None)


def stopping(config: pytest.Config) -> Stopping | None:
    return config.stash.get(STOPPING, None)


def pytest_configure(config: pytest.Config) -> None:
    """A process that runs tests (an xdist worker, or a session without workers) takes SIGTERM and SIGHUP over from
    the start; Ctrl-C once it knows that it runs tasks (the harness's own test sessions keep pytest's)."""
    if config.option.help or getattr(config.option, "version", False) or dry_run(config):
        return
    config.stash[STOPPING] = stop = Stopping(config)
    if not (stop.controller and _distributed(config)):
        stop.install((signal.SIGTERM, signal.SIGHUP))


def _distributed(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and config.pluginmanager.has_plugin("xdist")


def pytest_sessionstart(session: pytest.Session) -> None:
    stop = stopping(session.config)
    if stop is not None:
        stop.session = session


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    stop = stopping(session.config)
    if stop is not None and any(TASK in item.stash for item in session.items):
        stop.install()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """The xdist controller collects nothing: its workers' run directory says whether they run tasks."""
    stop = stopping(node.config)
    if stop is not None and finished_run_dir(node.config) is not None:
        stop.install()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A task is not started once the session stopped: no report, no record; it is missing, for --resume to run."""
    if halted(item.config) is None or TASK not in item.stash:
        return None
    forget(item)
    return True


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist controller: a worker that stopped (a signal, a full disk) stops the run, with its reason."""
    said = getattr(node, "workeroutput", {}).get(HALT_OUTPUT)
    if said:
        halt(node.config, *said)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The tasks have ended: writing the summary is not cut short by the grace period's bound."""
    stop = stopping(session.config)
    if stop is not None and stop.timer is not None:
        stop.timer.cancel()


def pytest_unconfigure(config: pytest.Config) -> None:
    stop = stopping(config)
    if stop is not None:
        stop.uninstall()
