"""whole_run_slots_8_over_1: the whole local suite, start and end included, through `pytest --slots 1` and `pytest
--slots 8` (one process, no xdist), with the model stand-in of bench/scaling.py (the OpenAI policy against the stub
answering each turn after 1.0 s, acting out the oracle's steps): the wall time of the first run over the second's,
each from launching pytest until it exited, all 45 tasks both times. The ideal with 45 tasks on 8 slots is about 7.5;
xdist's figure (whole_run_8_over_1) pays a worker process's start for each of its 8 workers.

    .venv/bin/python -m bench.whole_run_slots [--slots 8] [--json]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import Figure, cli, loadavg
from bench.scaling import run_suite
from fixtures.openai_stub import OpenAIStub, call


def measure(slots: int = 8) -> list[Figure]:
    load_before = loadavg()
    with OpenAIStub([call("computer", {"action": "wait", "seconds": 0})], delay_s=1.0) as stub, \
            tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp:
        one = run_suite(1, stub.base_url, Path(tmp), None, timeout_s=900, door="--slots")
        many = run_suite(slots, stub.base_url, Path(tmp), None, timeout_s=400, door="--slots")
    complete = one.exit == 0 and many.exit == 0
    details = {"slots_1_wall_s": round(one.wall_s, 1), f"slots_{slots}_wall_s": round(many.wall_s, 1),
               "exits": [one.exit, many.exit], "ideal": 7.5, "model_delay_s": 1.0, "load_before": load_before,
               "load_after": loadavg(), "cpu_total_s": [one.cpu_total_s, many.cpu_total_s],
               "machine_busy_s": [one.machine_busy_s, many.machine_busy_s],
               "cores_busy": [round(one.machine_busy_s / one.wall_s, 2), round(many.machine_busy_s / many.wall_s, 2)]}
    if not complete:
        details["tails"] = [one.tail, many.tail]
    return [Figure("whole_run_slots_8_over_1", round(one.wall_s / many.wall_s, 2) if complete else None, 6.0, "x",
                   ">=", details)]


def options(parser) -> None:
    parser.add_argument("--slots", type=int, default=8)


def main() -> None:
    cli(__doc__, measure, options)


if __name__ == "__main__":
    main()
