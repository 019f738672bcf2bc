"""SIGTERM and SIGHUP for a process that collects rollouts (`webeval rollouts collect`, the rollout service, a
trainer's own script): they set the batch's `interrupted` event, so `collect()` masks the rollouts in flight
`interrupted`, writes their records and closes the slots, as Ctrl-C does; nothing is left running.

    interrupted = asyncio.Event()
    restore = stop_on_signals(interrupted)
    try:
        batch = await collect(engine, requests, interrupted=interrupted)
    finally:
        restore()
"""

from __future__ import annotations

import asyncio
import signal
from typing import Callable, Iterable

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def stop_on_signals(interrupted: asyncio.Event, signals: Iterable[int] = SIGNALS,
                    said: Callable[[int], None] | None = None,
                    loop: asyncio.AbstractEventLoop | None = None) -> Callable[[], None]:
    """Each of `signals` sets `interrupted` (in the running loop, from the main thread); a repeat is the same stop.
    `said(number)` is called first (to say so; raising KeyboardInterrupt there stops at once). Returns what puts the
    previous handlers back. SIGINT may be given too, for a process whose Ctrl-C should end a batch the same way."""
    loop = loop or asyncio.get_running_loop()
    chosen = tuple(signals)
    previous = {number: signal.getsignal(number) for number in chosen}

    def stop(number: int) -> None:
        if said is not None:
            said(number)
        interrupted.set()

    for number in chosen:
        loop.add_signal_handler(number, stop, number)

    def restore() -> None:
        for number in chosen:
            loop.remove_signal_handler(number)
            if previous[number] is not None:
                signal.signal(number, previous[number])

    return restore
