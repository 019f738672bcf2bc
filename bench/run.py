"""Run every benchmark of the harness's own cost, write bench/results.json and print a table: `make bench`.

Each module runs in its own process (one display and browser at a time, nothing shared between them); the figures
are ratios or times measured side by side within one module's run. The machine is shared: the load average before
each module is kept with its figures.

    .venv/bin/python bench/run.py [--only step,startup,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, loadavg  # noqa: E402

RESULTS = ROOT / "bench" / "results.json"
# module -> seconds it may take (the whole run must stay under 10 minutes on this machine, whole_run aside: it runs the
# whole local suite at -n 1, 6-8 minutes by itself)
MODULES = {"reconcile": 60, "taskset": 240, "rejudge": 120, "infra_latency": 120, "step": 150, "startup": 90,
           "scaling": 400, "whole_run": 1400, "whole_run_slots": 1400, "rollouts": 2400, "browsergym": 360,
           "service": 600, "storage": 900}
# Run only when named (`make soak` is `--only soak`): five whole runs of the suite at -n 8.
ON_REQUEST = {"soak": 3600}
ORDER = ["reconcile_100k_s", "taskset_index_300k_s", "taskset_peak_rss_mb", "rejudge_per_s", "infra_detect_s",
         "step_overhead_ratio", "settle_ms", "worker_start_s", "task_setup_s",
         "scaling_8_over_1", "parallel_start_8_s", "worker_pss_gb", "whole_run_8_over_1", "tail_idle_fraction",
         "whole_run_slots_8_over_1", "rollouts_async_over_sync", "rollouts_async_over_sequential",
         "rollout_slot_idle_fraction", "rollout_pss_gb_per_slot",
         "miniwob_step_vs_browsergym", "miniwob_reset_vs_browsergym", "service_over_inprocess",
         "service_seed_burst_errors", "service_health_p99_ms", "stored_per_step_over_screenshot"]


def run_module(name: str, timeout_s: float) -> tuple[list[dict], str]:
    load = loadavg()
    began = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", f"bench.{name}", "--json"], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout_s, env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return [], f"bench.{name} took longer than {timeout_s:.0f} s"
    figures = []
    for line in done.stdout.splitlines():
        if line.startswith("bench: "):  # what a module says of itself (a peer it could not run)
            print(line, flush=True)
        if line.startswith("{"):
            figure = json.loads(line)
            figure["details"] = {**figure.get("details", {}), "load_before": load,
                                 "module_s": round(time.monotonic() - began, 1)}
            figures.append(figure)
    error = "" if done.returncode == 0 else f"bench.{name} exited {done.returncode}: {done.stderr.strip()[-800:]}"
    return figures, error


def table(results: dict[str, dict]) -> str:
    rows = [("figure", "value", "goal", "met", "load")]
    for name in ORDER + sorted(set(results) - set(ORDER)):
        figure = results.get(name)
        if figure is None:
            continue
        value = "-" if figure["value"] is None else f"{figure['value']:g} {figure['unit']}"
        rows.append((name, value, f"{figure['goal_is']} {figure['unit']}", "yes" if figure["met"] else "NO",
                     f"{figure['details'].get('load_before', '')}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated modules: " + ", ".join([*MODULES, *ON_REQUEST]))
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else list(MODULES)
    unknown = [m for m in chosen if m not in MODULES and m not in ON_REQUEST]
    if unknown:
        parser.error(f"unknown module(s): {', '.join(unknown)}")
    began = time.monotonic()
    results: dict[str, dict] = json.loads(RESULTS.read_text()) if args.only and RESULTS.exists() else {}
    errors = []
    for name in chosen:
        print(f"bench: {name} (load {loadavg()}) ...", flush=True)
        figures, error = run_module(name, {**MODULES, **ON_REQUEST}[name])
        results.update({f.pop("name"): f for f in figures})
        if error:
            errors.append(error)
            print(f"bench: {error}", file=sys.stderr, flush=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print(table(results))
    print(f"\n{sum(f['met'] for f in results.values())} of {len(results)} goals met in "
          f"{time.monotonic() - began:.0f} s; details in {RESULTS.relative_to(ROOT)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
