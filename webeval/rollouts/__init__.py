"""Rollouts for training: the same tasks, runtime, policies, judges and outcome rules as evaluation, run by an
asynchronous engine over a pool of slots, one record per rollout (docs/training.md). Nothing here imports pytest."""

from webeval.rollouts.batch import Batch, collect
from webeval.rollouts.engine import EngineSettings, EngineStopped, RolloutEngine
from webeval.rollouts.records import ImageRef, RolloutRecord, TurnRecord
from webeval.rollouts.requests import PolicyEndpoint, RequestError, RolloutRequest, Sampling, parse_request
from webeval.rollouts.store import ROLLOUTS, RolloutStore

__all__ = ["Batch", "EngineSettings", "EngineStopped", "ImageRef", "PolicyEndpoint", "ROLLOUTS", "RequestError",
           "RolloutEngine", "RolloutRecord", "RolloutRequest", "RolloutStore", "Sampling", "TurnRecord", "collect",
           "parse_request"]
