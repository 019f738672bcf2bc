"""`webeval profile check NAME|PATH`: every documented profile is valid and shows one request as it would be sent,
images elided, the key never shown; a bad profile is one line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.families import PROFILES
from webeval.cli import main

SECRET = "sk-profile-check-5ecret-77f1"


def request_of(output: str) -> dict:
    """The JSON body printed after the POST line."""
    return json.loads(output[output.index("\n{") + 1:])


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.toml")), ids=lambda p: p.name)
def test_every_documented_profile_checks(path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("VLLM_API_KEY", SECRET)
    assert main(["profile", "check", str(path)]) == 0
    output = capsys.readouterr().out
    assert output.startswith(f"profile {path}: valid\n") and SECRET not in output
    assert "(set; never shown)" in output
    body = request_of(output)
    images = [text for text in json.dumps(body).split('"') if text.startswith("<image/")]
    assert images and not [text for text in json.dumps(body).split('"') if text.startswith("data:")]
    assert body["model"] and ("input" in body or "messages" in body)


def test_the_request_shows_the_resized_image_and_the_recipe(capsys):
    assert main(["profile", "check", str(PROFILES / "vllm-qwen2.5-vl.toml"), "--screen", "1920x1080"]) == 0
    output = capsys.readouterr().out
    assert "image: a 1920x1080 screen is sent as 1316x728 (png, smart_resize factor 28, min_pixels 3136, " \
           "max_pixels 1003520); the model's coordinates are pixels of that image" in output
    assert "serving recipe: revision main, chat template the model's own (tokenizer_config.json), tool-call parser " \
           "hermes, reasoning parser -, images: ≤ 1003520 px, ≥ 3136 px, 3 per prompt" in output
    assert "POST http://127.0.0.1:8000/v1/chat/completions" in output
    body = request_of(output)
    image = body["messages"][1]["content"][2]["image_url"]["url"]
    assert image.startswith("<image/png 1316x728, ") and image.endswith(" bytes>")
    assert body["tools"][0]["function"]["parameters"]["properties"]["x"]["anyOf"][0]["maximum"] == 1315


def test_a_hosted_computer_use_profile_shows_a_responses_request(capsys):
    assert main(["profile", "check", str(PROFILES / "openai-computer-use.toml"), "--screen", "1366x768"]) == 0
    output = capsys.readouterr().out
    assert "POST https://api.openai.com/v1/responses" in output
    body = request_of(output)
    assert body["tools"] == [{"type": "computer_use_preview", "display_width": 1280, "display_height": 720,
                              "environment": "browser"}]
    assert body["truncation"] == "auto" and "temperature" not in body and body["max_output_tokens"] == 2048
    assert body["input"][0]["content"][2]["image_url"].startswith("<image/png 1280x720, ")


def test_a_profile_by_name(tmp_path, capsys, monkeypatch):
    named = tmp_path / "profiles.json"
    named.write_text(json.dumps({"local": {"base_url": "http://127.0.0.1:8000/v1", "model": "m",
                                           "image": {"format": "jpeg", "quality": 85, "size": [640, 360]}}}))
    monkeypatch.setenv("WEBEVAL_POLICY_PROFILES", str(named))
    assert main(["profile", "check", "local"]) == 0
    output = capsys.readouterr().out
    assert output.startswith("profile local: valid\n") and "<image/jpeg 640x360, " in output


@pytest.mark.parametrize("args, error", [
    (["NOWHERE/gone.toml"], "cannot read profile NOWHERE/gone.toml: No such file or directory"),
    (["BAD"], "profile BAD: screenshots: Input should be less than or equal to 50"),
    ([str(PROFILES / "vllm-qwen2.5-vl.toml"), "--screen", "wide"], "--screen 'wide': expected WIDTHxHEIGHT"),
])
def test_a_bad_profile_is_one_line_and_status_2(tmp_path, capsys, args, error):
    bad = tmp_path / "bad.toml"
    bad.write_text('base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nscreenshots = 99\n')
    args = [a.replace("NOWHERE", str(tmp_path)).replace("BAD", str(bad)) for a in args]
    error = error.replace("NOWHERE", str(tmp_path)).replace("BAD", str(bad))
    assert main(["profile", "check", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"webeval profile: error: {error}")
    assert captured.err.count("\n") == 1


def test_the_console_script_never_prints_the_key():
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    proc = subprocess.run([sys.executable, "-m", "webeval.cli", "profile", "check",
                           "docs/profiles/openai-gpt-4.1.toml"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr and "key: $OPENAI_API_KEY (set; never shown)" in proc.stdout
