"""The loss at check steps: non-finite values, spikes against a running baseline.

The baseline is the median of the last ``window_base`` (10) finite loss values seen at
checks; the noise is estimated from the last ``window`` (20) of them as
``1.4826 * median(|successive difference|) / sqrt(2)`` (the standard deviation of white
noise; robust to the loss's downward trend and to the big drops of the first checks).
The *tail* is the 90th percentile of the rises among the same successive differences:
per-batch losses are heavy-tailed (near convergence at batch 8, one batch in ten can be
ten times the median), which their median does not see, and a hard batch is a rise; the
falls are left out, so the first checks' big drop does not blind the first 20 checks (for
Gaussian noise 3 x the tail is about 7 noise units). After ``warmup`` checks a value
is a spike when it exceeds the baseline by more than ``sigma`` noise units, ``tail`` (3)
times the tail, ``ratio`` times the baseline's magnitude and ``floor`` times the
largest baseline of the run (a converged loss of 1e-6 that ticks up to 1e-5 is no spike),
at ``checks_in_a_row`` (2) checks in a row, measured against the baseline and margin from
before the first of them (one hard batch is no spike: at small batches near convergence a
single misclassified sample can be ten times the baseline); it has recovered when it comes
back within half of that margin. A spike's values and non-finite values never enter the
windows; a value above the margin at one check only does (it is the loss's spread).

The loss has also *risen* when it stands far above the level it had before its last
``sustain`` (5) checks: this check's value and the median of those 5 values exceed the
baseline of the values before them (their median of 10) by more than ``sustain_sigma`` (4)
of their noise units, ``ratio`` times that baseline's magnitude (more than twofold) and
``sustain_floor`` (a third) of the largest baseline of the run (with at least 3 values
before those 5). A check where the loss
has risen counts as above the margin; a spike whose second check is above only so is
measured against that earlier level (its baseline and margin), which no value of the last
5 checks entered. For a value above the margin once is the loss's spread and enters the
windows, and its rise can be the largest of the tail's ten or so: the margin was then
3 x that rise for 20 checks (a diverging probe: 11.4 over a baseline of 2.3 made the
margin 25, and 27.8 and 28.7 three and four checks later, 10 x the level, were no spike). A median
of 5 is not moved by one hard batch, nor by two; healthy losses near convergence do rise
5-10 x for a few checks at small batches (0.03 to 0.2-0.3, or 0.2 to 0.7 with Adam at
batch 8), which the floor leaves out.

A check at which a learning rate stands above the one the level was measured at (some
param group's, given to :meth:`LossTracker.observe` as ``lrs``, above the median of its
own at the 10 checks before the last 5; a group added counts, at 0 before) has not risen:
the user's schedule raised the loss (a warm restart: SGD at lr 0.2 every 300 steps took a
loss of 0.05 to 0.33-0.66 for 6 checks at ``check_every=10``; a cyclic lr's upswing to 0.5
took 0.05 to 1.17 and back), and the margin still reports a jump (two checks above it).
The cost: a loss that rises and stays within 10 checks of an lr raise, after one value
above the margin once blinded it, is not reported by this rule (a network that died at a
cyclic lr's peak at ``check_every=10``: its channels and ``no_gradient`` alarms said so;
the diverging probe with its lr doubled just before the rise).

Right after a spike ended (within ``window`` checks of its recovery, or of its values
becoming the loss's level), two checks above the margin are that spike again, with no
event, unless one of them exceeds the spike's top by its own factor (its top over its
baseline, or over the floor when that is higher; see
:meth:`LossTracker._repeats`): a run blowing up recovers at one low batch and spikes again
some checks later, no higher (a loop at lr 0.1, ``check_every=1``: 10 spikes in 340
steps, 5 of them 2-6 checks after a recovery; now 5). Their values enter the windows.

A spike that lasts ``window`` (20) checks without recovering is the loss's new level (a
loss term added, harder data, a curriculum step): its values become the windows, with no
event (the ``loss_spike`` said when it began), and a later spike is measured against that
level (before, the tracker stayed ``spiking`` for the rest of the run and reported no
later fault). The gradient baselines take the layers' new level at that check too
(:attr:`LossTracker.new_level`).

The Monitor starts a new tracker when modules are added, removed or replaced: another
model's loss is a new series (a head replaced for a new task starts at chance; against
the old baseline it was a spike that lasted, and a tracker held at ``spiking`` reports no
later fault). The gradient alarms ask :attr:`LossTracker.above` before calling a rise
the loss explains ``exploding``.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import deque
from dataclasses import dataclass, field
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
    sigma: float = 6.0
    ratio: float = 1.0
    window: int = 20
    window_base: int = 10
    floor: float = 0.05
    tail: float = 3.0
    checks_in_a_row: int = 2
    sustain: int = 5
    sustain_sigma: float = 4.0
    sustain_floor: float = 1 / 3
    values: deque[float] = field(default_factory=deque)
    peak: float = 0.0  # the largest |baseline| so far
    checks: int = 0
    spiking: bool = False
    _frozen: tuple[float, float] = (0.0, 0.0)
    _frozen_level: tuple[float, float] | None = None  # the level before the last checks
    _above: int = 0  # checks in a row above the margin (while not spiking)
    _held: list[float] = field(default_factory=list)  # their values: a spike's, or the spread's
    _lasting: list[float] = field(default_factory=list)  # the values of a spike that lasts
    _lrs: deque[tuple[float, ...] | None] = field(default_factory=deque)  # at the last checks
    # the last spike ended: its check, top, baseline and the floor then (see _repeats)
    _ended: tuple[int, float, float, float] | None = None
    _again: bool = False  # this check was the last spike's level again (see _repeats)
    new_level: bool = False
    """Whether the last check's value made a spike that lasted the loss's new level (the
    gradient alarms then take the layers' new level too: see ``GradientAlarms.observe``)."""

    @property
    def above(self) -> bool:
        """Whether the value of the last check stood above the margin: a spike, or above
        it once, or the last spike's level again (the gradient alarms leave a rise the loss
        explains to this rule)."""
        return self.spiking or self._above > 0 or self._again

    @property
    def baseline(self) -> float:
        """Median of the most recent values."""
        return statistics.median(list(self.values)[-self.window_base :])

    @staticmethod
    def _noise(values: list[float]) -> float:
        """The standard deviation of white noise, from the median successive difference."""
        diffs = [abs(b - a) for a, b in itertools.pairwise(values)]
        return 1.4826 * statistics.median(diffs) / math.sqrt(2.0) if diffs else 0.0

    def _level(self) -> tuple[float, float] | None:
        """The baseline and the risen margin of the values before the last ``sustain - 1``
        (None while fewer than 3)."""
        before = list(self.values)[: max(0, len(self.values) - (self.sustain - 1))]
        if len(before) < 3:
            return None
        baseline = statistics.median(before[-self.window_base :])
        margin = max(
            self.sustain_sigma * self._noise(before[-self.window :]),
            self.ratio * abs(baseline),
            self.sustain_floor * self.peak,
        )
        return baseline, margin

    def _risen(self, value: float) -> bool:
        """Whether this value and the median of the last ``sustain`` stand above the level."""
        if self._frozen_level is None:
            return False
        baseline, margin = self._frozen_level
        earlier = [*self.values, *self._held]
        recent = [*earlier[max(0, len(earlier) - self.sustain + 1) :], value]
        return value - baseline > margin and statistics.median(recent) - baseline > margin

    def _lr_rose(self) -> bool:
        """Whether a learning rate stands above the one the level was measured at: some
        param group's at this check above the median of its own at the ``window_base``
        checks before the last ``sustain`` (0 at a check before the group was added)."""
        now = self._lrs[-1] if self._lrs else None
        level = [lrs for lrs in list(self._lrs)[: -self.sustain] if lrs is not None]
        if now is None or not level:
            return False
        return any(
            lr > statistics.median(then[i] if i < len(then) else 0.0 for then in level)
            for i, lr in enumerate(now)
        )

    def _margin(self, baseline: float) -> float:
        values = list(self.values)
        noise = self._noise(values)
        rises = [b - a for a, b in itertools.pairwise(values) if b > a]
        tail = statistics.quantiles(rises, n=10)[-1] if len(rises) >= 2 else 0.0
        return max(
            self.sigma * noise,
            self.tail * tail,
            self.ratio * abs(baseline),
            self.floor * self.peak,
        )

    def observe(
        self, step: int, value: float, lrs: tuple[float, ...] | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """Events for this check's loss value; ``lrs``: the optimizer's learning rate per
        param group at this check (None: not known)."""
        self.checks += 1
        self._lrs.append(lrs)
        while len(self._lrs) > self.window_base + self.sustain:
            self._lrs.popleft()
        self.new_level = False
        self._again = False
        if not math.isfinite(value):
            return [
                (
                    "nonfinite_loss",
                    {"step": step, "severity": "critical", "value": nonfinite_token(value)},
                )
            ]
        events: list[tuple[str, dict[str, Any]]] = []
        if self.spiking:
            baseline, margin = self._frozen
            if value - baseline <= 0.5 * margin:
                self.spiking = False
                self._end()
                events.append(
                    ("loss_recovered", {"step": step, "value": value, "baseline": baseline})
                )
            else:
                self._lasting.append(value)
                if len(self._lasting) >= self.window:  # the loss's new level: measured from it
                    self.values = deque(self._lasting)
                    self._end()
                    self.spiking = False
                    self.new_level = True
                    return events
        elif self.checks > self.warmup and len(self.values) >= 3:
            if not self._above:
                baseline = self.baseline
                self._frozen = (baseline, self._margin(baseline))
                self._frozen_level = self._level()
            baseline, margin = self._frozen
            over = value - baseline > margin
            risen = not over and self._risen(value) and not self._lr_rose()
            if over or risen:
                self._above += 1
                self._held.append(value)
                if self._above < self.checks_in_a_row:
                    return events  # above once: a spike if it stays there at the next check
                self._above = 0
                if self._repeats():  # the last spike's level again: its values are kept
                    self._again = True
                    self._keep([])
                    return events
                self.spiking = True
                if risen and self._frozen_level is not None:  # measured from the level before
                    self._frozen = self._frozen_level
                    baseline = self._frozen[0]
                self._lasting = list(self._held)  # (should the spike last: its level)
                self._held.clear()  # a spike's values never enter the windows
                events.append(
                    (
                        "loss_spike",
                        {"step": step, "severity": "warning", "value": value, "baseline": baseline},
                    )
                )
            else:
                self._above = 0
        if not self.spiking:
            self._keep([value])
        return events

    def _keep(self, values: list[float]) -> None:
        """The values held above the margin and ``values`` enter the windows (a lone hard
        batch is the loss's own spread)."""
        for kept in [*self._held, *values]:
            self.values.append(kept)
        self._held.clear()
        while len(self.values) > self.window:
            self.values.popleft()
        self.peak = max(self.peak, abs(self.baseline))

    def _end(self) -> None:
        """The spike ended (recovered, or its values the loss's new level): noted for
        :meth:`_repeats`."""
        self._ended = (self.checks, max(self._lasting), self._frozen[0], self.floor * self.peak)
        self._lasting.clear()

    def _repeats(self) -> bool:
        """Whether the checks held above the margin, right after a spike ended (within
        ``window`` checks), stay within that spike's level raised by its own factor: its
        top times its top over its baseline (twice its top less its baseline, for a
        baseline at or below 0). Such a spike is the last one again, not a new one: a loss
        that keeps rising and bouncing (a run blowing up) recovered at one low batch and
        spiked again some checks later, or took a lasting spike's values as its level and
        spiked over them at once.

        The factor is taken over a baseline no lower than the floor (``floor`` times the
        run's largest baseline, when the spike ended), below which no rise counts: over a
        converged loss near 0 the factor is the baseline's noise, not the spike's (an MLP
        regression at a loss of 2e-4, two batches with outliers at 0.55: a factor of 2700,
        and the targets in other units 3 checks after its recovery, the loss at 408 and above
        10 for 40 checks,
        were "that spike again", with no event at all)."""
        if self._ended is None or self.checks - self._ended[0] > self.window:
            return False
        _, top, baseline, floor = self._ended
        bound = top * top / max(baseline, floor) if baseline > 0 else 2 * top - baseline
        return max(self._held) <= bound
