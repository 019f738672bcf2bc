"""`webeval export DIR --out FILE.jsonl`: one training line per trajectory, with rewards and masks."""

from __future__ import annotations

import json
from pathlib import Path

from webeval.cli import main
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.tasks import Population

ENDINGS = {"Shop--0": (Outcome.passed, None), "Shop--1": (Outcome.failed, FailureClass.wrong_answer),
           "Shop--2": (Outcome.judge_failed, None), "Shop--3": (Outcome.not_run, None)}


def finished_run(path: Path) -> RunDir:
    population = Population(name="shop", ids=tuple(ENDINGS) + ("Shop--4",), sha256="0" * 64,
                            sites={tid: "Shop" for tid in ENDINGS})
    run_dir = RunDir(path).create(population)
    for task_id, (outcome, failure) in ENDINGS.items():
        record = AttemptRecord(run_id=run_dir.run_id, task_id=task_id, site="Shop", outcome=outcome,
                               failure_class=failure, kind="timeout" if outcome is Outcome.judge_failed else None)
        if outcome is not Outcome.not_run:
            attempt, folder = run_dir.attempt_dir(task_id)
            (folder / "evidence.json").write_text(json.dumps({"task_id": task_id, "goal": f"Find {task_id}."}))
            steps = [{"step": 1, "screenshot": "step-001.png", "url": "http://shop/", "title": "Shop",
                      "actions": [{"tool": "computer", "action": "click", "x": 3, "y": 4}], "raw": "I click."},
                     {"step": 2, "screenshot": "step-002.png", "url": "http://shop/p", "title": "Product",
                      "actions": [{"tool": "terminate", "status": "success", "answer": "42"}], "raw": "Done: 42"}]
            (folder / "trajectory.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps) + '{"step": 3, "scr')
            record = record.model_copy(update={"attempt": attempt, "path": str(folder.relative_to(path)),
                                               "answer": "42"})
        run_dir.append(record)
    return run_dir


def test_export_writes_one_line_per_trajectory_with_reward_and_mask(tmp_path, capsys):
    finished_run(tmp_path / "run")
    assert main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "out.jsonl")]) == 0
    rows = {row["task_id"]: row for row in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert list(rows) == ["Shop--0", "Shop--1", "Shop--2", "Shop--3"]  # Shop--4 never ran: nothing to export
    assert [(r["reward"], r["mask"]) for r in rows.values()] == [(1.0, False), (0.0, False), (None, True),
                                                                  (None, True)]
    passed = rows["Shop--0"]
    assert passed["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "Find Shop--0."}]}
    assert passed["messages"][1]["content"][0] == {"type": "image",
                                                  "path": "tasks/Shop--0/attempt-1/step-001.png"}
    assert passed["messages"][2] == {"role": "assistant", "content": "I click."}
    assert len(passed["messages"]) == 5  # the torn third step is left out, the two before it kept
    assert passed["actions"][-1]["answer"] == "42" and rows["Shop--1"]["failure_class"] == "wrong_answer"
    assert rows["Shop--3"]["messages"] == [] and rows["Shop--2"]["outcome"] == "judge_failed"
    assert "4 trajectories (passed=1, failed=1, masked=2)" in capsys.readouterr().out


def test_export_refuses_what_is_not_a_run_and_writes_nothing(tmp_path, capsys):
    assert main(["export", str(tmp_path), "--out", str(tmp_path / "out.jsonl")]) == 2
    assert "is not a run directory (no population.json)" in capsys.readouterr().err
    finished_run(tmp_path / "run")
    assert main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "nowhere" / "out.jsonl")]) == 2
    assert "no folder" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "nowhere").exists()
