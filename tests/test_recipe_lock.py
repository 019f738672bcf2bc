"""Recipe locks: a profile pins what its model is served with; `webeval profile check --served` compares the pins with
what the (scripted) vLLM server reports on /v1/models, /version and /tokenize, and says in one line each what it
cannot check; a run records the lock in sessions.jsonl and its summary."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, Served, stub_tokens
from tests.webvoyager_data import pytest_run, webvoyager_rows
from webeval.cli import main
from webeval.models.served import PROBE_TEXT, probe_digest

TOKENIZER, TEMPLATE, PARSER = "1" * 64, "2" * 64, "3" * 64
PROBE = probe_digest(stub_tokens(PROBE_TEXT))  # what the stand-in tokenizer makes of webeval's probe


def profile(folder: Path, base_url: str = "http://127.0.0.1:9/v1", **lock) -> Path:
    pins = {"tokenizer": TOKENIZER, "chat_template": TEMPLATE, "reasoning_parser": PARSER,
            "served_root": "/models/stub-weights", "max_model_len": 32768, "vllm_version": "0.11.0",
            "tokenizer_probe": PROBE, **lock}
    lines = [f'base_url = "{base_url}"', 'model = "seed-model"', 'api_key_env = "SEED_KEY"', "", "[recipe]",
             'tool_call_parser = "qwen3_coder"', 'reasoning_parser = "nano_v3"', "", "[recipe.lock]",
             *(f"{name} = {json.dumps(value)}" for name, value in pins.items() if value is not None)]
    path = folder / "seed.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def served_lines(output: str) -> list[str]:
    return output[output.index("\nserved: ") + 1:].splitlines()


def test_every_pin_the_server_reports_matches_and_what_it_cannot_check_is_said(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEED_KEY", "sk-seed-5ecret")
    with OpenAIStub(models=("seed-model",), served=Served(), api_key="sk-seed-5ecret") as stub:
        status = main(["profile", "check", str(profile(tmp_path, stub.base_url)), "--served"])
    assert status == 0
    lines = served_lines(capsys.readouterr().out)
    assert lines[0].startswith(f"served: {stub.base_url} serves model seed-model; its recipe lock pins tokenizer, ")
    assert lines[1:] == [
        "  served root: ok (/models/stub-weights)",
        "  max model len: ok (32768)",
        "  vllm version: ok (0.11.0)",
        f"  tokenizer probe: ok ({PROBE})",
        "  tokenizer: cannot be checked: the server does not serve its tokenizer files (the tokenizer at work is the "
        "probe's to check) (pinned sha256 111111111111, recorded by each run)",
        "  chat template: cannot be checked: the server does not serve its chat template (pinned sha256 "
        "222222222222, recorded by each run)",
        "  processor: cannot be checked: the server does not serve its image processor's configuration (not pinned)",
        "  reasoning parser: cannot be checked: the server does not serve its reasoning parser's file (pinned "
        "sha256 333333333333, recorded by each run)",
        "  tool call parser: cannot be checked: the server does not serve its tool-call parser's file (a built-in "
        "one comes with the vLLM version) (not pinned)",
    ]


def test_another_tokenizer_and_context_length_differ_and_exit_1(tmp_path, capsys):
    served = Served(max_model_len=8192, vocabulary=1, version="0.12.1")
    with OpenAIStub(models=("seed-model",), served=served) as stub:
        status = main(["profile", "check", str(profile(tmp_path)), "--served", stub.base_url])
    assert status == 1
    lines = served_lines(capsys.readouterr().out)
    other = probe_digest(stub_tokens(PROBE_TEXT, 1))
    assert "  max model len: DIFFERS: pinned 32768, the server reports 8192" in lines
    assert "  vllm version: DIFFERS: pinned 0.11.0, the server reports 0.12.1" in lines
    assert f"  tokenizer probe: DIFFERS: pinned {PROBE}, the server reports {other}" in lines
    assert "  served root: ok (/models/stub-weights)" in lines


def test_what_a_server_does_not_report_is_not_checked_and_an_unpinned_value_is_shown_to_pin(tmp_path, capsys):
    served = Served(root=None, version=None, tokenize=False)
    with OpenAIStub(models=("seed-model",), served=served) as stub:
        status = main(["profile", "check", str(profile(tmp_path, max_model_len=None)), "--served", stub.base_url])
    assert status == 0
    lines = served_lines(capsys.readouterr().out)
    assert lines[1:5] == [
        "  served root: cannot be checked: /v1/models does not give the model's root",
        "  max model len: not pinned; the server reports 32768",
        "  vllm version: cannot be checked: GET /version answered HTTP 404 without a version",
        "  tokenizer probe: cannot be checked: POST /tokenize answered HTTP 404 without token ids",
    ]


def test_a_server_that_does_not_serve_the_model_or_cannot_be_reached_is_one_line(tmp_path, capsys):
    with OpenAIStub(models=("another-model",), served=Served()) as stub:
        assert main(["profile", "check", str(profile(tmp_path)), "--served", stub.base_url]) == 1
    assert served_lines(capsys.readouterr().out) == [
        f"served: {stub.base_url} does not serve model 'seed-model' (it serves another-model)"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    assert main(["profile", "check", str(profile(tmp_path)), "--served", closed]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"webeval profile: error: the served endpoint {closed} is unreachable: ")
    assert "\n" not in error


@pytest.mark.parametrize("pin, problem", [
    ({"tokenizer": "XYZ"}, "recipe.lock.tokenizer: 'XYZ' is not a sha256 (64 lowercase hex digits"),
    ({"max_model_len": 0}, "recipe.lock.max_model_len: Input should be greater than or equal to 1"),
    ({"template": TEMPLATE}, "has unknown key 'recipe.lock.template'"),
])
def test_a_bad_lock_is_one_line(tmp_path, capsys, pin, problem):
    assert main(["profile", "check", str(profile(tmp_path, **pin))]) == 2
    assert problem in capsys.readouterr().err


def test_a_run_records_the_lock_in_its_sessions_and_summary(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [("ESPN--0", "Who won?", f"http://127.0.0.1:{closed}/")])
    run_dir = tmp_path / "run"
    with OpenAIStub(models=("seed-model",)) as stub:
        result = pytest_run(["suites/webvoyager", "--tasks-file", str(tasks), "--run-dir", str(run_dir), "--policy",
                             "openai", "--policy-profile", str(profile(tmp_path, stub.base_url)),
                             "--allow-incomplete", "-q"], env={"SEED_KEY": "k"})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    lock = {"tokenizer": TOKENIZER, "chat_template": TEMPLATE, "reasoning_parser": PARSER,
            "served_root": "/models/stub-weights", "max_model_len": "32768", "vllm_version": "0.11.0",
            "tokenizer_probe": PROBE}
    session = json.loads((run_dir / "sessions.jsonl").read_text().splitlines()[-1])
    assert session["recipe_lock"] == lock
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["recipe_lock"] == lock
    described = (f"tokenizer 111111111111, chat template 222222222222, reasoning parser 333333333333, served root "
                 f"/models/stub-weights, max model len 32768, vllm version 0.11.0, tokenizer probe {PROBE[:12]}")
    assert summary["conditions"]["recipe lock"] == described
    assert f"  recipe lock: {described}" in output
