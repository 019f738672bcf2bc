"""The run's runtime and budget options, declared once, and the `Settings` they make: screen, step and time budgets,
settling, the browser, infrastructure retries, the download cap, slots and the cost limit. pytest's plugin renders
`RUN_FLAGS` into its option group; a command that runs episodes renders the same tuple into argparse, but for the
`SESSION_ONLY_FLAGS` (what only a pytest session reads), and calls `run_settings`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from webeval.agent.loop import Budgets
from webeval.flags import Flag, OptionError, with_defaults
from webeval.runtime.downloads import DEFAULT_MAX_BYTES, DEFAULT_MAX_MB

_SCREEN = re.compile(r"^(\d+)x(\d+)$")
SCREEN_SIDES = (100, 16384)  # pixels; Xvfb refuses larger screens, and a page is unusable on a smaller one
DEFAULT_SCREEN = "1280x720"  # the option has no default of its own, so that a preset can tell it was not given

RUN_DIR = Flag("--run-dir", metavar="DIR", help="run directory (default reports/runs/<timestamp>)")
SLOTS = Flag("--slots", type=int, metavar="N",
             help="episodes at once in this process, each on a slot of its own: its own Xvfb, Chromium and input "
                  "(pytest: default 1, and -n starts processes instead; rollouts collect: default 8)")
COST_LIMIT = Flag("--cost-limit", type=float, metavar="USD",
                  help="start no further task once the session has spent this many US dollars (policy and judge, "
                       "priced by their profiles' [prices]); the tasks not started are missing: the run is "
                       "incomplete, never failed")
RUN_FLAGS = (
    RUN_DIR,
    SLOTS,
    Flag("--screen", metavar="WxH", help="screen and screenshot size WxH (default 1280x720)"),
    Flag("--max-steps", type=int, default=30, metavar="N", help="step budget per task (default 30)"),
    Flag("--step-timeout", type=float, default=120.0, metavar="S", help="seconds one step may take (default 120)"),
    Flag("--task-timeout", type=float, default=900.0, metavar="S", help="seconds one task may take (default 900)"),
    Flag("--settle-cap", type=float, default=3.0, metavar="S",
         help="longest wait for a page to settle, s (default 3)"),
    Flag("--infra-retries", type=int, default=0, metavar="N",
         help="re-run an episode that hit an infrastructure error, in a fresh browser context, N times"),
    Flag("--browser-path", metavar="PATH", help="Chromium executable (default $WEBEVAL_CHROMIUM or system)"),
    Flag("--download-max-mb", type=float, default=DEFAULT_MAX_MB, metavar="MB",
         help=f"a download larger than this is stopped; smaller ones are kept in the attempt folder "
              f"(default {DEFAULT_MAX_MB:g})"),
    COST_LIMIT,
)
# A collection of rollouts has a folder of its own (--out), and its records are not priced.
SESSION_ONLY_FLAGS = (RUN_DIR, COST_LIMIT)


@dataclass(frozen=True)
class Settings:
    policy: str | None
    screen: tuple[int, int]
    budgets: Budgets
    settle_cap_s: float
    browser_path: str | None
    infra_retries: int = 0
    download_max_bytes: int = DEFAULT_MAX_BYTES
    slots: int = 1
    cost_limit_usd: float | None = None  # no further task starts once the session has spent this much


def screen_size(text: str) -> tuple[int, int]:
    match = _SCREEN.match(text)
    if not match:
        raise OptionError(f"--screen {text!r}: expected WIDTHxHEIGHT, for example 1280x720")
    low, high = SCREEN_SIDES
    if not all(low <= int(side) <= high for side in match.groups()):
        raise OptionError(f"--screen {text!r}: width and height must be {low} to {high} pixels")
    return int(match[1]), int(match[2])


def cost_limit(values: Mapping[str, Any]) -> float | None:
    """The --cost-limit of RUN_FLAGS' values (None: no limit); a limit that is not a positive amount is refused, and
    so is one with --slots."""
    values = with_defaults(RUN_FLAGS, values)
    limit = values["cost_limit"]
    if limit is None:
        return None
    if not limit > 0:
        raise OptionError(f"--cost-limit {limit:g}: give a positive number of US dollars")
    if (values["slots"] or 1) > 1:
        # The limit is counted from results as they are reported; with slots, tasks start ahead of their reports.
        raise OptionError(f"--cost-limit with --slots {values['slots']}: the limit is counted as results are "
                          "reported, and slots start tasks ahead of them; use -n N for tasks at once")
    return limit


def run_settings(values: Mapping[str, Any], policy: str | None = None, default_slots: int = 1) -> Settings:
    """The settings of RUN_FLAGS' values (a missing one has its default); a bad value is an OptionError."""
    values = with_defaults(RUN_FLAGS, values)
    if values["max_steps"] < 1:
        raise OptionError("--max-steps must be at least 1")
    if values["infra_retries"] < 0:
        raise OptionError("--infra-retries must be 0 or more")
    if values["slots"] is not None and values["slots"] < 1:
        raise OptionError("--slots must be at least 1")
    for name in ("step_timeout", "task_timeout", "settle_cap", "download_max_mb"):
        if values[name] <= 0:
            raise OptionError(f"--{name.replace('_', '-')} must be positive")
    return Settings(
        policy=policy,
        screen=screen_size(values["screen"] or DEFAULT_SCREEN),
        budgets=Budgets(max_steps=values["max_steps"], step_timeout_s=values["step_timeout"],
                        task_timeout_s=values["task_timeout"]),
        settle_cap_s=values["settle_cap"],
        browser_path=values["browser_path"],
        infra_retries=values["infra_retries"],
        download_max_bytes=int(values["download_max_mb"] * (1 << 20)),
        slots=values["slots"] or default_slots,
        cost_limit_usd=cost_limit(values),
    )
