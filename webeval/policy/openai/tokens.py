"""Token-exact turns: the prompt's and the generation's token ids and log-probabilities, as a vLLM endpoint returns
them when asked (`logprobs`, `top_logprobs: 0`, `return_tokens_as_token_ids`, `return_token_ids`).

They are stored as received, never re-tokenised: a trainer computes its loss on exactly the tokens the policy
sampled. An endpoint asked for them that does not give them (or gives half of them) fails the turn as
infrastructure: a rollout without its tokens is of no use to a trainer, and no such rollout is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webeval.outcomes.record import InfraError

TOKEN_PREFIX = "token_id:"
NOT_GIVEN = ("the endpoint returned no token ids for a turn that asked for them (vLLM's return_token_ids and "
             "logprobs); pass --no-token-ids for an endpoint that does not give them")


@dataclass(frozen=True)
class TurnTokens:
    prompt_token_ids: list[int]
    generation_token_ids: list[int]
    generation_log_probs: list[float]

    def as_dict(self) -> dict[str, list]:
        return {"prompt_token_ids": self.prompt_token_ids, "generation_token_ids": self.generation_token_ids,
                "generation_log_probs": self.generation_log_probs}


def _ids(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InfraError("policy_tokens", f"{where} is not a list of token ids")
    return value


def _from_logprobs(choice: dict[str, Any]) -> tuple[list[int], list[float]]:
    block = choice.get("logprobs")
    content = block.get("content") if isinstance(block, dict) else None
    if not isinstance(content, list):
        raise InfraError("policy_tokens", NOT_GIVEN)
    ids, log_probs = [], []
    for index, entry in enumerate(content):
        token = entry.get("token") if isinstance(entry, dict) else None
        log_prob = entry.get("logprob") if isinstance(entry, dict) else None
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) \
                or not isinstance(log_prob, (int, float)) or isinstance(log_prob, bool):
            raise InfraError("policy_tokens", f"logprobs.content[{index}] is not a `{TOKEN_PREFIX}<id>` token with "
                                              "its log-probability (is return_tokens_as_token_ids honoured?)")
        try:
            ids.append(int(token[len(TOKEN_PREFIX):]))
        except ValueError:
            raise InfraError("policy_tokens", f"logprobs.content[{index}].token {token[:40]!r} is not a token id") \
                from None
        log_probs.append(float(log_prob))
    return ids, log_probs


def turn_tokens(reply: dict[str, Any]) -> TurnTokens:
    """The token ids and log-probabilities of a chat completion's first choice, as the endpoint sent them."""
    choices = reply.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    prompt = reply.get("prompt_token_ids", choice.get("prompt_token_ids"))
    if prompt is None:
        raise InfraError("policy_tokens", NOT_GIVEN)
    ids, log_probs = _from_logprobs(choice)
    given = choice.get("token_ids")
    if given is not None and _ids(given, "choices[0].token_ids") != ids:
        raise InfraError("policy_tokens", "choices[0].token_ids and the logprobs' tokens disagree")
    return TurnTokens(_ids(prompt, "prompt_token_ids"), ids, log_probs)
