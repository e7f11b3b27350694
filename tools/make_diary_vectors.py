"""Write spec/vectors/diary/*.json: the diary schema vectors (run by hand, then commit).

Each event type gets a valid line (with a correct chain hash, so the vectors double as
examples) and a set of single-field mutations, each naming the rule it breaks. The lines
are built here once; the committed vector files are the source the tests read.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "spec" / "vectors" / "diary"
BASE = "https://trainrecord.dev/schemas/diary/"
GENESIS = "0" * 64
H = hashlib.sha256(b"trainrecord").hexdigest()

BODIES: dict[str, dict[str, Any]] = {
    "run_start": {
        "name": "exp1",
        "tool": "trainrecord 0.1.0",
        "model": "SmallCNN",
        "parameters": 1234,
        "layers": ["conv1.0", "conv2.0", "classifier.0"],
        "architecture_sha256": H,
        "optimizer": "SGD",
        "python": "3.11.9",
        "torch": "2.13.0",
        "platform": "Linux-6.1-x86_64",
        "config": {"lr": 0.1},
        "record_version": 1,
    },
    "structure": {
        "step": 0,
        "pairs": {"conv1.0": "conv1.1"},
        "relu_after": ["conv1.1"],
        "graph": "loss",
    },
    "manifest": {
        "step": 0,
        "check_every": 50,
        "layers": ["conv1.0"],
        "producers": [{"layer": "conv1.0", "certifiable": True, "reason": None}],
        "channel_checks": {"list_limit": 16},
        "repair": False,
        "precision": "float32",
        "distributed": None,
        "notes": [],
    },
    "alarm": {
        "step": 450,
        "severity": "warning",
        "layer": "conv2.0",
        "kind": "Conv2d",
        "diagnosis": "no_gradient",
        "grad_norm": 0.0,
        "baseline": 0.0123,
        "sigma": None,
    },
    "alarm_cleared": {
        "step": 900,
        "layer": "conv2.0",
        "diagnosis": "no_gradient",
        "grad_norm": 0.01,
        "baseline": 0.0123,
    },
    "channels": {
        "step": 450,
        "severity": "warning",
        "layer": "conv2.0",
        "batchnorm": "conv2.1",
        "channels": 64,
        "level": "all",
        "n_certified": 64,
        "n_flat": 0,
        "n_observed": 0,
        "n_decayed": 0,
        "certified": [0, 1, 2],
        "flat": [],
        "observed": [],
    },
    "channels_cleared": {
        "step": 900,
        "severity": "info",
        "layer": "conv2.0",
        "batchnorm": "conv2.1",
        "channels": 64,
        "level": "none",
        "n_certified": 0,
        "n_flat": 0,
        "n_observed": 0,
        "n_decayed": 0,
        "certified": [],
        "flat": [],
        "observed": [],
    },
    "certificate": {
        "step": 450,
        "severity": "proof",
        "layer": "conv2.0",
        "batchnorm": "conv2.1",
        "channels": [0, 1],
        "count": 64,
        "statement": "BatchNorm gamma = 0 and beta <= 0 before a ReLU: output is 0.",
        "assumes": ["BatchNorm in training mode", "the ReLU is the only consumer"],
    },
    "certificate_refused": {
        "step": 450,
        "severity": "info",
        "layer": "conv3.0",
        "batchnorm": None,
        "count": 3,
        "reason": "the ReLU output has a second consumer",
    },
    "no_gradients": {
        "step": 50,
        "severity": "warning",
        "message": "call monitor.step() after loss.backward()",
    },
    "loss_reduced": {"step": 0, "severity": "info", "elements": 32},
    "repair": {
        "step": 500,
        "severity": "action",
        "layer": "conv2.0",
        "batchnorm": "conv2.1",
        "channels": [0, 1],
        "count": 2,
        "method": "kaiming_uniform",
        "optimizer_slices_reset": 2,
        "modification_class": "discrete",
        "bound": None,
        "delta_norm": 1.5,
        "weight_norm_before": 0.0,
        "weight_norm_after": 1.5,
        "relative_change": None,
        "rng": "global",
    },
    "loss_spike": {"step": 120, "severity": "warning", "value": 9.5, "baseline": 2.3},
    "loss_recovered": {"step": 170, "value": 2.4, "baseline": 2.3},
    "nonfinite_loss": {"step": 77, "severity": "critical", "value": "NaN"},
    "nonfinite_gradient": {"step": 77, "severity": "critical", "layers": ["conv1.0"]},
    "skipped_step": {"step": 3, "severity": "info", "scale": 65536.0, "layers": ["conv1.0"]},
    "sink_error": {"sink": "callback", "error": "RuntimeError: boom"},
    "run_end": {
        "steps": 1000,
        "checks": 20,
        "counts": {"alarm": 2, "checks_without_gradients": 0},
        "metrics_sha256": H,
    },
}


def line(event: str, body: dict[str, Any], seq: int = 1, prev: str = H) -> dict[str, Any]:
    """A full line with a correct hash (the vectors double as chain examples)."""
    core = {"seq": seq, "time": 1764460800.123, "event": event, **body}
    text = json.dumps(core, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256((prev + text).encode()).hexdigest()
    return {**core, "prev": prev, "hash": digest}


def drop(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


def setf(d: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(d)
    out[key] = value
    return out


# (field, bad value, rule, description) per event; "MISSING" drops the field.
MISSING = object()
SHARED: list[tuple[str, Any, str, str]] = [
    ("step", -1, "diary.step.negative", "a negative step is refused"),
    ("step", 1.0, "diary.step.type", "a step written 1.0 is refused: integers are integer tokens"),
]
MUTATIONS: dict[str, list[tuple[str, Any, str, str]]] = {
    "run_start": [
        ("start_step", -1, "diary.count.negative", "a negative start_step is refused"),
        ("start_step", 240.0, "diary.count.type", "start_step written 240.0 is refused"),
        (
            "record_version",
            2,
            "diary.run_start.record_version.unsupported",
            "record_version 2 is refused: only 1 is known",
        ),
        (
            "record_version",
            True,
            "diary.run_start.record_version.unsupported",
            "record_version true is refused: 1 is an integer, not a boolean",
        ),
        ("parameters", -5, "diary.count.negative", "a negative parameter count is refused"),
        (
            "parameters",
            "1234",
            "diary.count.type",
            "a parameter count given as a string is refused",
        ),
        ("layers", "conv1", "diary.layer_list.type", "layers must be a list of names"),
        ("layers", [""], "diary.layer.empty", "an empty layer name is refused"),
        ("layers", [3], "diary.layer.type", "a layer name must be a string"),
        (
            "architecture_sha256",
            H.upper(),
            "diary.sha256.format",
            "an uppercase architecture_sha256 is refused",
        ),
        (
            "architecture_sha256",
            H + "\n",
            "diary.sha256.format",
            "an architecture_sha256 with a trailing newline is refused",
        ),
        (
            "architecture_sha256",
            5,
            "diary.sha256.type",
            "an architecture_sha256 that is not a string is refused",
        ),
        (
            "optimizer",
            3,
            "diary.run_start.optimizer.type",
            "an optimizer that is not a name is refused",
        ),
        (
            "torch",
            2.13,
            "diary.run_start.torch.type",
            "a torch version written as a number is refused",
        ),
        ("config", [1], "diary.run_start.config.type", "a config that is a list is refused"),
        ("name", "", "diary.text.empty", "an empty run name is refused"),
        ("name", None, "diary.text.type", "a null run name is refused"),
        (
            "python",
            MISSING,
            "diary.run_start.fields.missing",
            "run_start without python is refused",
        ),
        (
            "severity",
            "bogus",
            "diary.severity.value",
            "an unlisted severity on run_start is checked",
        ),
        ("step", -3, "diary.step.negative", "an unlisted step on run_start is never negative"),
    ],
    "structure": [
        ("pairs", [], "diary.structure.pairs.type", "pairs must be an object"),
        (
            "graph",
            "outputs",
            "diary.structure.graph.value",
            "graph must be loss, model outputs or null",
        ),
        ("graph", MISSING, "diary.structure.fields.missing", "structure without graph is refused"),
    ],
    "manifest": [
        ("check_every", 0, "diary.manifest.check_every.range", "check_every 0 is refused"),
        (
            "check_every",
            "50",
            "diary.manifest.check_every.type",
            "check_every as a string is refused",
        ),
        ("producers", {}, "diary.manifest.producers.type", "producers must be a list"),
        (
            "producers",
            [{"layer": "conv1.0"}],
            "diary.manifest.producers.fields",
            "a producer without certifiable is refused",
        ),
        (
            "producers",
            [{"layer": "conv1.0", "certifiable": "yes"}],
            "diary.manifest.producers.certifiable",
            "certifiable must be a boolean",
        ),
        (
            "channel_checks",
            "on",
            "diary.manifest.channel_checks.type",
            "channel_checks must be a boolean or an object",
        ),
        ("repair", None, "diary.manifest.repair.type", "repair must be a boolean or an object"),
        (
            "distributed",
            "ddp",
            "diary.manifest.distributed.type",
            "distributed must be an object or null",
        ),
        ("notes", [1], "diary.manifest.notes.type", "notes must be strings"),
        ("notes", MISSING, "diary.manifest.fields.missing", "manifest without notes is refused"),
    ],
    "alarm": [
        (
            "severity",
            "critical",
            "diary.alarm.severity.fixed",
            "an alarm's severity is always warning",
        ),
        ("diagnosis", "dead", "diary.alarm.diagnosis.value", "an unknown diagnosis is refused"),
        ("grad_norm", -0.5, "diary.norm.negative", "a negative gradient norm is refused"),
        (
            "grad_norm",
            "NaN",
            "diary.norm.type",
            "a non-finite gradient norm is refused in an alarm",
        ),
        ("sigma", "3", "diary.alarm.sigma.type", "sigma as a string is refused"),
        ("baseline", MISSING, "diary.alarm.fields.missing", "an alarm without baseline is refused"),
        ("baseline", -1.0, "diary.norm.negative", "a negative baseline is refused"),
        ("layer", MISSING, "diary.alarm.fields.missing", "an alarm without layer is refused"),
        ("kind", "", "diary.text.empty", "an empty kind is refused"),
    ],
    "alarm_cleared": [
        (
            "diagnosis",
            "ok",
            "diary.alarm_cleared.diagnosis.value",
            "an unknown diagnosis is refused",
        ),
        (
            "grad_norm",
            MISSING,
            "diary.alarm_cleared.fields.missing",
            "alarm_cleared without grad_norm is refused",
        ),
        (
            "severity",
            "bogus",
            "diary.severity.value",
            "alarm_cleared lists no severity; one it carries is still one of the five",
        ),
    ],
    "channels": [
        ("level", "half", "diary.channels.level.value", "an unknown level is refused"),
        ("batchnorm", "", "diary.batchnorm.empty", "an empty batchnorm name is refused"),
        (
            "batchnorm",
            1,
            "diary.batchnorm.type",
            "a batchnorm that is not a name or null is refused",
        ),
        ("certified", "0,1", "diary.channel_list.type", "channel indices must be a list"),
        ("certified", [-1], "diary.channel_list.item", "a negative channel index is refused"),
        ("flat", [0.5], "diary.channel_list.item", "a fractional channel index is refused"),
        ("severity", "fatal", "diary.severity.value", "an unknown severity is refused"),
        (
            "severity",
            "proof",
            "diary.channels.severity.value",
            "a channels event is no certificate: severity proof is refused (info or warning)",
        ),
        (
            "severity",
            "critical",
            "diary.channels.severity.value",
            "a channels event is no non-finite value: severity critical is refused",
        ),
        (
            "severity",
            "action",
            "diary.channels.severity.value",
            "a channels event is no repair: severity action is refused",
        ),
        (
            "n_decayed",
            MISSING,
            "diary.channels.fields.missing",
            "channels without n_decayed is refused",
        ),
        ("channels", True, "diary.count.type", "a channel count of true is refused"),
    ],
    "channels_cleared": [
        ("level", "few", "diary.channels_cleared.level.value", "an unknown level is refused"),
        (
            "severity",
            "proof",
            "diary.channels.severity.value",
            "a channels_cleared event is no certificate: severity proof is refused",
        ),
        (
            "severity",
            "critical",
            "diary.channels.severity.value",
            "a channels_cleared event is no non-finite value: severity critical is refused",
        ),
        (
            "observed",
            MISSING,
            "diary.channels_cleared.fields.missing",
            "channels_cleared without observed is refused",
        ),
    ],
    "certificate": [
        (
            "severity",
            "info",
            "diary.certificate.severity.fixed",
            "a certificate's severity is always proof",
        ),
        ("assumes", "training mode", "diary.certificate.assumes.type", "assumes must be a list"),
        ("assumes", [""], "diary.certificate.assumes.type", "an empty assumption is refused"),
        (
            "statement",
            MISSING,
            "diary.certificate.fields.missing",
            "a certificate without statement is refused",
        ),
    ],
    "certificate_refused": [
        (
            "severity",
            "warning",
            "diary.certificate_refused.severity.fixed",
            "certificate_refused's severity is always info",
        ),
        (
            "reason",
            MISSING,
            "diary.certificate_refused.fields.missing",
            "certificate_refused without reason is refused",
        ),
    ],
    "no_gradients": [
        (
            "severity",
            "info",
            "diary.no_gradients.severity.fixed",
            "no_gradients' severity is always warning",
        ),
        (
            "message",
            MISSING,
            "diary.no_gradients.fields.missing",
            "no_gradients without message is refused",
        ),
    ],
    "loss_reduced": [
        (
            "severity",
            "warning",
            "diary.loss_reduced.severity.fixed",
            "loss_reduced's severity is always info",
        ),
        (
            "elements",
            1,
            "diary.loss_reduced.elements.range",
            "a one-element loss is not a reduced loss",
        ),
        ("elements", 32.0, "diary.loss_reduced.elements.type", "elements written 32.0 is refused"),
        (
            "elements",
            MISSING,
            "diary.loss_reduced.fields.missing",
            "loss_reduced without elements is refused",
        ),
    ],
    "repair": [
        ("severity", "info", "diary.repair.severity.fixed", "a repair's severity is always action"),
        (
            "modification_class",
            "continuous",
            "diary.repair.modification_class.fixed",
            "modification_class is always discrete",
        ),
        ("bound", 0.1, "diary.repair.bound.fixed", "bound is always null"),
        (
            "relative_change",
            -1.0,
            "diary.repair.relative_change.negative",
            "a negative relative change is refused",
        ),
        (
            "relative_change",
            "Infinity",
            "diary.repair.relative_change.type",
            "relative_change is a number or null, never a non-finite token",
        ),
        (
            "delta_norm",
            MISSING,
            "diary.repair.fields.missing",
            "a repair without delta_norm is refused",
        ),
        (
            "bound",
            MISSING,
            "diary.repair.fields.missing",
            "a repair without bound is refused: null must be written",
        ),
        ("method", 3, "diary.text.type", "a method that is not text is refused"),
    ],
    "loss_spike": [
        (
            "severity",
            "critical",
            "diary.loss_spike.severity.fixed",
            "a loss spike's severity is always warning",
        ),
        (
            "value",
            "Infinity",
            "diary.number.type",
            "a non-finite loss is a nonfinite_loss event, not a spike",
        ),
        (
            "baseline",
            MISSING,
            "diary.loss_spike.fields.missing",
            "loss_spike without baseline is refused",
        ),
    ],
    "loss_recovered": [
        ("value", None, "diary.number.type", "a null loss value is refused"),
        (
            "baseline",
            MISSING,
            "diary.loss_recovered.fields.missing",
            "loss_recovered without baseline is refused",
        ),
    ],
    "nonfinite_loss": [
        (
            "severity",
            "warning",
            "diary.nonfinite_loss.severity.fixed",
            "nonfinite_loss's severity is always critical",
        ),
        (
            "value",
            2.5,
            "diary.nonfinite.token",
            "a finite value is refused: the loss was not finite",
        ),
        ("value", "nan", "diary.nonfinite.token", "the token is spelled NaN exactly"),
        (
            "value",
            MISSING,
            "diary.nonfinite_loss.fields.missing",
            "nonfinite_loss without value is refused",
        ),
    ],
    "nonfinite_gradient": [
        (
            "severity",
            "info",
            "diary.nonfinite_gradient.severity.fixed",
            "nonfinite_gradient's severity is always critical",
        ),
        (
            "layers",
            MISSING,
            "diary.nonfinite_gradient.fields.missing",
            "nonfinite_gradient without layers is refused",
        ),
    ],
    "skipped_step": [
        (
            "severity",
            "warning",
            "diary.skipped_step.severity.fixed",
            "skipped_step's severity is always info",
        ),
        ("scale", 0, "diary.skipped_step.scale.range", "a zero scale is refused"),
        ("scale", "65536", "diary.skipped_step.scale.type", "a scale given as a string is refused"),
        (
            "scale",
            MISSING,
            "diary.skipped_step.fields.missing",
            "skipped_step without scale is refused",
        ),
    ],
    "sink_error": [
        ("sink", MISSING, "diary.sink_error.fields.missing", "sink_error without sink is refused"),
        ("error", "", "diary.text.empty", "an empty error text is refused"),
        (
            "step",
            "x",
            "diary.step.type",
            "a step sink_error does not list is still a step: a string is refused",
        ),
        ("step", -3, "diary.step.negative", "a step on a sink_error is never negative"),
        (
            "severity",
            "bogus",
            "diary.severity.value",
            "a severity sink_error does not list is still one of the five",
        ),
        ("layer", 5, "diary.layer.type", "a layer on a sink_error is a module name: 5 is refused"),
        ("layer", "", "diary.layer.empty", "a layer on a sink_error is not empty"),
    ],
    "run_end": [
        ("counts", [], "diary.run_end.counts.type", "counts must be an object"),
        ("counts", {"alarm": -1}, "diary.run_end.counts.value", "a negative count is refused"),
        ("counts", {"alarm": 1.5}, "diary.run_end.counts.value", "a fractional count is refused"),
        ("metrics_sha256", "abc", "diary.sha256.format", "a short metrics_sha256 is refused"),
        (
            "metrics_sha256",
            MISSING,
            "diary.run_end.fields.missing",
            "run_end without metrics_sha256 is refused",
        ),
        ("steps", -1, "diary.count.negative", "a negative step total is refused"),
        (
            "error",
            "RuntimeError",
            "diary.run_end.error.type",
            "an error that is a bare string is refused",
        ),
        (
            "error",
            {"type": "RuntimeError"},
            "diary.run_end.error.fields.missing",
            "an error without its message is refused",
        ),
        (
            "error",
            {"type": "", "message": "boom"},
            "diary.text.empty",
            "an error with an empty type is refused",
        ),
        (
            "error",
            {"type": "RuntimeError", "message": "x" * 501},
            "diary.run_end.error.message",
            "an error message over 500 characters is refused",
        ),
    ],
}

COMMON_MUTATIONS: list[tuple[str, Any, str, str]] = [
    ("seq", -1, "diary.seq.negative", "a negative seq is refused"),
    ("seq", 1.0, "diary.seq.type", "seq written 1.0 is refused"),
    ("seq", True, "diary.seq.type", "seq true is refused"),
    ("time", "1764460800.123", "diary.time.type", "a time given as a string is refused"),
    ("time", -1.0, "diary.time.negative", "a negative time is refused"),
    ("event", "", "diary.event.format", "an empty event is refused"),
    ("event", 7, "diary.event.type", "an event that is not a string is refused"),
    ("prev", "0" * 63, "diary.prev.format", "a prev of 63 characters is refused"),
    ("prev", "0" * 64 + "\n", "diary.prev.format", "a prev with a trailing newline is refused"),
    ("prev", None, "diary.prev.type", "a null prev is refused"),
    ("hash", "G" * 64, "diary.hash.format", "a hash with non-hex characters is refused"),
    ("hash", 0, "diary.hash.type", "a hash that is not a string is refused"),
    ("hash", MISSING, "diary.line.fields.missing", "a line without hash is refused"),
    ("time", MISSING, "diary.line.fields.missing", "a line without time is refused"),
    (
        "step",
        "x",
        "diary.step.type",
        "an unknown event's step is still a step: a string is refused",
    ),
    ("step", -1, "diary.step.negative", "an unknown event's step is never negative"),
    ("severity", "bogus", "diary.severity.value", "an unknown event's severity is one of the five"),
    ("layer", 5, "diary.layer.type", "an unknown event's layer is a module name: 5 is refused"),
    ("layer", "", "diary.layer.empty", "an unknown event's layer is not empty"),
]


def mutate(base: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    return drop(base, field) if value is MISSING else setf(base, field, value)


def alarm_nulls(valid: dict[str, Any]) -> list[dict[str, Any]]:
    """The alarm's if/then: a null baseline (diary.alarm.baseline.null) and a null grad_norm
    (diary.alarm.grad_norm.null) only for diagnosis no_gradient."""
    tests: list[dict[str, Any]] = [
        {
            "description": "a no_gradient alarm on a layer that never had a gradient has a null "
            "baseline",
            "data": setf(setf(valid, "diagnosis", "no_gradient"), "baseline", None),
            "valid": True,
        }
    ]
    for diagnosis, norm in (("vanishing", 1e-09), ("exploding", 1000.0)):
        a = "an" if diagnosis[0] in "aeiou" else "a"
        tests.append(
            {
                "description": f"{a} {diagnosis} alarm with a null baseline is refused: only "
                "no_gradient has no baseline",
                "data": {**valid, "diagnosis": diagnosis, "grad_norm": norm, "baseline": None},
                "valid": False,
                "rule": "diary.alarm.baseline.null",
            }
        )
    tests.append(
        {
            "description": "a vanishing alarm with a numeric baseline is valid",
            "data": line(
                "alarm",
                {**BODIES["alarm"], "diagnosis": "vanishing", "grad_norm": 1e-09, "sigma": -4.2},
            ),
            "valid": True,
        }
    )
    tests += [
        {
            "description": "a no_gradient alarm on a layer that got no gradient at all has a null "
            "grad_norm, as its metrics row has",
            "data": setf(valid, "grad_norm", None),
            "valid": True,
        },
        {
            "description": "a no_gradient alarm on a layer that never had a gradient has a null "
            "grad_norm and a null baseline",
            "data": {**valid, "grad_norm": None, "baseline": None},
            "valid": True,
        },
    ]
    for diagnosis, sigma in (("vanishing", -4.2), ("exploding", 4.2)):
        a = "an" if diagnosis[0] in "aeiou" else "a"
        tests.append(
            {
                "description": f"{a} {diagnosis} alarm with a null grad_norm is refused: only "
                "no_gradient is written for a layer without a gradient",
                "data": {**valid, "diagnosis": diagnosis, "grad_norm": None, "sigma": sigma},
                "valid": False,
                "rule": "diary.alarm.grad_norm.null",
            }
        )
    return tests


def event_group(event: str) -> dict[str, Any]:
    valid = line(
        event,
        BODIES[event],
        seq=0 if event == "run_start" else 1,
        prev=GENESIS if event == "run_start" else H,
    )
    tests: list[dict[str, Any]] = [
        {"description": f"a complete {event} line is valid", "data": valid, "valid": True},
        {
            "description": f"a {event} line with an extra field is valid: lines may carry more fields",
            "data": setf(valid, "x_extra", {"any": [1, 2]}),
            "valid": True,
        },
        {
            "description": f"a {event} schema refuses a line of another event type",
            "data": setf(valid, "event", "alarm" if event != "alarm" else "repair"),
            "valid": False,
            "rule": "diary.event.mismatch",
        },
    ]
    if event == "alarm":
        tests += alarm_nulls(valid)
    if event == "run_end":
        for error, what in (
            ({"type": "RuntimeError", "message": "CUDA out of memory"}, "an exception"),
            ({"type": "KeyboardInterrupt", "message": ""}, "Ctrl+C (an empty message)"),
            (
                {
                    "type": "SIGTERM",
                    "message": "the process was stopped by SIGTERM (a scheduler's stop or "
                    "preemption, docker stop, Kubernetes); the next step would have been 1200",
                },
                "a SIGTERM (not an exception: its type is the signal's name)",
            ),
            (None, "nothing (null)"),
        ):
            tests.append(
                {
                    "description": f"a run_end line whose error says {what} ended the run is valid",
                    "data": setf(valid, "error", error),
                    "valid": True,
                }
            )
    if event in ("sink_error", "alarm_cleared", "loss_recovered"):
        tests.append(
            {
                "description": f"a {event} line carrying a step, severity and layer of the seed's "
                "meanings (its list names not all of them) is valid",
                "data": {**valid, "step": 3, "severity": "info", "layer": "conv1.0"},
                "valid": True,
            }
        )
    if event == "run_start":
        tests.append(
            {
                "description": "a run_start line of a run continued from step 240 is valid",
                "data": setf(valid, "start_step", 240),
                "valid": True,
            }
        )
    fields = list(BODIES[event])
    muts = list(MUTATIONS[event])
    if "step" in fields:
        muts += SHARED
    muts += [
        ("seq", 1.0, "diary.seq.type", f"seq written 1.0 is refused in a {event} line"),
        ("time", True, "diary.time.type", f"time true is refused in a {event} line"),
    ]
    for field, value, rule, desc in muts:
        tests.append(
            {"description": desc, "data": mutate(valid, field, value), "valid": False, "rule": rule}
        )
    return {
        "description": f"diary event {event}",
        "schema": f"{BASE}events/{event}.schema.json",
        "tests": tests,
    }


def common_groups() -> list[dict[str, Any]]:
    alarm = line("alarm", BODIES["alarm"])
    unknown = line("lr_changed", {"step": 10, "lr": 0.01})
    tests = [
        {
            "description": "an unknown event type with the common fields is valid",
            "data": unknown,
            "valid": True,
        },
        {
            "description": "the common fields alone make a valid line of an unknown event",
            "data": line("checkpoint", {}),
            "valid": True,
        },
        {
            "description": "a time on a whole second is the float token 1764460800.0 (an integer "
            "token, or more than three decimals, is refused by the verifier: "
            "diary.time.precision, not a schema rule)",
            "data": setf(line("checkpoint", {}), "time", 1764460800.0),
            "valid": True,
        },
    ]
    for field, value, rule, desc in COMMON_MUTATIONS:
        tests.append(
            {
                "description": desc,
                "data": mutate(unknown, field, value),
                "valid": False,
                "rule": rule,
            }
        )
    tests.append(
        {
            "description": "a line that is not an object is refused",
            "data": [1, 2],
            "valid": False,
            "rule": "diary.line.type",
        }
    )
    line_tests = [
        {
            "description": "a complete alarm line is a valid diary line",
            "data": alarm,
            "valid": True,
        },
        {
            "description": "an unknown event type is a valid diary line",
            "data": unknown,
            "valid": True,
        },
        {
            "description": "a diary line missing a common field is refused",
            "data": drop(unknown, "prev"),
            "valid": False,
            "rule": "diary.line.fields.missing",
        },
        {
            "description": "DiaryLine checks a known event against its schema: an alarm without grad_norm is refused",
            "data": drop(alarm, "grad_norm"),
            "valid": False,
            "rule": "diary.alarm.fields.missing",
        },
        {
            "description": "DiaryLine checks fixed values of known events: an alarm with severity info is refused",
            "data": setf(alarm, "severity", "info"),
            "valid": False,
            "rule": "diary.alarm.severity.fixed",
        },
        {
            "description": "DiaryLine checks record_version of run_start: 2 is refused",
            "data": setf(line("run_start", BODIES["run_start"], 0, GENESIS), "record_version", 2),
            "valid": False,
            "rule": "diary.run_start.record_version.unsupported",
        },
    ]
    known_tests = [
        {
            "description": f"a complete {e} line is a valid known line",
            "data": line(e, BODIES[e]),
            "valid": True,
        }
        for e in ("alarm", "repair", "run_end")
    ] + [
        {
            "description": "an unknown event is not a known line",
            "data": unknown,
            "valid": False,
            "rule": "diary.event.mismatch",
        },
        {
            "description": "a known line is checked against its event's schema",
            "data": drop(alarm, "sigma"),
            "valid": False,
            "rule": "diary.alarm.fields.missing",
        },
    ]
    return [
        {
            "description": "the common fields of every diary line",
            "schema": f"{BASE}common.schema.json",
            "tests": tests,
        },
        {
            "description": "any diary line: common fields, plus the event's schema when the event is known",
            "schema": f"{BASE}line.schema.json",
            "tests": line_tests,
        },
        {
            "description": "a line of one of the 19 known event types, selected by event",
            "schema": f"{BASE}known-line.schema.json",
            "tests": known_tests,
        },
    ]


SEED_ROW = {
    "step": 450,
    "loss": 2.305945873260498,
    "grad": {
        "conv1.0": 0.0,
        "conv1.1": 0.0,
        "conv2.0": 0.0,
        "conv2.1": 0.0,
        "conv3.0": 0.0,
        "conv3.1": 0.0,
        "classifier.0": 0.0558704249560833,
        "classifier.3": 0.08159016817808151,
    },
    "stuck": {
        "conv1.0": [0, 0, 0, 0],
        "conv2.0": [64, 0, 0, 0],
        "conv3.0": [128, 0, 0, 0],
        "classifier.0": [0, 0, 100, 0],
        "classifier.3": [0, 0, 0, 0],
    },
}


def metrics_group() -> dict[str, Any]:
    r = SEED_ROW
    cases = [
        ("the seed's example row is valid", r, True, None),
        ("a NaN loss is written as the string NaN", setf(r, "loss", "NaN"), True, None),
        (
            "an infinite gradient norm is written as the string Infinity",
            setf(r, "grad", {"conv1.0": "Infinity"}),
            True,
            None,
        ),
        ("a null loss is valid (step() given no loss)", setf(r, "loss", None), True, None),
        ("a row with an extra field is valid", setf(r, "lr", 0.1), True, None),
        ("a row without stuck is refused", drop(r, "stuck"), False, "diary_metrics.fields.missing"),
        ("a row that is a list is refused", [r], False, "diary_metrics.row.type"),
        ("a negative step is refused", setf(r, "step", -1), False, "diary_metrics.step.negative"),
        (
            "a step written 450.0 is refused",
            setf(r, "step", 450.0),
            False,
            "diary_metrics.step.type",
        ),
        ("a loss spelled nan is refused", setf(r, "loss", "nan"), False, "diary_metrics.loss.type"),
        ("grad must be an object", setf(r, "grad", [0.1]), False, "diary_metrics.grad.type"),
        (
            "a negative gradient norm is refused",
            setf(r, "grad", {"a": -1.0}),
            False,
            "diary_metrics.grad.value",
        ),
        (
            "a gradient norm given as text is refused",
            setf(r, "grad", {"a": "0.1"}),
            False,
            "diary_metrics.grad.value",
        ),
        (
            "stuck must be an object",
            setf(r, "stuck", [[0, 0, 0, 0]]),
            False,
            "diary_metrics.stuck.type",
        ),
        (
            "stuck counts come in fours",
            setf(r, "stuck", {"a": [0, 0, 0]}),
            False,
            "diary_metrics.stuck.shape",
        ),
        (
            "a negative stuck count is refused",
            setf(r, "stuck", {"a": [0, -1, 0, 0]}),
            False,
            "diary_metrics.stuck.count",
        ),
        (
            "a fractional stuck count is refused",
            setf(r, "stuck", {"a": [0, 0.5, 0, 0]}),
            False,
            "diary_metrics.stuck.count",
        ),
        (
            "a gradient norm of -Infinity is refused: a norm is never negative",
            setf(r, "grad", {"conv1.0": "-Infinity"}),
            False,
            "diary_metrics.grad.value",
        ),
    ]
    tests = []
    for desc, data, valid, rule in cases:
        t: dict[str, Any] = {"description": desc, "data": data, "valid": valid}
        if rule:
            t["rule"] = rule
        tests.append(t)
    return {
        "description": "rows of metrics.jsonl",
        "schema": f"{BASE}metrics-row.schema.json",
        "tests": tests,
    }


SEAL = {
    "record_version": 1,
    "sealed_by": "trainrecord 0.1.0",
    "sealed_at": 1764460800.123,
    "diary": {
        "file": "diary.jsonl",
        "sha256": H,
        "bytes": 2870,
        "lines": 10,
        "head_seq": 9,
        "head_hash": H,
    },
    "metrics": {"file": "metrics.jsonl", "sha256": H, "bytes": 300, "rows": 2},
    "signature": {"algorithm": "ed25519", "file": "record.sig", "public_key_sha256": H},
}


def sub(d: dict[str, Any], key: str, field: str, value: Any) -> dict[str, Any]:
    return setf(d, key, mutate(d[key], field, value))


def seal_group() -> dict[str, Any]:
    s = SEAL
    cases = [
        ("a signed seal is valid", s, True, None),
        (
            "an unsigned seal without metrics is valid",
            {**s, "metrics": None, "signature": None},
            True,
            None,
        ),
        ("a seal that is a list is refused", [s], False, "seal.type"),
        (
            "a seal without signature is refused: null must be written",
            drop(s, "signature"),
            False,
            "seal.fields.missing",
        ),
        (
            "a seal with a field this version does not know is valid: readers ignore it "
            "(record.sig, when there, signs its bytes too)",
            setf(s, "note", "x"),
            True,
            None,
        ),
        (
            "record_version 2 is refused",
            setf(s, "record_version", 2),
            False,
            "seal.record_version.unsupported",
        ),
        (
            "record_version true is refused",
            setf(s, "record_version", True),
            False,
            "seal.record_version.unsupported",
        ),
        ("an empty sealed_by is refused", setf(s, "sealed_by", ""), False, "seal.sealed_by.type"),
        (
            "sealed_at as a string is refused",
            setf(s, "sealed_at", "now"),
            False,
            "seal.sealed_at.type",
        ),
        ("diary must be an object", setf(s, "diary", None), False, "seal.diary.type"),
        (
            "diary without head_hash is refused",
            sub(s, "diary", "head_hash", MISSING),
            False,
            "seal.diary.fields",
        ),
        (
            "diary with a field this version does not know is valid: readers ignore it",
            sub(s, "diary", "x", 1),
            True,
            None,
        ),
        (
            "diary.file must be diary.jsonl",
            sub(s, "diary", "file", "d.jsonl"),
            False,
            "seal.diary.file",
        ),
        (
            "an uppercase diary sha256 is refused",
            sub(s, "diary", "sha256", H.upper()),
            False,
            "seal.diary.sha256_format",
        ),
        (
            "a head_hash with a newline is refused",
            sub(s, "diary", "head_hash", H + "\n"),
            False,
            "seal.diary.sha256_format",
        ),
        ("a seal of zero lines is refused", sub(s, "diary", "lines", 0), False, "seal.diary.count"),
        (
            "a negative byte count is refused",
            sub(s, "diary", "bytes", -1),
            False,
            "seal.diary.count",
        ),
        (
            "metrics must be an object or null",
            setf(s, "metrics", "metrics.jsonl"),
            False,
            "seal.metrics.type",
        ),
        (
            "metrics without rows is refused",
            sub(s, "metrics", "rows", MISSING),
            False,
            "seal.metrics.fields",
        ),
        (
            "metrics.file must be metrics.jsonl",
            sub(s, "metrics", "file", "m.jsonl"),
            False,
            "seal.metrics.file",
        ),
        (
            "a short metrics sha256 is refused",
            sub(s, "metrics", "sha256", "ab"),
            False,
            "seal.metrics.sha256_format",
        ),
        (
            "rows written 2.0 is refused",
            sub(s, "metrics", "rows", 2.0),
            False,
            "seal.metrics.count",
        ),
        (
            "signature must be an object or null",
            setf(s, "signature", "ed25519"),
            False,
            "seal.signature.type",
        ),
        (
            "signature without its fingerprint is refused",
            sub(s, "signature", "public_key_sha256", MISSING),
            False,
            "seal.signature.fields",
        ),
        (
            "only ed25519 signatures are known",
            sub(s, "signature", "algorithm", "rsa"),
            False,
            "seal.signature.algorithm",
        ),
        (
            "the signature file is record.sig",
            sub(s, "signature", "file", "sig"),
            False,
            "seal.signature.file",
        ),
        (
            "a malformed fingerprint is refused",
            sub(s, "signature", "public_key_sha256", "x"),
            False,
            "seal.signature.fingerprint",
        ),
        (
            "metrics with a field this version does not know is valid: readers ignore it",
            sub(s, "metrics", "compression", None),
            True,
            None,
        ),
        (
            "signature with a field this version does not know is valid: readers ignore it",
            sub(s, "signature", "key_id", "k1"),
            True,
            None,
        ),
        (
            "a known field stays strict beside an unknown one: record_version 2 is refused",
            setf(setf(s, "note", "x"), "record_version", 2),
            False,
            "seal.record_version.unsupported",
        ),
    ]
    tests = []
    for desc, data, valid, rule in cases:
        t: dict[str, Any] = {"description": desc, "data": data, "valid": valid}
        if rule:
            t["rule"] = rule
        tests.append(t)
    return {
        "description": "record.json, the seal",
        "schema": f"{BASE}record.schema.json",
        "tests": tests,
    }


def dump(name: str, obj: Any) -> None:
    (OUT / name).write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    dump("events.json", [event_group(e) for e in BODIES])
    dump("line.json", common_groups())
    dump("metrics.json", [metrics_group()])
    dump("seal.json", [seal_group()])


if __name__ == "__main__":
    main()
