"""`webeval import webvoyager`: the original agent's result folders (the 15 real ones) as a run directory, judged by
`webeval reverify` through the scripted endpoint; and the fidelity check: the pinned upstream `auto_eval.py`, run on
the same folders against the same endpoint, sends the same requests as the `webvoyager` protocol on the import."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import openai

from fixtures.openai_stub import OpenAIStub, Reply, text
from tests.webvoyager_data import ORIGINAL, need_data, records
from webeval.cli import main
from webeval.outcomes.rundir import RunDir

EXAMPLES = ORIGINAL / "results-examples"
UPSTREAM = ORIGINAL / "evaluation"
FAILING = ("Xbox", "Dijon")  # the scripted judge fails the trajectories whose request mentions these

pytestmark = need_data


def verdict_for(request: dict) -> Reply:
    said = json.dumps(request["messages"][1]["content"][0])
    return text("The screenshots contradict the answer.\n\nNOT SUCCESS" if any(w in said for w in FAILING)
                else "The last screenshot shows what the answer says.\n\nSUCCESS")


def upstream_auto_eval():
    """The pinned upstream file as a module of its own (it is run, never copied)."""
    spec = importlib.util.spec_from_file_location("webvoyager_auto_eval", UPSTREAM / "auto_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_examples(out: Path, *extra: str, source: Path = EXAMPLES) -> int:
    return main(["import", "webvoyager", str(source), "--out", str(out), *extra])


def reverify(run: Path, stub: OpenAIStub, *extra: str) -> int:
    return main(["reverify", str(run), "--judge-base-url", stub.base_url, "--judge-model", "judge-model",
                 "--judge-prompts", str(UPSTREAM), "--judge-retries", "0", *extra])


def first_text(request: dict) -> str:
    return request["messages"][1]["content"][0]["text"]


def test_the_webvoyager_protocol_sends_what_the_original_auto_eval_sends(tmp_path):
    """For every real folder: the request the original evaluation makes (its own code, its client pointed at the
    scripted endpoint, 15 screenshots as run_eval.sh) equals the request webeval's re-judge of the import makes."""
    auto_eval = upstream_auto_eval()
    folders = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())
    with OpenAIStub(verdict_for, models=("judge-model",)) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="EMPTY", max_retries=0)
        original, decided = {}, {}
        for folder in folders:
            before = len(stub.requests)
            decided[folder.name] = auto_eval.auto_eval_by_gpt4v(str(folder), client, "judge-model", 15)
            assert len(stub.requests) == before + 1, f"{folder.name}: the original made no call"
            original[folder.name] = stub.requests[-1]
        client.close()
        assert import_examples(tmp_path / "run") == 0
        stub.requests.clear()
        status = reverify(tmp_path / "run", stub)
    ours = {first_text(request): request for request in stub.requests}
    assert len(ours) == len(folders) == 15
    for name, request in original.items():
        assert ours.get(first_text(request)) == request, f"{name}: the requests differ"
    # the images, their order and count are the original's: the last 15 boxed screenshots, never the _no_box ones
    booking = original["taskBooking--1"]["messages"][1]["content"]
    assert sum(part["type"] == "image_url" for part in booking) == min(15, len(list(
        (EXAMPLES / "taskBooking--1").glob("screenshot*[0-9].png"))))
    # and the outcomes are the original's readings of the same replies
    final = {r["task_id"]: r["outcome"] for r in records(tmp_path / "run") if r.get("extra", {}).get("rejudge")}
    assert final == {name.removeprefix("task"): "passed" if decided[name] == 1 else "failed" for name in decided}
    assert sorted(t for t, o in final.items() if o == "failed") == ["Allrecipes--4", "Amazon--0"]
    assert status == 0  # complete: 13 passed, 2 failed, nothing masked


def variant(root: Path, name: str, source: str, last: str | None = None, screenshots: int | None = None) -> Path:
    """A result folder made from a real one: its last turn replaced, or its screenshots repeated to `screenshots`
    (numbered 1..N, so that 10 sorts after 9 by number and before 2 by name)."""
    folder = root / f"task{name}"
    shutil.copytree(EXAMPLES / f"task{source}", folder)
    if last is not None:
        messages = json.loads((folder / "interact_messages.json").read_text())
        messages[-1]["content"] = last
        (folder / "interact_messages.json").write_text(json.dumps(messages))
    if screenshots:
        real = sorted((p for p in folder.glob("screenshot*.png") if "_no_box" not in p.name),
                      key=lambda p: int(p.stem.removeprefix("screenshot")))
        for n in range(len(real) + 1, screenshots + 1):
            shutil.copy(real[(n - 1) % len(real)], folder / f"screenshot{n}.png")
    return folder


def test_the_originals_quirks_are_kept_where_they_decide_what_the_judge_reads(tmp_path):
    """Folders made from real ones for what the 15 do not show: an answer with a "]" in it (the original cuts it
    there), the word ANSWER in the thought before the action (the original reads from the first one), no answer
    (no call at all), and 20 screenshots (the last 15 by number)."""
    root = tmp_path / "results"
    variant(root, "GitHub--1", "GitHub--0", last="Thought: Found it.\n\nAction: ANSWER; resource-watch [63 stars] wins")
    variant(root, "GitHub--2", "GitHub--0", last="Thought: I can ANSWER now.\n\nAction: ANSWER; 63 stars")
    variant(root, "GitHub--3", "GitHub--0", last="Thought: Keep looking.\n\nAction: Scroll [WINDOW]; down")
    variant(root, "Booking--2", "Booking--1", screenshots=20)
    auto_eval = upstream_auto_eval()
    with OpenAIStub(verdict_for, models=("judge-model",)) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="EMPTY", max_retries=0)
        original, decided = {}, {}
        for folder in sorted(root.iterdir()):
            before = len(stub.requests)
            decided[folder.name] = auto_eval.auto_eval_by_gpt4v(str(folder), client, "judge-model", 15)
            original[folder.name] = stub.requests[-1] if len(stub.requests) > before else None
        client.close()
        assert import_examples(tmp_path / "run", source=root) == 0
        stub.requests.clear()
        reverify(tmp_path / "run", stub)
    ours = {first_text(request): request for request in stub.requests}
    assert original["taskGitHub--3"] is None and decided["taskGitHub--3"] == 0 and len(ours) == 3
    for name, request in original.items():
        assert request is None or ours.get(first_text(request)) == request, f"{name}: the requests differ"
    assert "Result Response: resource-watch [63 stars" in first_text(original["taskGitHub--1"])
    images = [p for p in original["taskBooking--2"]["messages"][1]["content"] if p["type"] == "image_url"]
    assert len(images) == 15
    final = {r["task_id"]: r for r in records(tmp_path / "run") if r.get("extra", {}).get("rejudge")}
    assert final["GitHub--3"]["outcome"] == "failed" and final["GitHub--3"]["failure_class"] == "no_answer"


def test_an_imported_run_is_unjudged_never_failed_until_reverify_judges_it(tmp_path, capsys):
    assert import_examples(tmp_path / "run") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"webeval import webvoyager: imported 15 of 15 folders into {tmp_path / 'run'}, skipped 0"
    run = tmp_path / "run"
    rows = records(run)
    assert len(rows) == 15 and {(r["outcome"], r["kind"]) for r in rows} == {("judge_failed", "unjudged")}
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["masked"]) == (0, 0, {"judge_failed[unjudged]": 15})
    evidence = json.loads((run / "tasks/Amazon--0/attempt-1/evidence.json").read_text())
    assert evidence["goal"] == "Search an Xbox Wireless controller with green color and rated above 4 stars."
    assert evidence["answer"].startswith("The green Xbox Wireless controller")
    assert evidence["screenshots"] == ["screenshot1.png", "screenshot2.png", "screenshot3.png"]
    assert evidence["lacks"] == ["urls", "titles"] and evidence["urls"] == []
    assert [a["tool"] for a in evidence["actions"]] == ["imported", "imported", "terminate"]
    assert evidence["actions"][1]["text"] == "Click [33]" and evidence["actions"][1]["thought"].startswith("The task")
    for name in evidence["screenshots"]:
        assert (run / "tasks/Amazon--0/attempt-1" / name).read_bytes() == (EXAMPLES / "taskAmazon--0" / name).read_bytes()
    # the labels-free copies are kept beside them, never judged
    kept = json.loads((run / "tasks/Cambridge Dictionary--29/attempt-1/evidence.json").read_text())
    assert len(kept["imported"]["details"]["unmarked_screenshots"]) == 12
    assert not any("no_box" in name for name in kept["screenshots"])
    # the training export reads an imported run as any run
    assert main(["export", str(run), "--out", str(tmp_path / "train.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert len(lines) == 15 and all(line["mask"] and line["reward"] is None for line in lines)


def test_over_the_original_population_the_tasks_not_imported_are_missing_never_failed(tmp_path, capsys):
    run = tmp_path / "run"
    assert import_examples(run, "--population", "original", "--data-dir", str(ORIGINAL)) == 0
    moved = tmp_path / "elsewhere" / "run"  # a run directory travels: its configuration names no path of its own
    moved.parent.mkdir()
    shutil.move(run, moved)
    with OpenAIStub(verdict_for, models=("judge-model",)) as stub:
        assert reverify(moved, stub) == 1  # incomplete: 628 tasks of the population were never run
        assert len(stub.requests) == 15
        assert reverify(moved, stub) == 1
        assert len(stub.requests) == 15  # the verdict cache kept every verdict next to its evidence
    out = capsys.readouterr().out
    assert "re-judged 15 of 15 tasks" in out
    summary = json.loads((moved / "summary.json").read_text())
    assert (summary["n"], summary["passed"], summary["failed"], len(summary["missing"])) == (643, 13, 2, 628)
    assert summary["masked"] == {} and not summary["complete"]
    assert summary["population"] == "webvoyager-original"


def test_judge_agreement_scores_the_judge_of_an_imported_run(tmp_path, capsys):
    run = tmp_path / "run"
    assert import_examples(run) == 0
    with OpenAIStub(verdict_for, models=("judge-model",)) as stub:
        reverify(run, stub, "--judge-protocol", "webeval")
        assert all(r["messages"][0]["content"] != "" for r in stub.requests)
    truth = tmp_path / "human.jsonl"
    truth.write_text("".join(json.dumps({"task_id": task_id, "attempt": 1, "success": task_id != "Apple--17"}) + "\n"
                             for task_id in RunDir(run).population().ids))
    assert main(["judge-agreement", str(run), "--labels", str(truth)]) == 0
    out = capsys.readouterr().out
    assert "15 attempts judged and labelled" in out and "judged by webeval (judge-model) x15" in out


def test_broken_folders_are_listed_with_their_reason_and_the_rest_imported(tmp_path, capsys):
    source = tmp_path / "results"
    source.mkdir()
    for name in ("taskAmazon--0", "taskGitHub--0"):
        shutil.copytree(EXAMPLES / name, source / name)
    shutil.copytree(EXAMPLES / "taskApple--17", source / "taskApple--17")
    (source / "taskApple--17" / "interact_messages.json").unlink()
    shutil.copytree(EXAMPLES / "taskArXiv--11", source / "taskArXiv--11")
    (source / "taskArXiv--11" / "interact_messages.json").write_text('[{"role": "system", "content": "x"},')
    (source / "taskESPN--11").mkdir()
    shutil.copy(EXAMPLES / "taskESPN--11" / "interact_messages.json", source / "taskESPN--11")
    shutil.copytree(EXAMPLES / "taskCoursera--16", source / "notes")
    (source / "README.txt").write_text("not a folder: not a task")
    run = tmp_path / "run"
    assert import_examples(run, source=source) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  skipped taskApple--17: no interact_messages.json" in out
    assert "  skipped taskArXiv--11: interact_messages.json: invalid JSON (line 1, column 37)" in out
    assert "  skipped taskESPN--11: no screenshot<N>.png" in out
    assert "  skipped notes: not a WebVoyager result folder (named task<task id>)" in out
    assert out[-1] == f"webeval import webvoyager: imported 2 of 6 folders into {run}, skipped 4"
    assert RunDir(run).population().ids == ("Amazon--0", "GitHub--0")
    assert (source / "taskArXiv--11" / "screenshot1.png").is_file()  # nothing of the source was touched


def test_a_task_outside_the_population_is_skipped(tmp_path, capsys):
    source = tmp_path / "results"
    shutil.copytree(EXAMPLES / "taskAmazon--0", source / "taskAmazon--0")
    shutil.copytree(EXAMPLES / "taskAmazon--0", source / "taskAmazon--999")
    assert import_examples(tmp_path / "run", "--population", "original", "--data-dir", str(ORIGINAL),
                           source=source) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  skipped taskAmazon--999: task 'Amazon--999' is not in population webvoyager-original" in out
    assert out[-1].endswith("imported 1 of 2 folders into " f"{tmp_path / 'run'}, skipped 1")


def test_nothing_importable_writes_nothing_and_bad_usage_is_one_line(tmp_path, capsys):
    source = tmp_path / "results"
    (source / "taskX--1").mkdir(parents=True)
    assert import_examples(tmp_path / "run", source=source) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "webeval import webvoyager: imported 0 of 1 folders (nothing written), skipped 1"
    assert not (tmp_path / "run").exists()
    assert import_examples(tmp_path / "run", source=tmp_path / "nowhere") == 2
    assert capsys.readouterr().err.strip() == f"webeval import: error: {tmp_path / 'nowhere'} is not a directory"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert import_examples(tmp_path / "full") == 2
    assert "exists and is not an empty directory" in capsys.readouterr().err
    assert main(["import", "agentlab", str(source), "--out", str(tmp_path / "r"), "--population", "original"]) == 2
    assert "--population and --data-dir go with `webeval import webvoyager` only" in capsys.readouterr().err


def test_every_protocol_reads_an_import_and_the_rubric_one_says_why_it_cannot_judge_it(tmp_path, capsys):
    run = tmp_path / "run"
    assert import_examples(run) == 0
    with OpenAIStub(verdict_for, models=("judge-model",)) as stub:
        assert reverify(run, stub, "--judge-protocol", "rubric") == 1
        assert stub.requests == []  # an imported task has no fact groups: nothing to ask
    out = capsys.readouterr().out
    assert "Amazon--0: judge_failed -> judge_failed: judge_failed: task Amazon--0 has no rubric: the rubric " \
           "protocol judges rubric tasks only" in out
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["failed"], summary["masked"]) == (0, {"judge_failed[config]": 15})
