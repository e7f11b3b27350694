"""Properties of the monitor's pure parts: channel categories, levels, loss and gradient
baselines (Hypothesis; the training scenarios are in the other files)."""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from trainrecord.monitor.channels import ChannelCounts, ChannelTracker, channel_extremes, classify
from trainrecord.monitor.gradients import GradientAlarms
from trainrecord.monitor.loss import LossTracker

values = st.floats(min_value=-5, max_value=5, allow_nan=False, width=32)


@given(
    st.lists(st.tuples(values, values), min_size=1, max_size=40),
    st.sets(st.integers(min_value=0, max_value=39)),
    st.booleans(),
)
def test_categories_are_disjoint_and_follow_precedence(
    pairs: list[tuple[float, float]], certified: set[int], relu: bool
) -> None:
    total = len(pairs)
    certified = {c for c in certified if c < total}
    high = torch.tensor([max(a, b) for a, b in pairs])
    low = torch.tensor([min(a, b) for a, b in pairs])
    counts = classify(total, certified, high, low, relu, None, 1e-3)
    groups = [set(counts.certified), set(counts.observed), set(counts.flat)]
    assert sum(len(g) for g in groups) == len(set().union(*groups))  # disjoint
    assert set(counts.certified) == certified
    for c in range(total):
        if c in certified:
            continue
        silent = relu and float(high[c]) <= 0
        assert (c in counts.observed) == silent
        assert (c in counts.flat) == (not silent and float(high[c]) == float(low[c]))


@given(st.integers(min_value=1, max_value=64), st.integers(min_value=0, max_value=64))
def test_level_thresholds(total: int, stuck: int) -> None:
    stuck = min(stuck, total)
    counts = ChannelCounts(total=total, observed=list(range(stuck)))
    expected = (
        "none"
        if stuck == 0
        else "all"
        if stuck == total
        else "most"
        if 2 * stuck >= total
        else "some"
    )
    assert counts.level == expected
    assert counts.row() == [0, 0, stuck, 0]


@given(
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=1, max_value=5),
    st.sampled_from([1, 2, 4, 11, 16]),
    st.sampled_from([1, 3, 12]),
)
def test_channel_extremes_match_amax_amin(n: int, c: int, h: int, w: int) -> None:
    x = torch.randn(n, c, h, w)
    high, low = channel_extremes(x, 1)
    assert torch.equal(high, x.amax(dim=(0, 2, 3)))
    assert torch.equal(low, x.amin(dim=(0, 2, 3)))
    y = torch.randn(n, h, c)
    high, low = channel_extremes(y, -1)
    assert torch.equal(high, y.amax(dim=(0, 1))) and torch.equal(low, y.amin(dim=(0, 1)))


@given(
    st.lists(st.floats(min_value=0.0, max_value=0.2), min_size=5, max_size=60),
    st.floats(min_value=0.05, max_value=5.0),
)
def test_a_falling_loss_never_spikes(drops: list[float], start: float) -> None:
    tracker = LossTracker()
    value = start
    for step, drop in enumerate(drops):
        value *= 1.0 - drop
        assert tracker.observe(step, value) == []


@given(st.floats(min_value=1e-6, max_value=1e3), st.integers(min_value=6, max_value=30))
def test_steady_norms_never_alarm_and_zero_is_no_gradient(norm: float, checks: int) -> None:
    alarms = GradientAlarms({"layer": "Linear"}, warmup=5)
    for step in range(checks):
        assert alarms.observe(step, {"layer": norm * (1.0 + 0.01 * (step % 3))}) == []
    [(event, fields)] = alarms.observe(checks, {"layer": 0.0})
    assert event == "alarm" and fields["diagnosis"] == "no_gradient" and fields["sigma"] is None
    assert math.isclose(fields["baseline"], norm, rel_tol=0.03)
    [(event, fields)] = alarms.observe(checks + 1, {"layer": norm})
    assert event == "alarm_cleared"
    assert alarms.observe(checks + 2, {"layer": float("inf")}) == []  # never an alarm


@given(
    st.floats(min_value=1e-6, max_value=1e3),
    st.integers(min_value=6, max_value=30),
    st.floats(min_value=1.1, max_value=6.0),
)
def test_one_check_below_the_band_is_no_alarm_two_are(
    norm: float, checks: int, decades: float
) -> None:
    # A user probe: 3 one-check vanishing alarms (each cleared at the next check) in 400
    # checks of a healthy run at check_every=1: one easy batch dips a decade.
    alarms = GradientAlarms({"layer": "Linear"}, warmup=5)
    for step in range(checks):
        assert alarms.observe(step, {"layer": norm * (1.0 + 0.01 * (step % 3))}) == []
    low = norm * 10.0**-decades
    assert alarms.observe(checks, {"layer": low}) == []  # once: nothing
    assert alarms.observe(checks + 1, {"layer": norm}) == []  # back in the band
    assert alarms.observe(checks + 2, {"layer": low}) == []
    [(event, fields)] = alarms.observe(checks + 3, {"layer": low})  # twice in a row
    assert (event, fields["diagnosis"], fields["step"]) == ("alarm", "vanishing", checks + 3)
    assert fields["grad_norm"] == low and fields["sigma"] is not None and fields["sigma"] < 0
    [(event, fields)] = alarms.observe(checks + 4, {"layer": norm})
    assert (event, fields["diagnosis"]) == ("alarm_cleared", "vanishing")


def steady(alarms: GradientAlarms, norms: dict[str, float], checks: int, loss: float) -> None:
    """``checks`` checks at ``norms`` (a 1 % wobble) and ``loss``, with no event."""
    for step in range(checks):
        wobble = 1.0 + 0.01 * (step % 3)
        assert alarms.observe(step, {k: v * wobble for k, v in norms.items()}, loss) == []


LAYERS = {"a": "Conv2d", "b": "Conv2d", "c": "Linear"}


def steady_network(
    norm: float, checks: int, loss: float
) -> tuple[GradientAlarms, dict[str, float]]:
    """Alarms over :data:`LAYERS` after ``checks`` steady checks at ``loss``, the layers'
    norms ``norm`` times 1, 2, 3; and those norms."""
    alarms = GradientAlarms(dict(LAYERS), warmup=5)
    start = {k: norm * (i + 1) for i, k in enumerate(LAYERS)}
    steady(alarms, start, checks, loss=loss)
    return alarms, start


FALLS = (
    st.floats(min_value=1e-4, max_value=1e2),  # a layer's steady norm
    st.integers(min_value=6, max_value=20),  # steady checks first
    st.floats(min_value=1.2, max_value=6.0),  # decades out of the band (it is 1 decade)
)


@given(*FALLS)
def test_a_fall_the_whole_network_shares_is_no_vanishing_alarm(
    norm: float, checks: int, decades: float
) -> None:
    # A user probe: a MobileNet converging (loss 1.4 -> 0.0002) had 32 of its 36 layers
    # called vanishing at once. A fall every layer shares is not one layer starving.
    alarms, start = steady_network(norm, checks, loss=1.0)
    fallen = {k: v * 10.0**-decades for k, v in start.items()}
    for step in range(checks, checks + 4):  # the loss stays: only the network's shift explains
        assert alarms.observe(step, fallen, 1.0) == []
    # one layer falling alone, by as much, is vanishing (the second check in a row)
    alone, _ = steady_network(norm, checks, loss=1.0)
    low = {**start, "b": start["b"] * 10.0**-decades}
    assert alone.observe(checks, low, 1.0) == []
    [(event, fields)] = alone.observe(checks + 1, low, 1.0)
    assert (event, fields["layer"], fields["diagnosis"]) == ("alarm", "b", "vanishing")


@given(*FALLS)
def test_a_fall_the_loss_explains_is_no_vanishing_alarm(
    norm: float, checks: int, decades: float
) -> None:
    # A user probe: a classifier's gradient fell 2.4 decades as its cross-entropy fell 2.6
    # (convergence), and the alarm never cleared. A fall with the loss falling at least half
    # as many decades is convergence (a squared error's gradient falls with its root).
    explained = GradientAlarms({"head": "Linear"}, warmup=5)
    steady(explained, {"head": norm}, checks, loss=1.0)
    fallen = norm * 10.0**-decades
    for step in range(checks, checks + 4):
        assert explained.observe(step, {"head": fallen}, 10.0 ** -(decades / 2 + 0.01)) == []
    assert explained.baselines["head"].mean < math.log10(norm)  # it entered the baseline
    # the same fall with the loss falling too little is vanishing
    unexplained = GradientAlarms({"head": "Linear"}, warmup=5)
    steady(unexplained, {"head": norm}, checks, loss=1.0)
    assert unexplained.observe(checks, {"head": fallen}, 10.0 ** -(decades / 2 - 0.1)) == []
    [(event, fields)] = unexplained.observe(
        checks + 1, {"head": fallen}, 10.0 ** -(decades / 2 - 0.1)
    )
    assert (event, fields["diagnosis"]) == ("alarm", "vanishing")


@given(*FALLS)
def test_one_check_above_the_band_is_no_alarm_two_are(
    norm: float, checks: int, decades: float
) -> None:
    # A user probe: one hard batch late in training gave an exploding alarm cleared at the
    # next check (14.7 per 1000 steps at batch 8, check_every=1).
    alarms, start = steady_network(norm, checks, loss=1.0)
    high = {k: v * 10.0**decades for k, v in start.items()}
    assert alarms.observe(checks, high, 1.0) == []  # once
    assert alarms.observe(checks + 1, start, 1.0) == []  # back
    assert alarms.observe(checks + 2, high, 1.0) == []
    found = alarms.observe(checks + 3, high, 1.0)  # twice in a row: every layer
    assert [(e, f["layer"], f["diagnosis"]) for e, f in found] == [
        ("alarm", k, "exploding") for k in LAYERS
    ]


@given(
    st.floats(min_value=1e-6, max_value=1e3),
    st.integers(min_value=6, max_value=30),
    st.floats(min_value=1.1, max_value=6.0),
    st.booleans(),
)
def test_one_check_below_the_band_then_one_above_is_no_alarm(
    norm: float, checks: int, decades: float, low_first: bool
) -> None:
    # spec/README.md: vanishing and exploding need two checks in a row on the same side of
    # the band; one below then one above (or the reverse) is two single checks.
    alarms = GradientAlarms({"layer": "Linear"}, warmup=5)
    for step in range(checks):
        assert alarms.observe(step, {"layer": norm * (1.0 + 0.01 * (step % 3))}) == []
    low, high = norm * 10.0**-decades, norm * 10.0**decades
    first, second = (low, high) if low_first else (high, low)
    assert alarms.observe(checks, {"layer": first}) == []
    assert alarms.observe(checks + 1, {"layer": second}) == []  # the other side: no alarm
    [(event, fields)] = alarms.observe(checks + 2, {"layer": second})  # twice on that side
    side = "exploding" if second == high else "vanishing"
    assert (event, fields["diagnosis"], fields["step"]) == ("alarm", side, checks + 2)


@given(st.integers(min_value=10, max_value=64))
def test_a_producer_at_all_stays_there_while_90_percent_are_stuck(total: int) -> None:
    # spec/README.md: a producer whose last event said all stays there (no event) while at
    # least 90 % of its channels are stuck; below that, an event at its level now.
    tracker = ChannelTracker()
    first = tracker.observe(0, "fc", None, ChannelCounts(total, observed=list(range(total))))
    assert first is not None and first[1]["level"] == "all"
    floor = next(n for n in range(total + 1) if n >= 0.9 * total)
    for step, stuck in enumerate(range(total - 1, floor - 1, -1), 1):
        counts = ChannelCounts(total, observed=list(range(stuck)))
        assert tracker.observe(step, "fc", None, counts) is None
    change = tracker.observe(99, "fc", None, ChannelCounts(total, observed=list(range(floor - 1))))
    assert change is not None and change[0] == "channels"
    assert (change[1]["level"], change[1]["n_observed"]) == ("most", floor - 1)


def test_a_channels_event_with_a_certified_channel_is_a_warning() -> None:
    # spec/README.md: severity warning for most/all or any certified channel, else info.
    certified = ChannelTracker().observe(0, "fc", None, ChannelCounts(10, certified=[0]))
    observed = ChannelTracker().observe(0, "fc", None, ChannelCounts(10, observed=[0]))
    assert certified is not None and observed is not None
    assert (certified[0], certified[1]["level"], certified[1]["severity"]) == (
        "channels",
        "some",
        "warning",
    )
    assert (observed[0], observed[1]["level"], observed[1]["severity"]) == (
        "channels",
        "some",
        "info",
    )


def test_a_new_certified_channel_at_the_same_level_writes_an_event() -> None:
    # spec/README.md: channels is written when a producer's (level, set of certified
    # channels) changes; hysteresis holds a level unless its certified set changes.
    tracker = ChannelTracker()
    assert tracker.observe(0, "fc", None, ChannelCounts(10, certified=[0])) is not None
    assert tracker.observe(1, "fc", None, ChannelCounts(10, certified=[0])) is None
    change = tracker.observe(2, "fc", None, ChannelCounts(10, certified=[0, 1]))
    assert change is not None and change[0] == "channels"
    assert (change[1]["level"], change[1]["n_certified"], change[1]["certified"]) == (
        "some",
        2,
        [0, 1],
    )
    # at all, then held at 90 %: a change of the certified set still writes an event
    tracker = ChannelTracker()
    assert tracker.observe(0, "c", None, ChannelCounts(10, observed=list(range(10)))) is not None
    held = ChannelCounts(10, certified=[0], observed=list(range(1, 9)))
    change = tracker.observe(1, "c", None, held)
    assert change is not None and (change[1]["level"], change[1]["n_certified"]) == ("most", 1)


@given(st.integers(min_value=4, max_value=64), st.data())
def test_a_level_wavering_around_the_half_writes_one_event(total: int, data: st.DataObject) -> None:
    # A user probe: a squeeze-excitation layer at 9/18 (most, warning) <-> 8/18 (some)
    # wrote 25 events in 120 checks. A producer leaves most below 40 % of its channels.
    tracker = ChannelTracker()
    half = (total + 1) // 2
    first = tracker.observe(0, "fc", None, ChannelCounts(total, observed=list(range(half))))
    assert first is not None and first[1]["level"] == "most"
    floor = math.ceil(0.4 * total)
    for step in range(1, 20):
        stuck = data.draw(st.integers(min_value=floor, max_value=total - 1))
        assert (
            tracker.observe(step, "fc", None, ChannelCounts(total, observed=list(range(stuck))))
            is None
        )
    change = tracker.observe(20, "fc", None, ChannelCounts(total, observed=list(range(floor - 1))))
    if floor - 1 == 0:
        assert change is not None and change[0] == "channels_cleared"
    else:
        assert change is not None and change[1]["level"] == "some"
    # levels written always match the counts written
    assert change[1]["n_observed"] == floor - 1


@given(*FALLS, st.floats(min_value=0.25, max_value=2.0))
def test_a_fall_the_whole_network_shares_while_the_loss_climbs_is_vanishing(
    norm: float, checks: int, decades: float, climb: float
) -> None:
    # A user probe: Adam at 100 x its learning rate after convergence; every layer's
    # gradient fell two decades while the loss climbed to chance (0.66 -> 1.6), and the
    # network-wide clause explained the fall away (no alarm; no_gradient flapped).
    alarms, start = steady_network(norm, checks, loss=0.5)
    fallen = {k: v * 10.0**-decades for k, v in start.items()}
    high = 0.5 * 10.0**climb
    for step in range(checks, checks + 10):  # the loss climbs first: its recent median moves
        alarms.observe(step, start, high)
    assert alarms.observe(checks + 10, fallen, high) == []
    found = alarms.observe(checks + 11, fallen, high)
    assert [(e, f["layer"], f["diagnosis"]) for e, f in found] == [
        ("alarm", k, "vanishing") for k in LAYERS
    ]


@given(*FALLS)
def test_an_explained_fall_moves_the_baseline_not_its_band(
    norm: float, checks: int, decades: float
) -> None:
    # A fault-detection probe: explained falls entered the variance too, the band grew to
    # 27 decades, and a later fall of one layer alone (weight decay 2.0: 19 decades) was
    # never vanishing. An explained fall moves the mean; the spread stays.
    alarms, start = steady_network(norm, checks, loss=1.0)
    spread = {k: b.std for k, b in alarms.baselines.items()}
    fallen = dict(start)
    for step in range(checks, checks + 20):  # the whole network keeps falling, 1.5 decades
        fallen = {k: v / 10**1.5 for k, v in fallen.items()}  # a check: explained each time
        assert alarms.observe(step, fallen, 1.0) == []
    # the spread grows only while the mean catches up within the band, never by the falls
    assert all(4 * b.std < decades for b in alarms.baselines.values()), spread
    alone = {**fallen, "b": fallen["b"] * 10.0**-decades}  # then one layer falls alone
    assert alarms.observe(checks + 20, alone, 1.0) == []
    [(event, fields)] = alarms.observe(checks + 21, alone, 1.0)
    assert (event, fields["layer"], fields["diagnosis"]) == ("alarm", "b", "vanishing")


@given(*FALLS)
def test_a_fall_with_the_loss_climbing_at_once_is_vanishing(
    norm: float, checks: int, decades: float
) -> None:
    # The same probe: the gradients fell as the loss climbed to chance at the same checks;
    # a median of the last 10 losses lagged 5 checks and explained the fall. The loss now
    # is the median of the last 3.
    alarms, start = steady_network(norm, checks, loss=0.3)
    fallen = {k: v * 10.0**-decades for k, v in start.items()}
    assert alarms.observe(checks, fallen, 2.3) == []
    assert alarms.observe(checks + 1, fallen, 2.3) == []  # 2 of the last 3 at chance now
    found = alarms.observe(checks + 2, fallen, 2.3)
    assert [(e, f["diagnosis"]) for e, f in found] == [("alarm", "vanishing")] * 3
