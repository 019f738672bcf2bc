"""A model endpoint: where it is, which model, the key (never shown), how each call is bounded and retried, what its
tokens cost; and the one way a client for it is made.

The HTTP library under the `openai` client is httpx2 from openai 3 on, httpx before; both the client and the
session-start check speak through it, with one TLS context per process.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Mapping

from webeval.models.retry import RetryPolicy
from webeval.outcomes.cost import Prices
from webeval.outcomes.redact import PLACEHOLDER, Secret, declare, redact

if TYPE_CHECKING:  # imported where a client is made: `openai` costs 0.6 s of CPU, and an oracle run never needs it
    import openai


def read_key(environ: Mapping[str, str], variable: str | None) -> Secret | None:
    """The key held in an environment variable, declared a secret; None when the variable is unset or empty."""
    key = environ.get(variable) if variable else None
    declare(key)
    return Secret(key) if key else None


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)  # the secret itself, from the environment; never shown
    api_key_env: str | None = None  # the variable it came from: what a message may name
    timeout_s: float = 120.0  # one call, its whole reply included
    retries: int = 2
    backoff_s: float = 1.0
    max_wait_s: float = 60.0
    prices: Prices | None = None  # what its calls cost (the profile's price table); None: unpriced

    def __post_init__(self) -> None:
        if self.api_key and not isinstance(self.api_key, Secret):
            declare(self.api_key)
            object.__setattr__(self, "api_key", Secret(self.api_key))

    @property
    def retrying(self) -> RetryPolicy:
        return RetryPolicy(self.retries, self.backoff_s, self.max_wait_s)

    def redact(self, text: str) -> str:
        return redact(text, self.api_key)

    def client(self) -> openai.AsyncOpenAI:
        """The `openai` client for this endpoint, its own retries off: the one retry policy counts every attempt."""
        import openai

        try:
            from openai import DefaultAsyncHttpx2Client as HttpClient
        except ImportError:  # pragma: no cover - older openai
            from openai import DefaultAsyncHttpxClient as HttpClient
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key or PLACEHOLDER, max_retries=0,
                                  timeout=self.timeout_s, http_client=HttpClient(verify=tls()))

    def blocking_client(self, timeout_s: float) -> Any:
        """A plain HTTP client on this endpoint (base URL, key, TLS) for a caller that must not import `openai`."""
        return http_library().Client(base_url=self.base_url.rstrip("/") + "/", timeout=timeout_s, verify=tls(),
                                     headers={"Authorization": f"Bearer {self.api_key or PLACEHOLDER}"})


def http_library() -> ModuleType:
    try:
        import httpx2 as http
    except ImportError:  # pragma: no cover - older openai
        import httpx as http
    return http


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS settings the client would make (CA bundle included), made once: each task opens its own client, and
    loading the CA bundle again costs 30-40 ms of CPU."""
    return http_library().create_ssl_context()
