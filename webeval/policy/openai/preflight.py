"""Before any task: the endpoint answers, accepts the key, and serves the model. Otherwise one message says why.

The model list (`GET /models`) answers all three on vLLM, SGLang and hosted APIs; an endpoint without it is asked
for a one-token completion instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from webeval.policy.openai.client import api_key_from, redact, server_message
from webeval.policy.openai.profile import Profile

if TYPE_CHECKING:
    import openai

_PREFLIGHT_TIMEOUT_S = 30.0


class PreflightError(Exception):
    """The endpoint cannot serve this run; the message is one line for the user, with no secret in it."""


def preflight(profile: Profile, environ: Mapping[str, str]) -> None:
    import openai

    key = api_key_from(environ, profile)
    where = f"the policy endpoint {profile.base_url}"

    def clean(text: str) -> str:
        return redact(text, (key,))

    client = openai.OpenAI(base_url=profile.base_url, api_key=key, max_retries=profile.retries,
                           timeout=min(profile.timeout_s, _PREFLIGHT_TIMEOUT_S))
    try:
        served = _served_models(client, profile)
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        unset = "" if environ.get(profile.api_key_env) else f" (${profile.api_key_env} is not set)"
        raise PreflightError(clean(f"{where} refused the API key from ${profile.api_key_env}{unset}: HTTP "
                                   f"{exc.status_code}: {server_message(exc)}")) from None
    except openai.NotFoundError as exc:
        raise PreflightError(clean(f"{where} does not serve model {profile.model!r}: HTTP 404: "
                                   f"{server_message(exc)}")) from None
    except openai.APIStatusError as exc:
        raise PreflightError(clean(f"{where} answered HTTP {exc.status_code}: {server_message(exc)}")) from None
    except openai.APITimeoutError:
        raise PreflightError(f"{where} did not answer within {client.timeout} s") from None
    except openai.APIConnectionError as exc:
        raise PreflightError(clean(f"cannot reach {where}: {exc.__cause__ or exc}")) from None
    finally:
        client.close()
    if served is not None and profile.model not in served:
        listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "") if served else "nothing"
        raise PreflightError(clean(f"{where} does not serve model {profile.model!r}; it serves: {listed}"))


def _served_models(client: openai.OpenAI, profile: Profile) -> list[str] | None:
    """The served model ids; None when the endpoint has no model list but completed a one-token request."""
    import openai

    try:
        return [model.id for model in client.models.list()]
    except openai.NotFoundError:
        pass
    body: dict[str, Any] = {"model": profile.model, "messages": [{"role": "user", "content": "Reply with OK."}],
                            profile.max_tokens_param: 1}
    client.chat.completions.create(**body)
    return None
