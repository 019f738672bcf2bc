"""`webeval calibrate ORACLE_RUN --tasks DIR --out SET`: a labelled evidence set for measuring judges.

ORACLE_RUN is a run of the offline suite's oracle; every task it passed gives three successes and three realistic
failures (see webeval.judges.calibration), each labelled by the task's own verifier in SET/labels.jsonl. SET is a
run directory that any judge can judge with `webeval reverify SET --judge-...`; `webeval judge-agreement SET` then
scores that judge against the labels.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from datetime import date
from pathlib import Path

from webeval.benchmarks.webvoyager.settings import RUN_CONFIG
from webeval.benchmarks.webvoyager.tasks import load_file
from webeval.cli import CommandError
from webeval.judges.agreement import LABELS
from webeval.judges.calibration import Variant, variants, write_attempt
from webeval.outcomes.evidence import Evidence, EvidenceError
from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.tasks import Task, TaskFileError, read_jsonl

TODAY = date(2026, 1, 1)  # the set's tasks have no dates to render; a fixed day keeps its population stable


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("calibrate", help="build a labelled evidence set from an oracle run")
    parser.add_argument("oracle_run", type=Path, metavar="ORACLE_RUN")
    parser.add_argument("--tasks", type=Path, required=True, metavar="DIR",
                        help="the task files (*.jsonl, with verifiers) the oracle ran")
    parser.add_argument("--out", type=Path, required=True, metavar="SET", help="a new run directory for the set")
    parser.set_defaults(func=run)


def read_tasks(folder: Path) -> list[Task]:
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder]
    try:
        return [task for path in files for task in read_jsonl(path)]
    except TaskFileError as exc:
        raise CommandError(str(exc)) from None


def oracle_evidence(run_dir: Path, tasks: list[Task]) -> dict[str, Evidence]:
    if not (run_dir / POPULATION).is_file():
        raise CommandError(f"{run_dir} is not a run directory (no {POPULATION})")
    oracle = RunDir(run_dir)
    final, _ = final_records(oracle.population(), oracle.records())
    found = {}
    for task in tasks:
        record = final.get(task.id)
        if record is None or record.outcome is not Outcome.passed or not record.path:
            continue
        try:
            found[task.id] = Evidence.load(run_dir / record.path)
        except EvidenceError as exc:
            raise CommandError(str(exc)) from None
    return found


def all_variants(tasks: list[Task], evidence: dict[str, Evidence]) -> list[Variant]:
    made: list[Variant] = []
    passed = [task for task in tasks if task.id in evidence]
    for index, task in enumerate(passed):
        # another task's answer on the same site: a wrong value that looks right
        others = [evidence[t.id].answer for t in passed[index + 1:] + passed[:index]
                  if t.site == task.site and evidence[t.id].answer not in (None, evidence[task.id].answer)]
        made += variants(task, evidence[task.id], others[0] if others else "I could not find it")
    return made


def write_set(out: Path, made: list[Variant]) -> None:
    rows = [{"web_name": v.task.site, "id": f"{v.task.id}.{v.name}", "ques": v.task.goal, "web": v.task.start_url}
            for v in made]
    tasks_file = out / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    population, _ = load_file(tasks_file, TODAY)
    run_dir = RunDir(out).create(population)
    (out / RUN_CONFIG).write_text(json.dumps({
        "population": None, "tasks_file": str(tasks_file.resolve()), "data_dir": None, "today": TODAY.isoformat(),
        "judge": {"kinds": ["model"]}}, indent=2), encoding="utf-8")
    labels = []
    for variant, row in zip(made, rows):
        attempt, folder = run_dir.attempt_dir(row["id"])
        write_attempt(variant.evidence, folder, row["id"])
        run_dir.append(AttemptRecord(
            run_id=run_dir.run_id, task_id=row["id"], site=variant.task.site, attempt=attempt,
            outcome=Outcome.judge_failed, kind="config", reason="not judged yet: judge it with `webeval reverify`",
            answer=variant.evidence.answer, path=str(folder.relative_to(out))))
        labels.append({"task_id": row["id"], "attempt": attempt, "success": variant.success,
                       "variant": variant.name, "verifier": variant.reason})
    (out / LABELS).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in labels),
                              encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    if args.out.exists() and any(args.out.iterdir()):
        raise CommandError(f"--out {args.out}: not empty; the set goes into a new folder")
    tasks = read_tasks(args.tasks)
    evidence = oracle_evidence(args.oracle_run, tasks)
    if not evidence:
        raise CommandError(f"{args.oracle_run}: the oracle passed none of the tasks in {args.tasks}")
    made = all_variants(tasks, evidence)
    args.out.mkdir(parents=True, exist_ok=True)
    write_set(args.out, made)
    truth = Counter(v.success for v in made)
    print(f"{args.out}: {len(made)} labelled attempts from {len(evidence)} oracle attempts "
          f"({truth[True]} successes, {truth[False]} failures; {len(tasks) - len(evidence)} tasks not passed by "
          "the oracle were left out)")
    return 0
