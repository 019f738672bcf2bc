"""How far a judge's verdicts agree with the truth: the confusion table and the figures read from it.

The truth is a labels file, one JSON object a line: `{"task_id": ..., "attempt": 1, "success": true}`: the offline
verifiers' verdicts on the same evidence (what `webeval calibrate` writes), or human labels of a live benchmark.
A success is the positive class, so the false-positive rate is how often the judge passes what truly failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LABELS = "labels.jsonl"


class LabelsError(ValueError):
    """A labels file that cannot be read; the message names the file and line."""


def read_labels(path: Path) -> dict[tuple[str, int], bool]:
    labels: dict[tuple[str, int], bool] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LabelsError(f"{path}: cannot read the labels ({exc.strerror})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key = (str(row["task_id"]), int(row.get("attempt", 1)))
            success = row["success"]
        except (ValueError, KeyError, TypeError):
            raise LabelsError(f"{path}:{number}: expected {{\"task_id\": ..., \"attempt\": N, \"success\": "
                              "true|false}") from None
        if not isinstance(success, bool):
            raise LabelsError(f"{path}:{number}: success must be true or false, not {success!r}")
        labels[key] = success
    return labels


@dataclass
class Agreement:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    unjudged: int = 0  # labelled attempts the judge gave no verdict on (masked, or not in the runs)
    unlabelled: int = 0  # verdicts with no label
    disagreements: list[str] = field(default_factory=list)

    def add(self, key: tuple[str, int], judged: bool, truth: bool) -> None:
        if judged and truth:
            self.tp += 1
        elif judged:
            self.fp += 1
            self.disagreements.append(f"{key[0]} attempt {key[1]}: judged SUCCESS, truly failed")
        elif truth:
            self.fn += 1
            self.disagreements.append(f"{key[0]} attempt {key[1]}: judged NOT SUCCESS, truly succeeded")
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    def figures(self) -> dict[str, float | None]:
        n = self.n
        ratio = lambda a, b: a / b if b else None  # noqa: E731 (undefined when nothing is in the class)
        accuracy = ratio(self.tp + self.tn, n)
        # Cohen's kappa: agreement beyond what the two marginals would give by chance.
        chance = ratio((self.tp + self.fp) * (self.tp + self.fn) + (self.tn + self.fn) * (self.tn + self.fp), n * n)
        kappa = None
        if accuracy is not None and chance is not None:
            kappa = 1.0 if chance == 1 else (accuracy - chance) / (1 - chance)
        return {"accuracy": accuracy, "precision": ratio(self.tp, self.tp + self.fp),
                "recall": ratio(self.tp, self.tp + self.fn), "false_positive_rate": ratio(self.fp, self.fp + self.tn),
                "kappa": kappa}

    def as_json(self) -> dict[str, Any]:
        return {"n": self.n, "confusion": {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn},
                **self.figures(), "unjudged": self.unjudged, "unlabelled": self.unlabelled,
                "disagreements": self.disagreements}

    def lines(self) -> list[str]:
        shown = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        f = self.figures()
        return [f"{self.n} attempts judged and labelled ({self.unjudged} labelled but not judged, "
                f"{self.unlabelled} judged but not labelled)",
                "                 truth SUCCESS  truth NOT SUCCESS",
                f"judged SUCCESS     {self.tp:>10}  {self.fp:>17}",
                f"judged NOT SUCC.   {self.fn:>10}  {self.tn:>17}",
                f"accuracy {shown(f['accuracy'])}  precision {shown(f['precision'])}  recall {shown(f['recall'])}  "
                f"false-positive rate {shown(f['false_positive_rate'])}  Cohen's kappa {shown(f['kappa'])}"]


def agreement(verdicts: dict[tuple[str, int], bool], labels: dict[tuple[str, int], bool]) -> Agreement:
    result = Agreement()
    for key in sorted(labels):
        if key in verdicts:
            result.add(key, verdicts[key], labels[key])
        else:
            result.unjudged += 1
    result.unlabelled = sum(1 for key in verdicts if key not in labels)
    return result
