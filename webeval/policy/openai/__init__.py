"""A model-neutral policy over OpenAI-compatible APIs, chat completions and Responses (vLLM, SGLang, hosted)."""

from webeval.policy.openai.policy import DUMP_FOLDER, OpenAIPolicy, make_adapter
from webeval.policy.openai.profile import ADAPTERS, APIS, Profile, ProfileError, load_profile
from webeval.policy.openai.recording import (
    Recorder, RecordingTransport, ReplayMissing, ReplayTransport, find_recording, read_recording,
)
from webeval.policy.openai.set_of_marks import Mark
from webeval.policy.openai.transport import (
    HttpTransport, PolicyAuthError, Transport, api_key_from, check_policy_endpoint,
)

__all__ = [
    "ADAPTERS", "APIS", "DUMP_FOLDER", "HttpTransport", "Mark", "OpenAIPolicy", "PolicyAuthError", "Profile",
    "ProfileError", "Recorder", "RecordingTransport", "ReplayMissing", "ReplayTransport", "Transport", "api_key_from",
    "check_policy_endpoint", "find_recording", "load_profile", "make_adapter", "read_recording",
]
