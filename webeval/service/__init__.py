"""The rollout service: the engine behind HTTP in NeMo Gym's shapes, for trainers that call an environment rather
than import it (`webeval serve`, docs/training.md). Nothing below it imports it."""

from webeval.service.http_app import build_app
from webeval.service.rollout_service import RolloutService, ServiceSettings

__all__ = ["RolloutService", "ServiceSettings", "build_app"]
