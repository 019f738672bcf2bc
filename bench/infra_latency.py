"""infra_detect_s: how long a task keeps waiting on a runtime part that was SIGKILLed (Chromium, Playwright's driver,
Xvfb) before it ends as infra[<part>]; the worst of three kills of each part.

The task's work here is a wait that would last a minute: only the runtime's watch can end it.

    .venv/bin/python -m bench.infra_latency [--json]
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time

from bench.common import SCREEN, Figure, cli
from webeval.outcomes.record import InfraError
from webeval.runtime.slot import Slot

PARTS = ("browser", "driver", "display")


async def detect(runtime: Slot, part: str) -> float:
    await runtime.ready()
    pid = {"browser": runtime.browser.browser_pid, "driver": runtime.browser.driver_pid,
           "display": runtime.display.pid}[part]
    loop = asyncio.get_running_loop()
    killed: list[float] = []
    # At a random moment, so that the kill does not fall at the same point of the watch's 0.5 s period each time.
    loop.call_later(random.uniform(0.3, 1.3), lambda: (os.kill(pid, signal.SIGKILL), killed.append(time.monotonic())))
    try:
        await runtime.watched(asyncio.sleep(60))
    except InfraError as exc:
        assert exc.kind == part, exc
        return time.monotonic() - killed[0]
    raise AssertionError(f"killing the {part} did not end the task")


async def measure_all(rounds: int) -> list[Figure]:
    runtime = Slot(*SCREEN, None)
    seconds: dict[str, list[float]] = {part: [] for part in PARTS}
    try:
        for _ in range(rounds):
            for part in PARTS:
                seconds[part].append(round(await detect(runtime, part), 3))
    finally:
        await runtime.close()
    worst = max(max(values) for values in seconds.values())
    return [Figure("infra_detect_s", round(worst, 3), 30.0, "s", "<=", {"seconds_by_part": seconds})]


def measure(rounds: int) -> list[Figure]:
    return asyncio.run(measure_all(rounds))


if __name__ == "__main__":
    cli(__doc__, measure, lambda parser: parser.add_argument("--rounds", type=int, default=3))
