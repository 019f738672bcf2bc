"""`webeval import online-mind2web`: result folders in both of Online-Mind2Web's schemas (v1: parallel lists and a
`trajectory/` folder; v2: self-contained steps), written here from the documented layout with real screenshots of the
original WebVoyager agent; read as Online-Mind2Web's own loader reads them, judged end to end by `webeval reverify`."""

from __future__ import annotations

import base64
import json
import shutil
from datetime import date
from pathlib import Path

from fixtures.openai_stub import OpenAIStub, text
from tests.test_judge_protocols import webjudge_judge, webjudge_script
from tests.webvoyager_data import ORIGINAL, need_data, records
from webeval.cli import main
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.rundir import RunDir
from webeval.benchmarks.webvoyager.tasks import load_file

SHOTS = ORIGINAL / "results-examples" / "taskGitHub--0"  # five real screenshots: screenshot1.png ... screenshot5.png
V1_ID, V2_ID = "fb7b4f784cfde003e2548fdf4e8d6b4f", "1b867afecf072cb877ebfa4069263746"
TASK = "Find the most starred JavaScript project created after 2023-12-29 on GitHub."

pytestmark = need_data


def shot(n: int) -> Path:
    return SHOTS / f"screenshot{n}.png"


def write_v1(folder: Path, names: list[str] | None = None) -> Path:
    """v1: task, action_history, thoughts, final_result_response; screenshots ordered by the number in the name."""
    names = names or ["0_full_screenshot.png", "1_full_screenshot.png", "2_full_screenshot.png",
                      "10_full_screenshot.png"]  # 10 sorts after 2 by number, before it by name
    (folder / "trajectory").mkdir(parents=True)
    for n, name in enumerate(names, start=1):
        shutil.copy(shot(n), folder / "trajectory" / name)
    (folder / "result.json").write_text(json.dumps({
        "task_id": folder.name, "task": TASK,
        "action_history": ["<https://github.com> -> NAVIGATE", "<input[name='q']> -> TYPE 'javascript'",
                           "<button> Sort: Most stars -> CLICK", "TASK_COMPLETE -> ANSWER: resource-watch"],
        "thoughts": ["Open GitHub.", "Search for JavaScript projects."],
        "final_result_response": "The most starred one is resource-watch/resource-watch (63 stars)."}))
    return folder


def write_v2(folder: Path, inline: bool = False) -> Path:
    """v2: `schema_version`, `agent_final_answer`, and steps naming their own screenshot, URL and thought."""
    (folder / "trajectory").mkdir(parents=True)
    urls = ["https://github.com/", "https://github.com/search?q=javascript", "https://github.com/search?q=js&s=stars"]
    steps = []
    for i, url in enumerate(urls):
        name = f"{i:04d}.png"
        shutil.copy(shot(i + 1), folder / "trajectory" / name)
        steps.append({"step": i, "screenshot": name, "url": url, "action": f"CLICK coords({i}, 10) -> step {i} | SUCCESS",
                      "action_status": "SUCCESS", "thought": f"thought {i}" if i != 1 else None})
    steps[-1]["action"] = "TASK_COMPLETE -> ANSWER: resource-watch/resource-watch"
    if inline:
        steps[0]["screenshot"] = "data:image/png;base64," + base64.b64encode(shot(5).read_bytes()).decode()
    (folder / "result.json").write_text(json.dumps({
        "schema_version": "online-mind2web-v2", "task": TASK, "task_id": folder.name, "reference_length": 7,
        "agent_final_answer": "resource-watch/resource-watch", "action_history": steps}))
    return folder


def upstream_loading(folder: Path) -> dict:
    """What Online-Mind2Web's src/run.py takes from a task folder, step by step as it does (v1 and v2)."""
    import os
    import re

    result = json.loads((folder / "result.json").read_text())
    if result.get("schema_version") == "online-mind2web-v2":
        steps = result["action_history"]
        return {"task": result["task"], "actions": [s["action"] for s in steps[:-1]],
                "thoughts": [s.get("thought") for s in steps], "answer": result.get("agent_final_answer"),
                "screenshots": [folder / "trajectory" / s["screenshot"] for s in steps]}
    images = sorted(os.listdir(folder / "trajectory"), key=lambda x: int(re.findall(r"\d+", x)[0]))
    return {"task": result["task"], "actions": result["action_history"], "thoughts": result["thoughts"],
            "answer": result["final_result_response"], "screenshots": [folder / "trajectory" / i for i in images]}


def import_from(source: Path, out: Path) -> int:
    return main(["import", "online-mind2web", str(source), "--out", str(out)])


def test_both_schemas_import_as_upstream_reads_them(tmp_path, capsys):
    source = tmp_path / "results"
    v1, v2 = write_v1(source / V1_ID), write_v2(source / V2_ID)
    run = tmp_path / "run"
    assert import_from(source, run) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"webeval import online-mind2web: imported 2 of 2 folders into {run}, skipped 0"
    for folder in (v1, v2):
        upstream = upstream_loading(folder)
        evidence = Evidence.load(run / "tasks" / folder.name / "attempt-1")
        assert evidence.goal == upstream["task"] and evidence.answer == upstream["answer"]
        shots = [p.read_bytes() for p in evidence.screenshot_paths()]
        assert shots == [p.read_bytes() for p in upstream["screenshots"]]  # the same images, in the same order
        judged = [a["text"] for a in evidence.actions if a["tool"] != "terminate"]
        assert judged == [a for a in upstream["actions"] if not a.startswith("TASK_COMPLETE")]
    one = json.loads((run / "tasks" / V1_ID / "attempt-1/evidence.json").read_text())
    assert one["screenshots"][-1] == "10_full_screenshot.png" and one["urls"] == []
    assert set(one["lacks"]) == {"urls", "start_url", "titles"}
    assert [a.get("thought") for a in one["actions"]] == ["Open GitHub.", "Search for JavaScript projects.", None, None]
    two = json.loads((run / "tasks" / V2_ID / "attempt-1/evidence.json").read_text())
    assert two["urls"][1] == "https://github.com/search?q=javascript" and two["lacks"] == ["titles"]
    assert two["imported"]["details"] == {"schema": "online-mind2web-v2", "reference_length": 7}
    rows = load_file(run / "imported-online-mind2web.jsonl", date.today())[1]
    assert {t.id: (t.site, t.start_url) for t in rows}[V2_ID] == ("github.com", "https://github.com/")


async def test_the_webjudge_protocol_reads_the_source_action_history(tmp_path):
    source = tmp_path / "results"
    write_v2(source / V2_ID)
    assert import_from(source, tmp_path / "run") == 0
    run = RunDir(tmp_path / "run")
    _, tasks = load_file(tmp_path / "run" / "imported-online-mind2web.jsonl", date.today())
    evidence = Evidence.load(run.path / "tasks" / V2_ID / "attempt-1")
    with OpenAIStub(webjudge_script('Status: "success"'), models=("judge-model",)) as stub:
        judge = webjudge_judge(stub, tmp_path / "prompts")
        verdict = await judge.judge(tasks[0], evidence)
        await judge.close()
    outcome = stub.requests[-1]["messages"][1]["content"][0]["text"]
    # upstream's action history: every step's action but the final one, as the source wrote it
    assert "Actions:\n1. CLICK coords(0, 10) -> step 0 | SUCCESS (on https://github.com/)\n" \
           "2. CLICK coords(1, 10) -> step 1 | SUCCESS (on https://github.com/search?q=javascript)" in outcome
    assert "TASK_COMPLETE" not in outcome and verdict.success


def test_reverify_judges_an_imported_online_mind2web_run(tmp_path, capsys):
    source = tmp_path / "results"
    write_v1(source / V1_ID)
    write_v2(source / V2_ID)
    run = tmp_path / "run"
    assert import_from(source, run) == 0
    assert json.loads((run / "webvoyager.json").read_text())["judge"]["protocol"] == "webjudge"
    with OpenAIStub([text(json.dumps({"reasoning": "shown", "verdict": "SUCCESS"}))], models=("judge-model",)) as stub:
        status = main(["reverify", str(run), "--judge-base-url", stub.base_url, "--judge-model", "judge-model",
                       "--judge-protocol", "webeval"])
    assert status == 0, capsys.readouterr().out
    trail = {r["messages"][1]["content"][-1]["text"] for r in stub.requests}
    assert any("1. <https://github.com> -> NAVIGATE" in t and "TASK_COMPLETE" not in t for t in trail)
    assert {r["outcome"] for r in records(run) if r["extra"].get("rejudge")} == {"passed"}
    assert json.loads((run / "summary.json").read_text())["passed"] == 2


def test_an_inline_screenshot_is_written_out_and_kept_in_order(tmp_path):
    source = tmp_path / "results"
    write_v2(source / V2_ID, inline=True)
    assert import_from(source, tmp_path / "run") == 0
    evidence = Evidence.load(tmp_path / "run" / "tasks" / V2_ID / "attempt-1")
    assert evidence.screenshots[0] == "inline-0000.png"
    assert evidence.screenshot_paths()[0].read_bytes() == shot(5).read_bytes()


def test_broken_folders_are_listed_with_their_reason_and_the_rest_imported(tmp_path, capsys):
    source = tmp_path / "results"
    write_v1(source / V1_ID)
    write_v2(source / "no-result")
    (source / "no-result" / "result.json").unlink()
    write_v2(source / "malformed")
    (source / "malformed" / "result.json").write_text('{"task": "x", "action_history": [')
    write_v1(source / "no-screenshots")
    shutil.rmtree(source / "no-screenshots" / "trajectory")
    write_v1(source / "empty-trajectory")
    for path in (source / "empty-trajectory" / "trajectory").iterdir():
        path.unlink()
    write_v2(source / "escapes")
    result = json.loads((source / "escapes" / "result.json").read_text())
    result["action_history"][1]["screenshot"] = "../../secret.png"
    (source / "escapes" / "result.json").write_text(json.dumps(result))
    (tmp_path / "secret.png").write_bytes(shot(1).read_bytes())
    write_v2(source / "bad$name")
    assert import_from(source, tmp_path / "run") == 0
    out = capsys.readouterr().out.splitlines()
    assert "  skipped no-result: no result.json" in out
    assert "  skipped malformed: result.json: invalid JSON (line 1, column 34)" in out
    assert "  skipped no-screenshots: no trajectory/ folder" in out
    assert "  skipped empty-trajectory: no screenshots in trajectory/" in out
    assert "  skipped escapes: result.json: step 1's screenshot '../../secret.png' is not a file of trajectory/" in out
    assert any(line.startswith("  skipped bad$name: the folder's name is not a task id") for line in out)
    assert out[-1] == f"webeval import online-mind2web: imported 1 of 7 folders into {tmp_path / 'run'}, skipped 6"
    assert RunDir(tmp_path / "run").population().ids == (V1_ID,)
