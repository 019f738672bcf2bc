"""whole_run_8_over_1 and tail_idle_fraction: the whole local suite, start and end included, through `pytest -n 1`
and `pytest -n 8`, with the model stand-in of bench/scaling.py (the OpenAI policy against the stub answering each
turn after 1.0 s, acting out the oracle's steps).

- whole_run_8_over_1: the wall time of the -n 1 run over that of the -n 8 run, each from launching pytest until it
  exited (all 45 tasks both times). The ideal with 45 tasks on 8 workers is about 7.5.
- tail_idle_fraction: in the -n 8 run, the worker-seconds left idle after the first worker ran out of tasks (each
  worker from its last step until the last step of the run), over all worker-seconds (8 x from launch until the last
  step of the run).
The details keep each worker's ready and last-step times and its task count, which show where the run's time went.

    .venv/bin/python -m bench.whole_run [--workers 8] [--extra ARG] [--json]
"""

from __future__ import annotations

from bench.common import Figure, cli, loadavg
from bench.scaling import SuiteRun, one_and_many, options


def tail_idle(run: SuiteRun) -> tuple[float | None, dict]:
    last = {w: max(e["step"]) for w, e in run.events.items() if e.get("step")}
    if len(last) < run.workers:
        return None, {}
    end = max(last.values())
    idle = sum(end - t for t in last.values())
    total = run.workers * (end - run.launched)
    ready = run.first("ready")
    details = {
        "last_step_s": sorted(round(t - run.launched, 1) for t in last.values()),
        "ready_s": sorted(round(t - run.launched, 1) for t in ready.values()),
        "first_out_s": round(min(last.values()) - run.launched, 1), "end_s": round(end - run.launched, 1),
        "start_idle_fraction": round(sum(t - run.launched for t in ready.values()) / total, 3),
        "steps_per_worker": sorted(len(e.get("step", [])) for e in run.events.values()),
    }
    return round(idle / total, 3), details


def measure(workers: int = 8, extra: tuple[str, ...] = ()) -> list[Figure]:
    one, many, load_before = one_and_many(workers, extra, None, (900, 400))
    complete = one.exit == 0 and many.exit == 0
    ratio = round(one.wall_s / many.wall_s, 2) if complete else None
    fraction, details = tail_idle(many)
    runs = {"n1_wall_s": round(one.wall_s, 1), f"n{workers}_wall_s": round(many.wall_s, 1),
            "exits": [one.exit, many.exit], "ideal": 7.5, "model_delay_s": 1.0, "extra": list(extra),
            "load_before": load_before, "load_after": loadavg()}
    if not complete:
        runs["tails"] = [one.tail, many.tail]
    return [
        Figure("whole_run_8_over_1", ratio, 6.0, "x", ">=", runs),
        Figure("tail_idle_fraction", fraction, 0.10, "", "<=", details),
    ]


def main() -> None:
    cli(__doc__, measure, options)


if __name__ == "__main__":
    main()
