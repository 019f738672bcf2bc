"""The model endpoint's failure modes, for real over HTTP: retries, Retry-After, timeouts, refused keys; profiles and
the session-start preflight."""

from __future__ import annotations

import socket
import time
from email.utils import formatdate

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, call, error
from webeval.outcomes.record import InfraError
from webeval.models import PreflightError, retry_after
from webeval.policy.openai import HttpTransport, PolicyAuthError, ProfileError, check_policy_endpoint, load_profile
from webeval.policy.openai.profile import make_profile

KEY = "sk-test-9f8e7d6c5b4a-distinctive"
BODY = {"model": "stub-model", "messages": [{"role": "user", "content": "hello"}]}
OK = call("terminate", {"status": "success", "answer": "x"})


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Waits:
    """Records the backoff waits instead of sleeping them: the retries and their HTTP traffic stay real."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def complete(stub_or_url, script=None, **fields):
    base_url = stub_or_url if isinstance(stub_or_url, str) else stub_or_url.base_url
    profile = make_profile({"base_url": base_url, "model": "stub-model", "backoff_s": 0.5, **fields})
    waits = Waits()
    transport = HttpTransport(profile, KEY, sleep=waits)
    try:
        return await transport.complete(BODY), waits.waits
    finally:
        await transport.close()


async def test_429_then_success_honours_retry_after():
    with OpenAIStub([error(429, "slow down", **{"Retry-After": "2"}), OK]) as stub:
        exchange, waits = await complete(stub)
    assert waits == [2.0] and exchange.retries == 1 and exchange.errors == ["HTTP 429: slow down"]
    assert exchange.usage == {"prompt_tokens": 100, "completion_tokens": 20}
    assert len(stub.requests) == 2 and stub.requests[0] == BODY  # the body goes out exactly as built


async def test_real_wait_before_retrying_a_429():
    with OpenAIStub([error(429, "slow down", **{"Retry-After": "1"}), OK]) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model"})
        transport = HttpTransport(profile, KEY)
        began = time.monotonic()
        exchange = await transport.complete(BODY)
        await transport.close()
    assert time.monotonic() - began >= 1.0 and exchange.latency_s >= 1.0


async def test_500_forever_is_policy_unavailable_after_retries():
    with OpenAIStub([error(500, "upstream exploded")]) as stub:
        with pytest.raises(InfraError) as caught:
            await complete(stub, retries=2)
    assert caught.value.kind == "policy_unavailable"
    assert caught.value.message == ("model stub-model at " + stub.base_url + ": HTTP 500: upstream exploded "
                                    "(3 attempts)")
    assert len(stub.requests) == 3


async def test_backoff_doubles_up_to_the_cap():
    with OpenAIStub([error(503, "busy")] * 4 + [OK]) as stub:
        exchange, waits = await complete(stub, retries=4, backoff_s=1.0, max_wait_s=3.0)
    assert waits == [1.0, 2.0, 3.0, 3.0] and exchange.retries == 4


async def test_retry_after_longer_than_the_cap_gives_up_at_once():
    with OpenAIStub([error(429, "quota", **{"Retry-After": "3600"})]) as stub:
        with pytest.raises(InfraError, match="asked to wait 3600 s, more than max_wait_s 60"):
            await complete(stub)
    assert len(stub.requests) == 1


async def test_reply_slower_than_the_timeout():
    with OpenAIStub([Reply(delay_s=3.0, tool_calls=[("terminate", "{}")])]) as stub:
        with pytest.raises(InfraError) as caught:
            await complete(stub, timeout_s=0.5, retries=1)
    assert caught.value.kind == "policy_unavailable" and "no reply within 0.5 s (2 attempts)" in caught.value.message


async def test_dropped_connection_is_retried():
    with OpenAIStub([Reply(drop=True), OK]) as stub:
        exchange, waits = await complete(stub)
    assert exchange.retries == 1 and exchange.errors[0].startswith("connection failed")


async def test_unreachable_endpoint_is_policy_unavailable():
    with pytest.raises(InfraError) as caught:
        await complete(f"http://127.0.0.1:{closed_port()}/v1", retries=1)
    assert caught.value.kind == "policy_unavailable" and "connection failed" in caught.value.message


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_key_is_an_auth_error_without_the_key(status):
    # Some servers echo the key they refused; it must not travel on.
    with OpenAIStub([error(status, f"Incorrect API key provided: {KEY}")]) as stub:
        with pytest.raises(PolicyAuthError) as caught:
            await complete(stub)
    assert caught.value.kind == "policy_auth" and f"(HTTP {status})" in caught.value.message
    assert KEY not in str(caught.value) and "***" in caught.value.message and len(stub.requests) == 1


async def test_other_client_errors_are_not_retried():
    with OpenAIStub([error(400, "image input is not supported by this model")]) as stub:
        with pytest.raises(InfraError) as caught:
            await complete(stub)
    assert caught.value.kind == "policy_request" and "HTTP 400: image input is not supported" in caught.value.message
    assert len(stub.requests) == 1


def test_retry_after_forms():
    assert retry_after({"retry-after": "1.5"}) == 1.5
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert 9 <= retry_after({"retry-after": formatdate(time.time() + 10, usegmt=True)}) <= 10
    assert retry_after({}) is None


# -- profiles -------------------------------------------------------------------------------------------------------
def test_profile_file_with_overrides(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('base_url = "http://127.0.0.1:8000/v1/"\nmodel = "Qwen/Qwen2.5-VL-7B-Instruct"\n'
                    'adapter = "grid-999"\nscreenshots = 2\n[extra_body]\ntop_k = 20\n')
    profile = load_profile(path, {"model": "other", "retries": None})
    assert (profile.base_url, profile.model, profile.adapter, profile.screenshots) == (
        "http://127.0.0.1:8000/v1", "other", "grid-999", 2)
    assert profile.extra_body == {"top_k": 20} and profile.api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize("name, content, message", [
    ("bad.toml", "model = \n", "invalid TOML"),
    ("bad.json", "{", "invalid JSON"),
    ("list.json", "[1]", "must be a table of fields"),
    ("key.toml", 'base_url = "http://a/v1"\nmodel = "m"\napi_key = "sk-1"\n', "holds an API key"),
    ("unknown.toml", 'base_url = "http://a/v1"\nmodel = "m"\ntemprature = 0\n', "has unknown key 'temprature'"),
    ("adapter.toml", 'base_url = "http://a/v1"\nmodel = "m"\nadapter = "xml"\n', "adapter: Input should be"),
    ("url.toml", 'base_url = "ftp://a"\nmodel = "m"\n', "base_url 'ftp://a' is not an http(s) URL"),
    ("nomodel.toml", 'base_url = "http://a/v1"\n', "no model"),
])
def test_bad_profiles_are_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ProfileError) as caught:
        load_profile(path, {})
    assert message in str(caught.value) and str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_missing_profile_file(tmp_path):
    with pytest.raises(ProfileError, match="cannot read profile .*nothing.toml"):
        load_profile(tmp_path / "nothing.toml", {})


# -- preflight ------------------------------------------------------------------------------------------------------
def profile_for(base_url: str, **fields):
    return make_profile({"base_url": base_url, "model": "stub-model", "retries": 0, "api_key_env": "WEBEVAL_T_KEY",
                         **fields})


def test_preflight_passes_when_the_model_is_served():
    with OpenAIStub(models=("a", "stub-model"), api_key=KEY) as stub:
        check_policy_endpoint(profile_for(stub.base_url), {"WEBEVAL_T_KEY": KEY})
        assert stub.headers == []  # the model list only: no completion is spent


def test_preflight_refused_key():
    with OpenAIStub(api_key=KEY) as stub:
        with pytest.raises(PreflightError) as caught:
            check_policy_endpoint(profile_for(stub.base_url), {"WEBEVAL_T_KEY": "sk-wrong-key-123"})
        message = str(caught.value)
        assert message.startswith(f"the policy endpoint {stub.base_url} refused the API key from $WEBEVAL_T_KEY: "
                                  "HTTP 401") and "sk-wrong-key-123" not in message
        with pytest.raises(PreflightError, match=r"\$WEBEVAL_T_KEY is not set"):
            check_policy_endpoint(profile_for(stub.base_url), {})


def test_preflight_model_not_served():
    with OpenAIStub(models=("llava", "qwen")) as stub:
        with pytest.raises(PreflightError) as caught:
            check_policy_endpoint(profile_for(stub.base_url, model="gpt-x"), {})
    assert str(caught.value) == f"the policy endpoint {stub.base_url} does not serve model 'gpt-x'; it serves: llava, qwen"


def test_preflight_unreachable():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(PreflightError, match=f"the policy endpoint {url} is unreachable: "):
        check_policy_endpoint(profile_for(url), {})


class NoModelList(OpenAIStub):
    """An endpoint without GET /models (some proxies): everything else as the stub."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        base = self._httpd.RequestHandlerClass

        class Handler(base):
            def do_GET(self) -> None:
                self._send(404, {"error": {"message": "not found"}})

        self._httpd.RequestHandlerClass = Handler


class FlakyModelList(OpenAIStub):
    """GET /models fails with 503 the first `failures` times, then answers as the stub."""

    def __init__(self, failures: int, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        base, left = self._httpd.RequestHandlerClass, [failures]

        class Handler(base):
            def do_GET(self) -> None:
                if left[0] > 0:
                    left[0] -= 1
                    self._send(503, {"error": {"message": "loading the model"}})
                else:
                    super().do_GET()

        self._httpd.RequestHandlerClass = Handler


def test_preflight_retries_an_endpoint_that_is_not_ready_yet():
    with FlakyModelList(2) as stub:
        check_policy_endpoint(profile_for(stub.base_url, retries=2, backoff_s=0.01), {})
    with FlakyModelList(3) as stub:
        with pytest.raises(PreflightError) as caught:
            check_policy_endpoint(profile_for(stub.base_url, retries=2, backoff_s=0.01), {})
    assert str(caught.value) == f"the policy endpoint {stub.base_url} answered HTTP 503: loading the model"


def test_preflight_without_a_model_list_asks_for_one_token():
    with NoModelList([OK]) as stub:
        check_policy_endpoint(profile_for(stub.base_url), {})
    assert stub.requests == [{"model": "stub-model", "messages": [{"role": "user", "content": "Reply with OK."}],
                              "max_tokens": 1}]
    with NoModelList([error(404, "The model `stub-model` does not exist.")]) as stub:
        with pytest.raises(PreflightError) as caught:
            check_policy_endpoint(profile_for(stub.base_url), {})
    assert str(caught.value) == (f"the policy endpoint {stub.base_url} does not serve model 'stub-model': HTTP 404: "
                                 "The model `stub-model` does not exist.")
