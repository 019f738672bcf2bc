"""Model endpoints, for the policy and the judges alike: settings, the client, one retry policy, one preflight, and
the re-ask of a reply with nothing readable. Above tasks, actions and outcomes; below policy and judges."""

from webeval.models.endpoint import Endpoint, read_key
from webeval.models.exchange import (
    EndpointError, EndpointRefused, EndpointRejected, EndpointUnavailable, Exchange, ModelClient, parse_reply,
)
from webeval.models.preflight import PreflightError, chat_probe, preflight
from webeval.models.reask import Reading, Unreadable, ask_until_read
from webeval.models.retry import GaveUp, RetryPolicy, Transient, retry_after

__all__ = [
    "Endpoint", "EndpointError", "EndpointRefused", "EndpointRejected", "EndpointUnavailable", "Exchange", "GaveUp",
    "ModelClient", "PreflightError", "Reading", "RetryPolicy", "Transient", "Unreadable", "ask_until_read",
    "chat_probe", "parse_reply", "preflight", "read_key", "retry_after",
]
