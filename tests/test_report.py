"""The report's pure parts: outcome prefixes and categories, placeholders to N, environment, history, pictures, and
`webeval report`'s one-line errors."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image

from webeval.cli import main
from webeval.cli.report import default_history
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.report.build import ReportError, _forget_run, find_allure, strip_analytics
from webeval.report.categories import CATEGORIES, allure_status, status_message
from webeval.outcomes.redact import redact
from webeval.report.run_environment import read_environment, write_environment
from webeval.report.identity import history_id, placeholder_file
from webeval.report.pictures import CLICKED, CROP, MARGIN, add_pictures, marked_crop
from webeval.report.replay import Frame, animate, draw_marks, has_points, load, replay_frame
from webeval.report.results import complete_results, detach_fixtures, write_placeholders
from webeval.report.steps import describe, step_title
from webeval.tasks import Population

POPULATION = Population(name="lab", ids=("Lab--0", "Lab--1", "Lab--2", "Lab--3"), sha256="a" * 64)


def category_of(status: str, message: str) -> str | None:
    """First match wins, as in Allure; fullmatch is Allure 2's rule, so the patterns must satisfy it too."""
    for category in CATEGORIES:
        if status in category["matchedStatuses"] and re.fullmatch(category["messageRegex"], message):
            return category["name"]
    return None


@pytest.mark.parametrize("outcome, kind, failure_class, reason, category", [
    (Outcome.infra_error, "browser", None, "infra[browser]: the browser died\nXFailed", "Infrastructure"),
    (Outcome.infra_error, "worker_crashed", None, "worker 'gw1' crashed while running", "Infrastructure"),
    (Outcome.judge_failed, None, None, "judge_failed: HTTP 500", "Judge failed"),
    (Outcome.not_run, "site_down", None, "precondition[site_down]: unreachable", "Precondition"),
    (Outcome.failed, None, "invalid_output", "3 invalid replies in a row", "Invalid model output"),
    (Outcome.failed, None, "wrong_answer", "answer 'x' matches none", "Wrong answer"),
    (Outcome.failed, None, "wrong_state", "cart is empty", "Wrong answer"),
    (Outcome.failed, None, "step_budget", "no answer within 30 steps", "Step budget"),
    (Outcome.failed, None, "gave_up", "the agent gave up", "No answer"),
    (Outcome.harness_error, None, None, "KeyError: 'x'", "Harness error"),
    (None, None, None, "", "Missing"),
])
def test_each_outcome_reads_with_its_prefix_and_falls_in_its_category(outcome, kind, failure_class, reason, category):
    message = status_message(outcome, reason, kind=kind, failure_class=failure_class)
    assert category_of(allure_status(outcome), message) == category, message


def test_every_failure_class_sorts_into_an_agent_failure_category():
    agent_failures = {"Invalid model output", "Wrong answer", "No answer", "Step budget", "Time budget",
                      "Other agent failure"}
    sorted_into = {failure.value: category_of("failed", status_message(Outcome.failed, "why",
                                                                       failure_class=failure.value))
                   for failure in FailureClass}
    assert set(sorted_into.values()) == agent_failures, sorted_into


def test_a_prefixed_reason_is_not_prefixed_twice_and_a_pass_has_no_message():
    assert status_message(Outcome.infra_error, "infra[display]: gone", kind="display") == "infra[display]: gone"
    assert status_message(Outcome.passed, "") == ""
    assert allure_status(Outcome.passed) == "passed" and allure_status(Outcome.harness_error) == "broken"


def result_file(folder: Path, task_id: str, status: str = "passed", uuid: str = "u-1") -> None:
    (folder / f"{uuid}-result.json").write_text(json.dumps(
        {"uuid": uuid, "historyId": history_id("lab", task_id), "status": status, "name": task_id}))


def record(task_id: str, outcome: Outcome, **fields) -> AttemptRecord:
    return AttemptRecord(run_id="r1", task_id=task_id, site="Lab", outcome=outcome,
                         finished_at="2026-01-01T00:00:00+00:00", **fields)


def test_placeholders_complete_the_results_to_n_and_are_replaced_by_real_results(tmp_path):
    result_file(tmp_path, "Lab--0")
    records = [record("Lab--1", Outcome.infra_error, kind="browser", reason="infra[browser]: died"),
               record("Lab--3", Outcome.failed, failure_class=FailureClass.step_budget, reason="30 steps")]
    assert write_placeholders(tmp_path, POPULATION, "r1", records) == ["Lab--1", "Lab--2", "Lab--3"]
    ids = {json.loads(p.read_text())["historyId"] for p in tmp_path.glob("*-result.json")}
    assert ids == {history_id("lab", task_id) for task_id in POPULATION.ids}

    lost = json.loads((tmp_path / placeholder_file("lab", "Lab--1")).read_text())
    assert lost["status"] == "skipped" and lost["statusDetails"]["message"] == "infra[browser]: died"
    budget = json.loads((tmp_path / placeholder_file("lab", "Lab--3")).read_text())
    assert budget["status"] == "failed" and budget["statusDetails"]["message"] == "step_budget: 30 steps"
    assert {"name": "failure_class", "value": "step_budget"} in budget["labels"]
    missing = json.loads((tmp_path / placeholder_file("lab", "Lab--2")).read_text())
    assert missing["statusDetails"]["message"].startswith("missing: ")
    assert {"name": "story", "value": "Lab--2"} in missing["labels"]

    before = sorted(p.name for p in tmp_path.iterdir())
    write_placeholders(tmp_path, POPULATION, "r1", records)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # again: the same files, no pile

    result_file(tmp_path, "Lab--2", status="failed", uuid="u-2")
    assert write_placeholders(tmp_path, POPULATION, "r1", records) == ["Lab--1", "Lab--3"]
    assert not (tmp_path / placeholder_file("lab", "Lab--2")).exists()
    assert len(list(tmp_path.glob("*-result.json"))) == POPULATION.size


def test_fixtures_are_unlinked_from_task_results_but_kept_for_others(tmp_path):
    containers = {"a": ["task-1", "other"], "b": ["task-1"], "c": ["broken-task"]}
    for name, children in containers.items():
        (tmp_path / f"{name}-container.json").write_text(json.dumps({"uuid": name, "children": children}))
    detach_fixtures(tmp_path, {"task-1"})
    assert json.loads((tmp_path / "a-container.json").read_text())["children"] == ["other"]
    assert not (tmp_path / "b-container.json").exists()
    assert json.loads((tmp_path / "c-container.json").read_text())["children"] == ["broken-task"]


def test_complete_results_keeps_the_environment_and_recomputes_the_score(tmp_path):
    run = RunDir(tmp_path / "run").create(POPULATION)
    run.append(record("Lab--0", Outcome.passed))
    results = tmp_path / "results"
    complete_results(results, run, {"model": "m-1", "score": "stale"})
    run.append(record("Lab--1", Outcome.passed))
    complete_results(results, run)
    env = read_environment(results)
    assert env["model"] == "m-1" and env["score"] == "2/4 = 50.0%"
    assert env["complete"] == "no: 2 missing, 0 masked"
    assert list(env)[:2] == ["score", "complete"]  # first in the report's metadata
    assert {"categories.json", "executor.json", "environment.properties"} <= {p.name for p in results.iterdir()}


def test_environment_values_are_escaped_and_urls_lose_their_credentials(tmp_path):
    values = {"model key": "a=b: c\\d\nnext", "endpoint": "http://user:secret-pass@proxy.local:8080/v1"}
    write_environment(tmp_path, values)
    text = (tmp_path / "environment.properties").read_text()
    assert "secret-pass" not in text and "user" not in text
    assert read_environment(tmp_path) == {**values, "endpoint": "http://***@proxy.local:8080/v1"}
    assert redact("see https://tok@github.com/x and ftp://a:b@h") == "see https://***@github.com/x and ftp://***@h"


def test_a_run_built_again_keeps_one_history_point_and_a_broken_history_is_named(tmp_path):
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join(json.dumps({"name": n, "uuid": str(i)}) for i, n in enumerate("abab")) + "\n")
    _forget_run(history, "b")
    assert [json.loads(line)["name"] for line in history.read_text().splitlines()] == ["a", "a"]
    history.write_text('{"name": "a"}\nnot json\n')
    with pytest.raises(ReportError, match=r"history.jsonl:2: not an Allure history point"):
        _forget_run(history, "b")


def test_runs_side_by_side_share_a_history_beside_them(tmp_path):
    assert default_history(tmp_path / "reports" / "runs" / "r1", "local") == tmp_path / "reports/history/local.jsonl"
    assert default_history(tmp_path / "elsewhere" / "r1", "local") == tmp_path / "elsewhere/history/local.jsonl"


def test_the_analytics_script_is_removed_from_a_page(tmp_path):
    page = tmp_path / "index.html"
    page.write_text('<body><div id="app"></div>\n    <script async src="https://www.googletagmanager.com/gtag/js?'
                    'id=G-1"></script>\n    <script>\n gtag(\'config\', \'G-1\');\n    </script>\n<script>keep()'
                    '</script></body>')
    strip_analytics(page)
    assert "googletagmanager" not in page.read_text() and "gtag" not in page.read_text()
    assert "<script>keep()</script>" in page.read_text()


def marked(actions: list[dict]) -> Image.Image:
    image = Image.new("RGB", (200, 120), (255, 255, 255))
    draw_marks(image, actions)
    return image


def replay_webp(frames: list[Frame]) -> bytes | None:
    """The replay as the pictures pass makes it: the frames of the steps whose screenshot can be read."""
    return animate([replay_frame(image, frame) for frame in frames if (image := load(frame.screenshot)) is not None])


def png(color=(255, 255, 255), size=(200, 120)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


def test_the_click_point_is_marked_and_a_drag_shows_its_path():
    click = {"tool": "computer", "action": "click", "x": 50, "y": 40}
    clicked = marked([click])
    assert clicked.getpixel((50, 40))[1] < 100  # the dot is red, the page white
    assert clicked.getpixel((50 + 16, 40))[1] < 100  # the ring around it
    assert clicked.getpixel((150, 100)) == (255, 255, 255)
    drag = {"tool": "computer", "action": "drag", "x": 20, "y": 60, "to_x": 180, "to_y": 60}
    assert marked([drag]).getpixel((100, 60))[1] < 100  # on the path between the two ends
    typed = [{"tool": "computer", "action": "type", "text": "hi"}]
    assert not has_points(typed) and marked(typed).getcolors() == [(200 * 120, (255, 255, 255))]


def test_the_replay_is_a_small_animated_webp_of_the_steps_that_have_a_screenshot(tmp_path):
    for n, color in enumerate([(255, 255, 255), (0, 0, 0), (0, 0, 255)], start=1):
        Image.new("RGB", (1280, 720), color).save(tmp_path / f"step-{n}.png")
    frames = [Frame(tmp_path / f"step-{n}.png", n, [{"tool": "computer", "action": "click", "x": 600, "y": 300}])
              for n in (1, 2, 3)] + [Frame(tmp_path / "never-written.png", 4)]
    data = replay_webp(frames)
    image = Image.open(io.BytesIO(data))
    assert image.format == "WEBP" and image.n_frames == 3
    assert image.width == 640 and image.height > 360  # half size, plus the caption bar
    assert len(data) < 60_000
    assert replay_webp([Frame(tmp_path / "never-written.png", 1)]) is None


def allure_step(folder: Path, name: str, screenshot: str | None, actions: list[dict] | None = None,
                error: str | None = None) -> dict:
    """A step as the Allure plugin writes it: the screenshot copied as it is, the actions as JSON."""
    attachments = []
    if screenshot is not None:
        attachments.append({"name": "screenshot", "source": screenshot, "type": "image/png"})
    if actions is not None:
        (folder / f"{screenshot}.actions.json").write_text(json.dumps(actions))
        attachments.append({"name": "actions", "source": f"{screenshot}.actions.json", "type": "application/json"})
    step = {"name": name, "status": "failed" if error else "passed", "attachments": attachments}
    if error:
        step["statusDetails"] = {"message": error}
    return step


def test_the_pictures_pass_skips_what_it_cannot_read_and_does_each_result_once(tmp_path):
    click = [{"tool": "computer", "action": "click", "x": 50, "y": 40}]
    for name, color in (("a1.png", (255, 255, 255)), ("a2.png", (0, 0, 0)), ("c1.png", (255, 255, 255))):
        (tmp_path / name).write_bytes(png(color))
    results = {
        "a": {"uuid": "a", "steps": [allure_step(tmp_path, "1. click (50, 40)", "a1.png", click),
                                     allure_step(tmp_path, "2. invalid reply", "a2.png", error="outside"),
                                     allure_step(tmp_path, "3. click (50, 40)", "never-written.png", click)]},
        "c": {"uuid": "c", "steps": [allure_step(tmp_path, "1. click (50, 40)", "c1.png")]},  # no actions file
        "placeholder": {"uuid": "placeholder", "status": "skipped"},
    }
    for uuid, result in results.items():
        (tmp_path / f"{uuid}-result.json").write_text(json.dumps(result))
    (tmp_path / "b-result.json").write_text('{"uuid": "b", "steps": [')  # cut short

    shot = (tmp_path / "a1.png").read_bytes()
    assert add_pictures(tmp_path) == 2
    a = json.loads((tmp_path / "a-result.json").read_text())
    assert [[x["name"] for x in step["attachments"] if x["name"] != "actions"] for step in a["steps"]] == [
        ["screenshot", CLICKED], ["screenshot"], ["screenshot"]]  # the invalid reply and the missing one unmarked
    assert (tmp_path / "a1.png").read_bytes() == shot, "the screenshot (a link to the attempt's file) is untouched"
    [clicked] = [x for x in a["steps"][0]["attachments"] if x["name"] == CLICKED]
    with Image.open(tmp_path / clicked["source"]) as marked:
        # The whole 200 x 120 test screen is smaller than the crop: the mark is where the click was.
        assert marked.size == (200, 120) and marked.convert("RGB").getpixel((50, 40))[1] < 100
    [replay] = [x for x in a["attachments"] if x["name"] == "replay"]
    with Image.open(tmp_path / replay["source"]) as frames:
        assert frames.n_frames == 2  # the steps that have a screenshot
    c = json.loads((tmp_path / "c-result.json").read_text())
    assert c["steps"][0]["attachments"][0]["name"] == "screenshot"
    assert [x["name"] for x in c["attachments"]] == ["replay"]
    assert Image.open(tmp_path / "c1.png").convert("RGB").getpixel((50, 40)) == (255, 255, 255)
    assert (tmp_path / "b-result.json").read_text() == '{"uuid": "b", "steps": ['
    assert not list(tmp_path.glob("*.tmp"))

    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert add_pictures(tmp_path) == 0
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_replay_of_a_screen_that_is_not_twice_its_width_is_resampled(tmp_path):
    Image.new("RGB", (1000, 600), (0, 0, 255)).save(tmp_path / "step-1.png")
    image = Image.open(io.BytesIO(replay_webp([Frame(tmp_path / "step-1.png", 1)])))
    assert image.width == 640 and image.height > 384


@pytest.mark.parametrize("action, title", [
    ({"tool": "computer", "action": "click", "x": 3, "y": 4}, "click (3, 4)"),
    ({"tool": "computer", "action": "type", "text": "x" * 60}, "type '" + "x" * 47 + "…'"),
    ({"tool": "computer", "action": "key", "keys": ["ctrl", "l"]}, "key ctrl+l"),
    ({"tool": "computer", "action": "scroll", "direction": "down", "amount": 5}, "scroll down 5"),
    ({"tool": "computer", "action": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4}, "drag (1, 2) → (3, 4)"),
    ({"tool": "navigate", "url": "http://a/", "back": False, "forward": False}, "navigate http://a/"),
    ({"tool": "navigate", "back": True, "forward": False}, "navigate back"),
    ({"tool": "tabs", "action": "focus", "tab_id": 2}, "tabs focus 2"),
    ({"tool": "terminate", "status": "success", "answer": "12"}, "terminate success: '12'"),
])
def test_an_action_reads_as_a_short_title(action, title):
    assert describe(action) == title
    assert step_title(7, [action], None) == f"7. {title}"


def run_cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["report", *args])
    captured = capsys.readouterr()
    return code, captured.err.strip()


def test_report_of_a_folder_that_is_not_a_run_directory(tmp_path, capsys):
    code, err = run_cli(capsys, str(tmp_path))
    assert code == 2 and err == f"webeval report: error: {tmp_path} is not a run directory (no population.json)"


def test_report_with_results_that_do_not_exist(tmp_path, capsys):
    RunDir(tmp_path).create(POPULATION)
    code, err = run_cli(capsys, str(tmp_path), "--results", str(tmp_path / "nowhere"))
    assert code == 2 and err == f"webeval report: error: --results {tmp_path / 'nowhere'}: no such folder"


def test_report_of_a_run_directory_with_a_broken_population(tmp_path, capsys):
    (tmp_path / "population.json").write_text("{broken")
    code, err = run_cli(capsys, str(tmp_path))
    assert code == 2 and err.startswith(f"webeval report: error: {tmp_path / 'population.json'}: unreadable")
    assert len(err.splitlines()) == 1


def test_report_without_allure(tmp_path, capsys, monkeypatch):
    RunDir(tmp_path).create(POPULATION)
    monkeypatch.setenv("WEBEVAL_ALLURE", str(tmp_path / "no-allure"))
    code, err = run_cli(capsys, str(tmp_path))
    assert code == 2 and err == f"webeval report: error: $WEBEVAL_ALLURE={tmp_path / 'no-allure'} is not an executable file"


def test_report_when_allure_fails(tmp_path, capsys, monkeypatch):
    RunDir(tmp_path).create(POPULATION)
    monkeypatch.setenv("WEBEVAL_ALLURE", "/bin/false")
    code, err = run_cli(capsys, str(tmp_path), "--no-history")
    assert code == 2 and err == "webeval report: error: allure generate failed (exit 1): no output"


def test_the_project_local_allure_is_found_from_below_the_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv("WEBEVAL_ALLURE", raising=False)
    fake = tmp_path / ".tools/allure/node_modules/.bin/allure"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n")
    (tmp_path / "deep/er").mkdir(parents=True)
    assert find_allure(tmp_path / "deep" / "er") == fake


def test_the_marked_picture_is_the_screen_around_the_points_at_full_resolution():
    screen = Image.new("RGB", (1280, 720), (255, 255, 255))
    corner = Image.open(io.BytesIO(marked_crop(screen, [{"tool": "computer", "action": "click", "x": 1200, "y": 700}])))
    assert corner.size == CROP  # kept inside the screen: the click is near its bottom-right corner
    assert corner.convert("RGB").getpixel((1200 - 800, 700 - 450))[1] < 100
    drag = {"tool": "computer", "action": "drag", "x": 100, "y": 100, "to_x": 900, "to_y": 150}
    wide = Image.open(io.BytesIO(marked_crop(screen, [drag])))
    assert wide.size == (800 + 2 * MARGIN, 50 + 2 * MARGIN)  # both ends, with room around them
