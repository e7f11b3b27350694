"""The logging sink's one readable line per event: every event type, numbers kept short."""

from __future__ import annotations

import pytest

from tests.diary.helpers import BODIES
from trainrecord.diary import EVENT_TYPES
from trainrecord.monitor.sinks import describe


@pytest.mark.parametrize("event", EVENT_TYPES)
def test_every_event_type_reads_as_one_line(event: str) -> None:
    text = describe({"event": event, **BODIES[event]})
    assert text and "\n" not in text
    step = BODIES[event].get("step")
    if step is not None:
        assert text.startswith(f"step {step}: ")


def test_loss_events_show_short_numbers() -> None:
    spike = describe(
        {"event": "loss_spike", "step": 200, "value": 2.4107630252838135, "baseline": 0.0541}
    )
    assert spike == "step 200: loss spike 2.411 (baseline 0.0541)"
    assert describe({"event": "nonfinite_loss", "step": 3, "value": "NaN"}) == (
        "step 3: non-finite loss NaN"
    )


def test_layers_named_by_sequential_indices_read_as_layers() -> None:
    # An integration probe: "step 200: 0 gradient no_gradient (norm 0, baseline 0.482)":
    # a layer "0" read as a number, and "norm 0" for a layer with no gradient at all.
    alarm = {**BODIES["alarm"], "step": 200, "layer": "0", "kind": "Linear"}
    none = describe({"event": "alarm", **alarm, "diagnosis": "no_gradient", "grad_norm": 0.0})
    assert none == (
        "step 200: layer '0' (Linear): no gradient (none, or all zero; baseline "
        f"{alarm['baseline']:.3g})"
    )
    # grad_norm null: the layer got no gradient at all (0.0 may be an older record's none)
    null = describe({"event": "alarm", **alarm, "diagnosis": "no_gradient", "grad_norm": None})
    assert null == (
        f"step 200: layer '0' (Linear): no gradient (none at all; baseline {alarm['baseline']:.3g})"
    )
    low = describe({"event": "alarm", **alarm, "diagnosis": "vanishing", "grad_norm": 1e-5})
    assert low.startswith("step 200: layer '0' (Linear): gradient vanishing (norm 1e-05,")
    channels = describe({"event": "channels", **BODIES["channels"], "layer": "2"})
    assert channels.startswith(f"step {BODIES['channels']['step']}: layer '2': ")


def test_a_count_of_one_channel_is_said_in_the_singular() -> None:
    # "1 channels proven dead", "repaired 1 channels" before
    certificate = {"event": "certificate", **BODIES["certificate"], "count": 1}
    assert describe(certificate).endswith(": 1 channel proven dead"), describe(certificate)
    repair = {"event": "repair", **BODIES["repair"], "count": 1}
    assert ": repaired 1 channel (" in describe(repair), describe(repair)
    assert ": repaired 2 channels (" in describe({**repair, "count": 2})
