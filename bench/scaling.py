"""scaling_8_over_1, parallel_start_8_s and worker_pss_gb: the local suite through `pytest -n 1` and `pytest -n 8`.

The model stand-in (bench/model_standin.py) is the real OpenAI policy against the OpenAI stub answering after 1.0 s,
acting out the oracle's steps. Every worker logs when it is configured, has collected, has its runtime ready, and
when each step is observed; a sampler reads every process of the run: its CPU every 3 s, its memory every 12 s
(reading the PSS of a hundred Chromium processes costs about 0.25 s of CPU, which would come out of the run).
- scaling_8_over_1: steady-state steps per second at -n 8 over -n 1, each counted from the moment every worker is
  ready and stepping (its first step taken) until the first worker took its last step. -n 1 runs two tasks of each
  site; -n 8 the whole suite. The details also give the rate counted from every runtime ready.
- parallel_start_8_s: from launching `pytest -n 8` until all 8 workers have a display and a browser ready.
- worker_pss_gb: proportional set size of everything the -n 8 run started (workers, Playwright drivers, Xvfb,
  Chromium) over 8, the highest sample of the steady state.
The details hold the CPU seconds per step in the steady state, by kind of process: on 2 cores, this decides scaling.

    .venv/bin/python -m bench.scaling [--workers 8] [--json]
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import (ROOT, Figure, cli, cpu_s, kind_of, loadavg, machine_busy_s, median, pss_kb,
                          run_processes)
from fixtures.openai_stub import OpenAIStub, call

ONE_WORKER_TASKS = " or ".join(f"{site}--{n}]" for site in ("Dictionary", "Flights", "News", "Recipes", "Shop")
                               for n in (0, 5))  # ten tasks, two of each site
RUN_MARKER = "WEBEVAL_BENCH_RUN"
SAMPLE_S = 3.0
PSS_EVERY = 4  # samples: the kernel walks every page table to count PSS, so memory is read every 12 s only


@dataclass
class Sample:
    t: float
    pss_kb: int | None  # None: not read this time
    cpu: dict[int, tuple[str, float]]  # pid -> (kind, CPU seconds)
    stand_in_cpu_s: float  # this process: the OpenAI stub (and the sampler)


@dataclass
class SuiteRun:
    workers: int
    launched: float
    wall_s: float
    exit: int
    events: dict[str, dict[str, list[float]]]  # worker -> event -> times
    samples: list[Sample] = field(default_factory=list)
    cpu_total_s: float = 0.0
    tail: str = ""
    machine_busy_s: float = 0.0  # the whole machine's busy CPU-seconds over the run

    def first(self, event: str) -> dict[str, float]:
        return {w: min(e[event]) for w, e in self.events.items() if e.get(event)}

    @property
    def all_ready(self) -> float | None:
        ready = self.first("ready")
        return max(ready.values()) if len(ready) == self.workers else None

    def window(self, from_ready: bool = False) -> tuple[float, float]:
        """From every worker stepping until the first worker took its last step.

        Stepping: its runtime ready and its first step taken. A worker's first task also pays what a worker does
        once (importing the model's client library: 0.6 s of CPU, several seconds when eight workers do it at
        once), which is start-up, not the steady state. `from_ready` counts from every runtime ready instead.
        """
        start = self.all_ready or max(self.first("ready").values(), default=self.launched)
        if not from_ready:
            start = max([start, *self.first("step").values()])
        end = min((max(e["step"]) for e in self.events.values() if e.get("step")), default=start)
        return start, end

    def steps_in(self, start: float, end: float) -> int:
        return sum(1 for e in self.events.values() for t in e.get("step", []) if start <= t <= end)

    def steady_rate(self, from_ready: bool = False) -> tuple[float | None, int]:
        start, end = self.window(from_ready)
        counted = self.steps_in(start, end)
        return (counted / (end - start) if end > start and counted else None), counted

    def cpu_until_ready(self) -> dict[str, float]:
        """CPU seconds every process of the run had used when the last worker was ready, by kind of process."""
        ready = self.all_ready
        after = next((s for s in self.samples if ready is not None and s.t >= ready), None)
        if after is None:
            return {}
        by_kind: dict[str, float] = {}
        for kind, value in after.cpu.values():
            by_kind[kind] = by_kind.get(kind, 0.0) + value
        spent = {k: round(v, 2) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]) if v > 0.05}
        spent["TOTAL"] = round(sum(by_kind.values()), 2)
        spent["sampled_at_s"] = round(after.t - self.launched, 1)
        return spent

    def cpu_per_step(self) -> dict[str, float]:
        """CPU seconds per step between the first and last samples inside the steady window, by kind of process."""
        start, end = self.window()
        inside = [s for s in self.samples if start <= s.t <= end]
        if len(inside) < 2:
            return {}
        first, last = inside[0], inside[-1]
        steps = self.steps_in(first.t, last.t)
        if not steps:
            return {}
        by_kind: dict[str, float] = {}
        for pid, (kind, value) in last.cpu.items():
            before = first.cpu.get(pid, (kind, 0.0))[1]
            by_kind[kind] = by_kind.get(kind, 0.0) + value - before
        # Renderers that ended inside the window are in their zygote's reaped-children time.
        by_kind["stand-in (stub)"] = last.stand_in_cpu_s - first.stand_in_cpu_s
        per_step = {k: round(v / steps, 4) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1]) if v > 0.005}
        per_step["TOTAL"] = round(sum(by_kind.values()) / steps, 4)
        return per_step


def _cpu_snapshot(pids: list[int]) -> dict[int, tuple[str, float]]:
    snapshot = {}
    for pid in pids:
        kind = kind_of(pid)
        if kind == "gone":
            continue
        # A zygote's reaped renderers count with it; every other process counts its own time only, so that a
        # child reaped by its parent is never counted twice.
        if kind == "chromium-zygote":
            value = cpu_s(pid, children=True)
        else:
            value = cpu_s(pid, children=False)
        snapshot[pid] = (kind, value)
    return snapshot


def run_suite(workers: int, base_url: str, tmp: Path, select: str | None, timeout_s: float,
              extra: tuple[str, ...] = (), door: str = "-n") -> SuiteRun:
    """Run the suite on `workers` xdist workers (`door` -n) or slots (--slots); past timeout_s it is interrupted
    (SIGINT), and the steady state is what was measured by then."""
    logs = tmp / f"log{door}{workers}"
    logs.mkdir()
    token = secrets.token_hex(6)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WEBEVAL_BENCH_LOG": str(logs), RUN_MARKER: token,
           "BENCH_STUB_KEY": "sk-bench"}
    command = [sys.executable, "-m", "pytest", "suites/local", door, str(workers), "-p", "bench.model_standin",
               "--policy", "openai", "--policy-base-url", base_url, "--policy-model", "stub-model",
               "--policy-api-key-env", "BENCH_STUB_KEY", "--run-dir", str(tmp / f"run{door}{workers}"),
               "-q", "-p", "no:cacheprovider", *extra] + (["-k", select] if select else [])
    samples: list[Sample] = []
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy_before = machine_busy_s()
    launched = time.time()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_S):
            pids = run_processes(proc.pid, f"{RUN_MARKER}={token}")
            own = resource.getrusage(resource.RUSAGE_SELF)
            memory = sum(pss_kb(p) for p in pids) if len(samples) % PSS_EVERY == PSS_EVERY - 1 else None
            samples.append(Sample(time.time(), memory, _cpu_snapshot(pids), own.ru_utime + own.ru_stime))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # pytest stops its workers, and they their browsers
        try:
            output, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
    finally:
        done.set()
        sampler.join()
    wall = time.time() - launched
    busy = machine_busy_s() - busy_before
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    events: dict[str, dict[str, list[float]]] = {}
    for path in logs.glob("*.jsonl"):
        worker = events.setdefault(path.stem, {})
        for line in path.read_text().splitlines():
            if line.strip():
                event = json.loads(line)
                worker.setdefault(event["ev"], []).append(event["t"])
    cpu_total = (children.ru_utime + children.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    return SuiteRun(workers, launched, wall, proc.returncode, events, samples, round(cpu_total, 1), output[-1500:],
                    machine_busy_s=round(busy, 1))


def _summary(run: SuiteRun) -> dict:
    start, end = run.window()
    rate, counted = run.steady_rate()
    since = lambda times: sorted(round(t - run.launched, 1) for t in times.values())  # noqa: E731
    info = {"exit": run.exit, "wall_s": round(run.wall_s, 1), "steps": sum(len(e.get("step", []))
                                                                         for e in run.events.values()),
            "steady_steps": counted, "steady_window_s": round(end - start, 1),
            "steps_per_s": round(rate, 3) if rate else None,
            "s_per_step_per_worker": round(run.workers / rate, 3) if rate else None,
            "steps_per_s_from_ready": round(run.steady_rate(from_ready=True)[0] or 0, 3),
            "cpu_s_per_step": run.cpu_per_step(), "cpu_total_s": run.cpu_total_s,
            "configured_s": since(run.first("configured")), "collected_s": since(run.first("collected")),
            "ready_s": since(run.first("ready"))}
    if run.exit != 0:
        info["tail"] = run.tail
    return info


def one_and_many(workers: int, extra: tuple[str, ...], one_select: str | None,
                 timeouts_s: tuple[float, float]) -> tuple[SuiteRun, SuiteRun, float]:
    """The suite at -n 1 (the tasks `one_select` picks) and at -n `workers` (all of them), against the model
    stand-in; and the load average before them."""
    stub = OpenAIStub([call("computer", {"action": "wait", "seconds": 0})], delay_s=1.0).start()
    load_before = loadavg()
    try:
        with tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp:
            one = run_suite(1, stub.base_url, Path(tmp), one_select, timeout_s=timeouts_s[0], extra=tuple(extra))
            many = run_suite(workers, stub.base_url, Path(tmp), None, timeout_s=timeouts_s[1], extra=tuple(extra))
    finally:
        stub.stop()
    return one, many, load_before


def measure(workers: int = 8, extra: tuple[str, ...] = ()) -> list[Figure]:
    """`extra`: more pytest arguments for both runs (an experiment, e.g. `-p no:allure_pytest`)."""
    one, many, load_before = one_and_many(workers, extra, ONE_WORKER_TASKS, (120, 210))
    rate_one, _ = one.steady_rate()
    rate_many, _ = many.steady_rate()
    ratio = round(rate_many / rate_one, 2) if rate_one and rate_many else None
    start, end = many.window()
    measured = [s for s in many.samples if s.pss_kb is not None]
    steady = [s.pss_kb for s in measured if start <= s.t <= end] or [s.pss_kb for s in measured]
    processes = max((len(s.cpu) for s in many.samples), default=0)
    return [
        Figure("scaling_8_over_1", ratio, 6.0, "x", ">=", {
            "n1": _summary(one), f"n{workers}": _summary(many), "model_delay_s": 1.0,
            "load_before": load_before, "load_after": loadavg()}),
        Figure("parallel_start_8_s", round(many.all_ready - many.launched, 2) if many.all_ready else None, 12.0, "s",
               "<=", {"one_worker_s": round(max(one.first("ready").values()) - one.launched, 2)
                      if one.first("ready") else None, "cpu_s_until_ready": many.cpu_until_ready(),
                      "cpu_s_until_ready_n1": one.cpu_until_ready()}),
        Figure("worker_pss_gb", round(max(steady) / workers / 1024 ** 2, 3) if steady else None, 0.6, "GB", "<=", {
            "median_gb": round(median(steady) / workers / 1024 ** 2, 3) if steady else None,
            "processes": processes, "samples": len(steady)}),
    ]


def options(parser) -> None:
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--extra", action="append", default=[], metavar="ARG",
                        help="a pytest argument for both runs, as an experiment (repeatable)")


def main() -> None:
    cli(__doc__, measure, options)


if __name__ == "__main__":
    main()
