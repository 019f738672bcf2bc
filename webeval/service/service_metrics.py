"""`GET /metrics` in Prometheus' text format: slots busy and free, sessions open, rollouts by outcome, step latency,
requests refused. Labels come from fixed vocabularies (outcomes, failure kinds, layers, reasons), never from free text,
so no reason, URL or secret can reach a metric."""

from __future__ import annotations

from typing import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from webeval.rollouts import RolloutRecord

STEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Live(Collector):
    """Gauges read when scraped: how the slots and sessions stand right now."""

    def __init__(self, read: Callable[[], dict[str, int]]) -> None:
        self.read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self.read()
        slots = GaugeMetricFamily("webeval_slots", "Slots of the engine, by state", labels=["state"])
        slots.add_metric(["busy"], now["slots"] - now["free_slots"])
        slots.add_metric(["free"], now["free_slots"])
        yield slots
        yield GaugeMetricFamily("webeval_sessions_open", "Step sessions whose episode is running",
                                value=now["sessions"])
        yield GaugeMetricFamily("webeval_rollouts_in_flight", "Rollouts started and not yet recorded",
                                value=now["in_flight"])


class ServiceMetrics:
    def __init__(self, read_live: Callable[[], dict[str, int]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.rollouts = Counter("webeval_rollouts", "Rollouts recorded, by outcome and failure kind",
                                ["outcome", "failure_kind"], registry=self.registry)
        self.step_latency = Histogram("webeval_step_latency_seconds",
                                      "Seconds from a tool call to the next observation (session), or one step of a "
                                      "whole episode (run)", ["layer"], buckets=STEP_BUCKETS, registry=self.registry)
        self.refused = Counter("webeval_refused_requests", "Requests refused, by reason", ["reason"],
                               registry=self.registry)
        self.registry.register(_Live(read_live))

    def count(self, record: RolloutRecord, layer: str) -> None:
        self.rollouts.labels(record.outcome or "unknown", record.failure_kind or "").inc()
        if layer == "run":
            for turn in record.turns:
                if "step" in turn.timings:
                    self.step_latency.labels("run").observe(turn.timings["step"])

    def render(self) -> bytes:
        return generate_latest(self.registry)
