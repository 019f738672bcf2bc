"""rejudge_per_s: `webeval reverify DIR` over a finished run of WebVoyager's 643 tasks, with no browser.

The run directory is built as a WebVoyager run leaves it (population, webvoyager.json, evidence and ten 1280x720
screenshots per task, one record per task). The judge stand-in is the OpenAI stub answering each call after 0.2 s.
The figure is tasks re-judged per second of the whole command (start-up included), with its default concurrency;
the judge reads each task's last 3 screenshots.

    .venv/bin/python -m bench.rejudge [--json]
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
import time
from datetime import date
from pathlib import Path

from PIL import Image, ImageDraw

from bench.common import ROOT, SCREEN, Figure, cli
from fixtures.openai_stub import OpenAIStub, text
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.benchmarks.webvoyager.tasks import load_file

TASKS_FILE = ROOT.parent / "shared" / "data" / "webvoyager" / "WebVoyager_data.jsonl"
SHOTS_PER_TASK = 10


def screenshots(folder: Path, count: int) -> list[Path]:
    """Page-like pictures (text lines on white), so their PNGs weigh what real screenshots do."""
    rng = random.Random(7)
    paths = []
    for index in range(count):
        image = Image.new("RGB", SCREEN, "white")
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 0, SCREEN[0], 60), fill=(30, 60, 120))
        for row in range(80, SCREEN[1] - 20, 22):
            words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
                             for _ in range(rng.randint(5, 18)))
            draw.text((40 + 10 * (row % 3), row), words, fill=(20, 20, 20))
        path = folder / f"shot-{index}.png"
        image.save(path, format="PNG", compress_level=1)
        paths.append(path)
    return paths


def finished_run(root: Path, judge_url: str) -> RunDir:
    population, tasks = load_file(TASKS_FILE, date(2030, 1, 1))
    run_dir = RunDir(root / "run").create(population)
    (run_dir.path / "webvoyager.json").write_text(json.dumps({
        "population": None, "tasks_file": str(TASKS_FILE), "data_dir": None, "today": "2030-01-01",
        "judge": {"kinds": ["model"], "base_url": judge_url, "model": "judge-model", "api_key_env": None,
                  "profile": None}}))
    pool = screenshots(root, SHOTS_PER_TASK)
    lines = []
    for number, task in enumerate(tasks):
        attempt, folder = run_dir.attempt_dir(task.id)
        names = []
        for step, source in enumerate(pool, start=1):
            name = f"step-{step:03d}.png"
            os.link(source, folder / name)
            names.append(name)
        (folder / "evidence.json").write_text(json.dumps({
            "task_id": task.id, "goal": task.goal, "answer": f"answer {number}", "status": "success",
            "failure_class": None, "reason": "", "infra": None, "final_url": task.start_url,
            "urls": [task.start_url] * len(names), "actions": [], "screenshots": names, "state": None}))
        lines.append(AttemptRecord(run_id=run_dir.run_id, task_id=task.id, site=task.site, attempt=attempt,
                                   outcome=Outcome.judge_failed if number % 4 == 0 else Outcome.passed,
                                   answer=f"answer {number}", path=str(folder.relative_to(run_dir.path))
                                   ).model_dump_json() + "\n")
    (run_dir.path / "results.jsonl").write_text("".join(lines))
    return run_dir


def verdict(request) -> object:
    return text(json.dumps({"reasoning": "The last screenshot shows the answer.", "verdict": "SUCCESS"}))


def measure() -> list[Figure]:
    if not TASKS_FILE.is_file():
        return [Figure("rejudge_per_s", None, 10.0, "tasks/s", ">=", {"error": f"no task file at {TASKS_FILE}"})]
    with tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp, \
            OpenAIStub(verdict, models=("judge-model",), delay_s=0.2) as stub:
        run_dir = finished_run(Path(tmp), stub.base_url)
        began = time.monotonic()
        done = subprocess.run([str(ROOT / ".venv" / "bin" / "webeval"), "reverify", str(run_dir.path),
                               "--judge-screenshots", "3"], cwd=ROOT, capture_output=True, text=True, timeout=600)
        wall = time.monotonic() - began
        calls = len(stub.requests)
    first = next((line for line in done.stdout.splitlines() if line.startswith("re-judged")), "")
    judged = int(first.split()[1]) if first else 0
    details = {"judged": judged, "judge_calls": calls, "wall_s": round(wall, 2), "exit": done.returncode,
               "judge_delay_s": 0.2, "concurrency": 8, "ideal_per_s": 8 / 0.2}
    if not judged:
        details["output"] = (done.stdout + done.stderr)[-500:]
    return [Figure("rejudge_per_s", round(judged / wall, 1) if judged else None, 10.0, "tasks/s", ">=", details)]


if __name__ == "__main__":
    cli(__doc__, measure)
