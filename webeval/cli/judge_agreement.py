"""`webeval judge-agreement RUN... [--labels FILE]`: score each run's judge verdicts against the truth.

Without --labels, a run's own labels.jsonl is the truth (what `webeval calibrate` writes: the offline verifiers'
verdicts on the same evidence). Each run is scored on its own, so two judges of one evidence set read side by side.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from webeval.cli import CommandError
from webeval.judges.agreement import LABELS, Agreement, LabelsError, agreement, read_labels
from webeval.outcomes.rundir import POPULATION, RunDir


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("judge-agreement", help="score a run's judge verdicts against the truth")
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN")
    parser.add_argument("--labels", type=Path, default=None, metavar="FILE",
                        help=f"the truth: task_id, attempt, success per line (default each run's {LABELS})")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the figures as JSON")
    parser.set_defaults(func=run)


def verdicts(run_dir: RunDir) -> tuple[dict[tuple[str, int], bool], Counter]:
    """The latest valid verdict of each (task, attempt), a re-judge superseding what it replaces; what judges were
    used, and how many attempts were masked."""
    found: dict[tuple[str, int], bool] = {}
    judges: Counter = Counter()
    for record in run_dir.records():
        if record.outcome.valid:
            found[(record.task_id, record.attempt)] = record.outcome.value == "passed"
    for record in run_dir.records():
        if record.outcome.valid and record.verdict:
            judges[(record.verdict.get("protocol") or record.verdict.get("judge") or "?",
                    record.verdict.get("model") or "-")] += 1
    return found, judges


def score(path: Path, labels_file: Path | None) -> Agreement:
    run_dir = RunDir(path)
    if not (path / POPULATION).is_file():
        raise CommandError(f"{path} is not a run directory (no {POPULATION})")
    source = labels_file or path / LABELS
    if labels_file is None and not source.is_file():
        raise CommandError(f"{path} has no {LABELS}: pass --labels FILE (task_id, attempt, success per line)")
    try:
        labels = read_labels(source)
    except LabelsError as exc:
        raise CommandError(str(exc)) from None
    found, judges = verdicts(run_dir)
    result = agreement(found, labels)
    print(f"{path}: judged by " + (", ".join(f"{p} ({m}) x{n}" for (p, m), n in judges.most_common()) or "nothing")
          + f"; truth from {source}")
    return result


def run(args: argparse.Namespace) -> int:
    results = {}
    for path in args.runs:
        result = score(path, args.labels)
        results[str(path)] = result.as_json()
        for line in result.lines():
            print("  " + line)
        for line in result.disagreements[:20]:
            print("  disagrees: " + line)
        if len(result.disagreements) > 20:
            print(f"  ... and {len(result.disagreements) - 20} more disagreements")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0 if all(r["n"] for r in results.values()) else 1
