"""What every benchmark shares: figures with their goals, medians, the machine's load, and memory of process trees."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import psutil

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `python bench/x.py` and `python -m bench.x` alike import the repository
SCREEN = (1280, 720)


@dataclass
class Figure:
    name: str
    value: float | None
    goal: float
    unit: str
    better: str  # "<=" (lower is better) or ">="
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def met(self) -> bool:
        if self.value is None:
            return False
        return self.value <= self.goal if self.better == "<=" else self.value >= self.goal

    def result(self) -> dict[str, Any]:
        return {"value": self.value, "goal": self.goal, "unit": self.unit, "met": self.met,
                "goal_is": f"{self.better} {self.goal:g}", "details": self.details}


def report(figures: list[Figure], as_json: bool) -> None:
    """One JSON line per figure (for bench/run.py), or the figures readably."""
    for figure in figures:
        if as_json:
            print(json.dumps({"name": figure.name, **figure.result()}), flush=True)
        else:
            print(f"{figure.name}: {figure.value} {figure.unit} (goal {figure.better} {figure.goal:g}, "
                  f"{'met' if figure.met else 'MISSED'})")
            print(json.dumps(figure.details, indent=1))


def cli(doc: str, measure: Callable[..., list[Figure]], add: Callable[[argparse.ArgumentParser], None] | None = None
        ) -> None:
    """The command line of one benchmark module: its options, then its figures."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON line per figure")
    if add is not None:
        add(parser)
    args = vars(parser.parse_args())
    as_json = args.pop("json")
    report(measure(**args), as_json)


def median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def loadavg() -> float:
    return round(os.getloadavg()[0], 2)


def machine_busy_s() -> float:
    """The CPU-seconds every core of the machine has spent busy since boot: over a run on a quiet machine, what the
    run cost, its orphans (Chromium's helpers reparented away from the run) included."""
    times = psutil.cpu_times()
    return times.user + times.nice + times.system + times.irq + times.softirq


# -- processes: a run's whole tree (and whatever carries its marker), their memory and CPU ------------------------
def run_processes(root: int, marker: str | None = None) -> list[int]:
    """The descendants of `root`, and processes whose environment holds `marker` (NAME=value) however reparented.

    Chromium starts its helpers with a cleaned environment, so the tree is what finds them; a helper that left the
    tree (reparented to init) still carries the marker if it inherited the environment.
    """
    try:
        found = {child.pid for child in psutil.Process(root).children(recursive=True)}
    except psutil.Error:
        found = set()
    if marker:
        name, _, value = marker.partition("=")
        for process in psutil.process_iter():
            try:
                if process.environ().get(name) == value:
                    found.add(process.pid)
            except psutil.Error:  # gone, or not ours to read
                continue
    return sorted(found - {root})


def pss_kb(pid: int) -> int:
    try:
        return psutil.Process(pid).memory_full_info().pss // 1024
    except psutil.Error:
        return 0


def kind_of(pid: int) -> str:
    """What a process is: Chromium's --type (browser when none), else its program's name."""
    try:
        args = psutil.Process(pid).cmdline()
    except psutil.Error:
        return "gone"
    # Chromium rewrites its command line into one space-separated string: look for --type= anywhere in it.
    text = " ".join(args).strip()
    if not text:
        return "gone"
    for arg in text.split():
        if arg.startswith("--type="):
            return "chromium-" + arg.split("=", 1)[1]
    program = os.path.basename(text.split()[0])
    if "chrom" in program or "playwright_chromium" in text:
        return "chromium-browser"
    if program.startswith("python"):
        return "python"
    return program


def cpu_s(pid: int, children: bool = False) -> float:
    """CPU seconds of a process (with `children`: and of the children it has reaped, as a zygote's renderers)."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system + (times.children_user + times.children_system if children else 0.0)
