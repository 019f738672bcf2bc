"""Judge protocols over the scripted OpenAI-compatible judge (real HTTP, real `openai` client): WebVoyager's original
evaluation read from its pinned file, free-text replies read as the original reads them, and the verdict cache."""

from __future__ import annotations

import ast
import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, text
from tests.webvoyager_data import ORIGINAL, need_data
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging
from webeval.judges.protocols.original import AUTO_EVAL, PAPER_SCREENSHOTS, read_reply
from webeval.outcomes.cost import Prices
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.tasks import Task

UPSTREAM = ORIGINAL / "evaluation"
TASK = Task(id="Allrecipes--3", site="Allrecipes", goal="Find vegan cookies with over 60 reviews.",
            start_url="https://www.allrecipes.com/")


def upstream_constants() -> dict[str, str]:
    tree = ast.parse((UPSTREAM / "auto_eval.py").read_text())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)}


def attempt(folder: Path, count: int = 20, answer: str | None = "Vegan Oat Cookies, 67 reviews") -> Evidence:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(count):
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), (i * 9 % 256, 3, 0)).save(buffer, "PNG")
        names.append(f"step-{i + 1:03d}.png")
        (folder / names[-1]).write_bytes(buffer.getvalue())
    evidence = Evidence(task_id=TASK.id, goal=TASK.goal, answer=answer, screenshots=names, folder=folder,
                        urls=["https://www.allrecipes.com/search?q=vegan+cookies"])
    evidence.write()
    return evidence


def judging(stub: OpenAIStub, protocol: str, prompts: Path = UPSTREAM, cache: bool = True) -> Judging:
    return Judging(JudgeConfig(base_url=stub.base_url, model="judge-model", protocol=protocol, prompts=str(prompts),
                               retries=0, cache=cache))


@need_data
async def test_webvoyager_protocol_sends_the_original_prompt_word_for_word(tmp_path):
    upstream = upstream_constants()
    with OpenAIStub([text("The screenshots show the cookies with 67 reviews.\n\nSUCCESS")],
                    models=("judge-model",)) as stub:
        judge = judging(stub, "webvoyager")
        verdict = await judge.judge(TASK, attempt(tmp_path / "a"))
        await judge.close()
    request = stub.requests[-1]
    assert request["messages"][0] == {"role": "system", "content": upstream["SYSTEM_PROMPT"]}
    parts = request["messages"][1]["content"]
    expected = (upstream["USER_PROMPT"].replace("<task>", TASK.goal)
                .replace("<answer>", "Vegan Oat Cookies, 67 reviews").replace("<num>", str(PAPER_SCREENSHOTS)))
    assert parts[0] == {"type": "text", "text": expected}
    assert parts[-1] == {"type": "text", "text": "Your verdict:\n"}
    assert sum(part["type"] == "image_url" for part in parts) == PAPER_SCREENSHOTS == 15  # the paper's count
    assert (request["temperature"], request["seed"], request["max_tokens"]) == (0, 42, 1000)
    assert verdict.success and verdict.protocol == "webvoyager"
    assert verdict.prompt_version == AUTO_EVAL.version and AUTO_EVAL.sha256[:12] in verdict.prompt_version


@pytest.mark.parametrize("reply, success", [
    ("Thoughts: the list is shown and the count matches.\nVerdict: SUCCESS", True),
    ("The answer names a different recipe. NOT SUCCESS", False),
    ("It is not a SUCCESS... final: NOT SUCCESS.", False),  # the original: NOT SUCCESS anywhere decides
    ("**SUCCESS**", True),
])
def test_free_text_replies_are_read_as_the_original_reads_them(reply, success):
    assert read_reply(reply) is success


@need_data
async def test_an_unread_reply_is_asked_again_then_judge_failed(tmp_path):
    with OpenAIStub([text("I cannot tell from these images.")], models=("judge-model",)) as stub:
        judge = judging(stub, "webvoyager")
        with pytest.raises(JudgeError) as caught:
            await judge.judge(TASK, attempt(tmp_path / "a", count=2))
        await judge.close()
    assert caught.value.kind == "unparseable" and "neither SUCCESS nor NOT SUCCESS in 3 replies" in str(caught.value)
    assert len(stub.requests) == 3 and stub.requests[0]["messages"] == stub.requests[2]["messages"]


@need_data
async def test_no_answer_is_a_failure_without_a_call(tmp_path):
    with OpenAIStub([text("SUCCESS")], models=("judge-model",)) as stub:
        judge = judging(stub, "webvoyager")
        verdict = await judge.judge(TASK, attempt(tmp_path / "a", answer=None))
        await judge.close()
    assert not verdict.success and stub.requests == []


async def test_webeval_protocol_marks_its_verdicts(tmp_path):
    reply = text(json.dumps({"reasoning": "shown", "verdict": "NOT SUCCESS"}))
    with OpenAIStub([reply], models=("judge-model",)) as stub:
        judge = judging(stub, "webeval")
        verdict = await judge.judge(TASK, attempt(tmp_path / "a", count=2))
        await judge.close()
    assert not verdict.success and verdict.protocol == "webeval" and verdict.prompt_version.startswith("webeval#")
    trail = stub.requests[-1]["messages"][1]["content"][-1]["text"]  # after the screenshots: the URLs it visited
    assert trail.startswith("The pages the agent visited, oldest first:\nhttps://www.allrecipes.com/search?q=vegan")


@need_data
def test_a_prompt_file_that_is_not_the_pin_is_refused(tmp_path):
    changed = tmp_path / "prompts"
    changed.mkdir()
    source = (UPSTREAM / "auto_eval.py").read_text()
    (changed / "auto_eval.py").write_text(source.replace("As an evaluator", "As a judge"))
    with OpenAIStub([text("SUCCESS")], models=("judge-model",)) as stub:
        with pytest.raises(JudgeConfigError, match=r"auto_eval.py: sha256 .* is not the pin"):
            judging(stub, "webvoyager", changed)
        with pytest.raises(JudgeConfigError, match="no auto_eval.py .*webeval prepare judge-prompts"):
            judging(stub, "webvoyager", tmp_path / "empty")
    assert (UPSTREAM / "auto_eval.py").read_text() == source


@need_data
async def test_the_cache_spares_a_second_call_and_is_keyed_by_protocol_and_evidence(tmp_path):
    with OpenAIStub([text("SUCCESS")], models=("judge-model",)) as stub:
        evidence = attempt(tmp_path / "a", count=2)
        for protocol in ("webvoyager", "webvoyager", "webeval"):
            judge = judging(stub, protocol)
            await judge.judge(TASK, evidence)
            await judge.close()
        assert len(stub.requests) == 2  # the second webvoyager verdict came from the cache
        copy = tmp_path / "copy"
        shutil.copytree(evidence.folder, copy)
        moved = Evidence.load(copy)
        judge = judging(stub, "webvoyager")
        assert (await judge.judge(TASK, moved)).success and len(stub.requests) == 2  # it travels with the evidence
        changed = moved.model_copy(update={"answer": "Vegan Oat Cookies, 12 reviews"})
        await judge.judge(TASK, changed)
        assert len(stub.requests) == 3  # other evidence, another key
        off = judging(stub, "webvoyager", cache=False)
        await off.judge(TASK, moved)
        assert len(stub.requests) == 4  # --no-judge-cache
        for one in (judge, off):
            await one.close()


# No copy of Online-Mind2Web's prompt file is on this machine: the test writes a file of the same shape (its own
# words) and pins it, so the three stages are exercised exactly as the pinned upstream file drives them: as there,
# the outcome stage assigns its template with the kept pages' reasons first and reassigns it when none was kept.
WEBJUDGE_FILE = '''
def identify_key_points(task):
    system_msg = """KP-SYSTEM: list the key points."""
    prompt = """Task: {task}"""

async def judge_image(task, image_path, key_points):
    system_msg = """IMAGE-SYSTEM: score the image 1 to 5."""
    prompt = """Task: {task}
Key points: {key_points}"""

async def WebJudge_Online_Mind2Web_eval(task, last_actions, images_path):
    system_msg = """OUTCOME-SYSTEM: Status: success or failure."""
    prompt = """Task: {task}
Key points: {key_points}
Actions:
{last_actions}
Why these pages: {thoughts}"""
    if not images_path:
        prompt = """NO-IMAGES Task: {task}
Key points: {key_points}
Actions:
{last_actions}"""
'''


def webjudge_judge(stub: OpenAIStub, folder: Path, prices: Prices | None = None):
    import hashlib

    from webeval.judges.protocols.pinned import PromptPin
    from webeval.judges.protocols.webjudge import WebJudge
    from webeval.models import Endpoint

    folder.mkdir(exist_ok=True)
    path = folder / "webjudge_online_mind2web.py"
    path.write_text(WEBJUDGE_FILE)
    pin = PromptPin("test/prompts", "0" * 40, "src/methods/webjudge_online_mind2web.py",
                    hashlib.sha256(path.read_bytes()).hexdigest())
    return WebJudge(Endpoint(stub.base_url, "judge-model", retries=0, prices=prices), folder, pin=pin)


def webjudge_script(final: str):
    scores = iter([4, 1, 3, 5])  # of the four screenshots, in the order the calls are made

    def reply(request: dict):
        system = request["messages"][0]["content"]
        if system.startswith("KP-SYSTEM"):
            return text("Thinking...\n**Key Points**:\n  1. vegan cookies\n  2. more than 60 reviews")
        if system.startswith("IMAGE-SYSTEM"):
            return text(f"**Reasoning**: shows the list.\n\n**Score**: {next(scores)}")
        return text(final)

    return reply


async def test_webjudge_runs_its_three_stages(tmp_path):
    with OpenAIStub(webjudge_script("Thoughts: both key points hold.\nStatus: \"success\""),
                    models=("judge-model",)) as stub:
        judge = webjudge_judge(stub, tmp_path / "prompts")
        evidence = attempt(tmp_path / "a", count=4).model_copy(update={
            "actions": [{"tool": "computer", "action": "click", "x": 1, "y": 2},
                        {"tool": "terminate", "status": "success", "answer": "x"}],
            "urls": ["https://www.allrecipes.com/search?q=vegan+cookies", "https://www.allrecipes.com/r/1"]})
        verdict = await judge.judge(TASK, evidence)
        await judge.close()
    first, *images, last = stub.requests
    assert first["messages"][1]["content"] == [{"type": "text", "text": f"Task: {TASK.goal}"}]
    # as upstream leaves them: each line's indent gone, the newline after "**Key Points**:" kept
    assert len(images) == 4 and "Key points: \n1. vegan cookies\n2. more than 60 reviews" in \
        images[0]["messages"][1]["content"][0]["text"]
    assert images[0]["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/")
    outcome = last["messages"][1]["content"]
    assert sum(part["type"] == "image_url" for part in outcome) == 3  # scored 4, 3 and 5: kept; 1: dropped
    assert outcome[0]["text"].endswith("Why these pages: 1. shows the list.\n2. shows the list.\n3. shows the list.")
    assert '1. {"tool": "computer", "action": "click", "x": 1, "y": 2} (on https://www.allrecipes.com/search?q=' \
        in outcome[0]["text"] and "terminate" not in outcome[0]["text"]  # the URL it acted on; no closing answer
    assert verdict.success and verdict.protocol == "webjudge" and len(verdict.details["kept"]) == 3
    assert sorted(verdict.details["scores"].values()) == [1, 3, 4, 5]


async def test_webjudge_reads_a_failure_and_uses_the_no_image_prompt(tmp_path):
    def reply(request: dict):
        system = request["messages"][0]["content"]
        if system.startswith("IMAGE-SYSTEM"):
            return text("**Reasoning**: unrelated page.\n\n**Score**: 1")
        return text("Key Points: 1. cookies") if system.startswith("KP") else text("Status: failure")

    with OpenAIStub(reply, models=("judge-model",)) as stub:
        judge = webjudge_judge(stub, tmp_path / "prompts")
        verdict = await judge.judge(TASK, attempt(tmp_path / "a", count=2))
        await judge.close()
    assert not verdict.success and verdict.details["kept"] == []
    assert stub.requests[-1]["messages"][1]["content"][0]["text"].startswith("NO-IMAGES")


@pytest.mark.parametrize(("reply", "success"), [
    ('Thoughts: all key points hold.\nStatus: "success"', True),
    ("Thoughts: the filter was not applied.\nStatus: failure", False),
    ("STATUS: Success", True),
    ("Thoughts: one could call it a success.\nStatus: incomplete", False),  # only the text after "Status:" counts
    ("The task was completed successfully.", None),  # no "Status:": asked again, then unparseable
])
def test_webjudge_reads_its_status_line_as_upstream_does(reply, success):
    from webeval.judges.protocols.webjudge import status

    assert status(reply) is success


async def test_webjudge_without_its_pinned_file_stops_with_one_line(tmp_path):
    with OpenAIStub([text("x")], models=("judge-model",)) as stub:
        (tmp_path / "webjudge_online_mind2web.py").write_text(WEBJUDGE_FILE)
        with pytest.raises(JudgeConfigError, match="is not the pin of OSU-NLP-Group/Online-Mind2Web"):
            judging(stub, "webjudge", tmp_path)
