"""The loss at check steps: non-finite values, spikes against a running baseline.

The baseline is an exponentially weighted mean of the finite loss values seen at checks
(plain mean over the first ``1/alpha`` of them), with an exponentially weighted standard
deviation. After ``warmup`` checks a value is a spike when it exceeds the baseline by more
than both ``sigma`` standard deviations and ``ratio`` times the baseline's magnitude; it
has recovered when it comes back within half of that margin. Spike values and non-finite
values never enter the baseline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def nonfinite_token(value: float) -> str:
    """The strict-JSON spelling of a non-finite float: NaN, Infinity or -Infinity."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


@dataclass
class LossTracker:
    """Spike and non-finite detection over the loss values of successive checks."""

    warmup: int = 5
    sigma: float = 4.0
    ratio: float = 1.0
    alpha: float = 0.1
    mean: float = 0.0
    var: float = 0.0
    count: int = 0
    checks: int = 0
    spiking: bool = False

    def _margin(self) -> float:
        return max(self.sigma * math.sqrt(max(self.var, 0.0)), self.ratio * abs(self.mean))

    def observe(self, step: int, value: float) -> list[tuple[str, dict[str, Any]]]:
        """Events for this check's loss value."""
        self.checks += 1
        if not math.isfinite(value):
            return [
                (
                    "nonfinite_loss",
                    {"step": step, "severity": "critical", "value": nonfinite_token(value)},
                )
            ]
        events: list[tuple[str, dict[str, Any]]] = []
        ready = self.checks > self.warmup and self.count >= 2
        excess = value - self.mean
        if ready and not self.spiking and excess > self._margin():
            self.spiking = True
            events.append(
                (
                    "loss_spike",
                    {"step": step, "severity": "warning", "value": value, "baseline": self.mean},
                )
            )
        elif self.spiking and excess <= 0.5 * self._margin():
            self.spiking = False
            events.append(("loss_recovered", {"step": step, "value": value, "baseline": self.mean}))
        if not self.spiking:
            self.count += 1
            weight = max(self.alpha, 1.0 / self.count)
            delta = value - self.mean
            self.mean += weight * delta
            self.var = (1.0 - weight) * (self.var + weight * delta * delta)
        return events
