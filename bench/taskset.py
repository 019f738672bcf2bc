"""taskset_index_300k_s, taskset_peak_rss_mb: indexing a generated 300,000-task file, and the memory it takes.

The file (about 60 MB of JSONL, written into a temporary folder by the bench, never kept) is indexed in a process of
its own, so that its peak resident set is the indexing's alone (generating the file is not in it). A second process
opens the index again and reads from it: the reopening time, 1,000 tasks by id, a curriculum batch of 256. The same
file gzipped is indexed too (a detail: gzip costs its inflating).

    .venv/bin/python -m bench.taskset [--json] [--tasks N]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Figure, cli
from fixtures.task_sets import write_tasks


def _child(source: str, mode: str, count: int) -> None:
    """In the measured process: open (or build) the index, and in `read` mode read from it."""
    if mode == "write":
        write_tasks(Path(source), count, compress=source.endswith(".gz"))
        print("{}")
        return
    from webeval.tasks.curriculum import Band, Curriculum
    from webeval.tasks.taskset import TaskSet

    began = time.monotonic()
    tasks = TaskSet.open(source)
    figures = {"open_s": time.monotonic() - began, "built": tasks.built, "tasks": len(tasks)}
    if mode == "read":
        wanted = [tasks.ids[k] for k in range(0, len(tasks), max(1, len(tasks) // 1000))][:1000]
        began = time.monotonic()
        tasks.get_many(wanted)
        figures["get_many_1000_s"] = time.monotonic() - began
        began = time.monotonic()
        curriculum = Curriculum(tasks, [Band(1, 2), Band(3, 4), Band(5)], max_site_share=0.05, seed=0)
        curriculum.batch(256)
        figures["curriculum_batch_256_s"] = time.monotonic() - began
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures))


def _measure_in_child(source: Path, mode: str, cache: Path, tasks: int = 0) -> dict:
    """A process of its own; the file is written by one too, as Linux carries a process's peak RSS across exec and
    this one must stay small."""
    done = subprocess.run([sys.executable, "-m", "bench.taskset", "--child", str(source), mode, str(tasks)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "WEBEVAL_CACHE": str(cache)})
    if done.returncode != 0:
        raise RuntimeError(f"bench.taskset child exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(tasks: int = 300_000) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="webeval-bench-taskset-") as tmp:
        folder = Path(tmp)
        plain, gzipped = folder / "tasks.jsonl", folder / "tasks.jsonl.gz"
        _measure_in_child(plain, "write", folder / "cache", tasks)
        _measure_in_child(gzipped, "write", folder / "cache", tasks)
        built = _measure_in_child(plain, "build", folder / "cache")
        read = _measure_in_child(plain, "read", folder / "cache")
        gz_built = _measure_in_child(gzipped, "build", folder / "cache")
        gz_read = _measure_in_child(gzipped, "read", folder / "cache")
        sizes = {"jsonl_mb": round(plain.stat().st_size / 1e6, 1), "gz_mb": round(gzipped.stat().st_size / 1e6, 1),
                 "index_mb": round(sum(p.stat().st_size for p in (folder / "cache").rglob("*.idx")) / 1e6, 1)}
    assert built["built"] and not read["built"] and built["tasks"] == tasks
    rounded = {key: round(value, 3) if isinstance(value, float) else value
               for key, value in {**{f"reopen_{k}": v for k, v in read.items()},
                                  **{f"gz_{k}": v for k, v in gz_built.items()},
                                  **{f"gz_reopen_{k}": v for k, v in gz_read.items()}}.items()}
    details = {"tasks": tasks, **sizes, **rounded}
    return [Figure("taskset_index_300k_s", round(built["open_s"], 2), 15.0, "s", "<=", details),
            Figure("taskset_peak_rss_mb", round(max(run["peak_rss_mb"] for run in (built, read, gz_built, gz_read)), 1),
                   200.0, "MB", "<=",
                   {"indexing_peak_rss_mb": round(built["peak_rss_mb"], 1),
                    "reading_peak_rss_mb": round(read["peak_rss_mb"], 1),
                    "gz_indexing_peak_rss_mb": round(gz_built["peak_rss_mb"], 1),
                    "gz_reading_peak_rss_mb": round(gz_read["peak_rss_mb"], 1)})]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        cli(__doc__, measure, lambda parser: parser.add_argument("--tasks", type=int, default=300_000))
