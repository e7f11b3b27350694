"""Where events go besides the diary: Python logging, a user callback, TensorBoard.

Sinks run on one background thread fed by a queue, so a slow sink never slows training
and a failing one never stops it: its exception becomes a ``sink_error`` event in the
diary (the first failure of each sink with each exception type; every failure is counted
in ``run_end.counts.sink_errors``).
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from trainrecord.wording import counted

LOGGER = logging.getLogger("trainrecord.monitor")
_LEVELS = {
    "critical": logging.ERROR,
    "warning": logging.WARNING,
    "action": logging.WARNING,
    "proof": logging.WARNING,
}


class Sink(Protocol):
    """Receives every diary line (a dict) and every metrics row."""

    name: str

    def event(self, line: dict[str, Any]) -> None:
        """Called with each diary line as written."""

    def metrics(self, row: dict[str, Any]) -> None:
        """Called with each metrics.jsonl row."""


def describe(line: dict[str, Any]) -> str:
    """One readable line for a diary event."""
    event = line.get("event", "?")
    step = line.get("step")
    where = f"step {step}: " if step is not None else ""
    layer = line.get("layer")
    named = f"layer {layer!r}" + (f" ({line['kind']})" if line.get("kind") else "")
    if event == "alarm":
        base = line["baseline"]
        shown = "none yet" if base is None else f"{base:.3g}"
        if line["diagnosis"] == "no_gradient":
            # grad_norm null: no gradient at all; 0 (all zero, or a record written before
            # the null, which wrote 0 for both)
            what = "none at all" if line.get("grad_norm") is None else "none, or all zero"
            return f"{where}{named}: no gradient ({what}; baseline {shown})"
        return (
            f"{where}{named}: gradient {line['diagnosis']} (norm {line['grad_norm']:.3g}, "
            f"baseline {shown})"
        )
    if event == "channels":
        pruned = line.get("n_pruned") or 0  # (removed on purpose: not stuck)
        return (
            f"{where}{named}: {line['level']} of {line['channels']} channels stuck "
            f"(certified {line['n_certified']}, flat {line['n_flat']}, "
            f"silent {line['n_observed']}, decayed {line['n_decayed']}"
            + (f"; {pruned} pruned, not stuck)" if pruned else ")")
        )
    if event == "certificate":
        return f"{where}{named}: {counted(line['count'], 'channel')} proven dead"
    if event == "repair":
        return f"{where}{named}: repaired {counted(line['count'], 'channel')} ({line['method']})"
    if event == "loss_spike":
        return f"{where}loss spike {line['value']:.4g} (baseline {line['baseline']:.4g})"
    if event == "nonfinite_loss":
        return f"{where}non-finite loss {line['value']}"
    if event == "nonfinite_gradient":
        return f"{where}non-finite gradient in {', '.join(line['layers'])}"
    if event == "no_gradients":
        return f"{where}{line['message']}"
    return f"{where}{event}" + (f" {layer}" if layer else "")


class LoggingSink:
    """One log line per warning, action, proof or critical event (logger trainrecord.monitor)."""

    name = "logging"

    def __init__(self, logger: logging.Logger = LOGGER) -> None:
        self.logger = logger

    def event(self, line: dict[str, Any]) -> None:
        """Log the event when its severity says it matters."""
        level = _LEVELS.get(str(line.get("severity")))
        if level is not None:
            self.logger.log(level, "trainrecord: %s", describe(line))

    def metrics(self, row: dict[str, Any]) -> None:
        """Metrics rows are not logged."""


class CallbackSink:
    """Calls ``fn(line)`` for every diary line."""

    def __init__(self, fn: Callable[[dict[str, Any]], Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or f"callback {getattr(fn, '__name__', type(fn).__name__)}"

    def event(self, line: dict[str, Any]) -> None:
        """Pass the line on."""
        self.fn(line)

    def metrics(self, row: dict[str, Any]) -> None:
        """Metrics rows go to the diary's metrics.jsonl only."""


class TensorBoardSink:
    """Scalars (loss, gradient norms, stuck channels) and event text for TensorBoard."""

    name = "tensorboard"

    def __init__(self, log_dir: str) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                'the TensorBoard sink needs the tensorboard package: pip install "trainrecord[tensorboard]"'
            ) from exc
        self.writer = SummaryWriter(log_dir)

    def event(self, line: dict[str, Any]) -> None:
        """Event text, at its step."""
        self.writer.add_text(f"trainrecord/{line['event']}", describe(line), line.get("step", 0))

    def metrics(self, row: dict[str, Any]) -> None:
        """Loss and per-layer gradient norms as scalars."""
        step = row["step"]
        if isinstance(row.get("loss"), float):
            self.writer.add_scalar("trainrecord/loss", row["loss"], step)
        for layer, norm in row["grad"].items():
            if isinstance(norm, float):
                self.writer.add_scalar(f"trainrecord/grad/{layer}", norm, step)
        self.writer.flush()

    def close(self) -> None:
        """Flush and stop the SummaryWriter (and its thread)."""
        self.writer.close()


_NO_METRICS = (LoggingSink.metrics, CallbackSink.metrics)
"""``metrics`` methods that do nothing."""


def _takes_metrics(sink: Any) -> bool:
    """Whether ``sink`` does something with metrics rows (not one of :data:`_NO_METRICS`)."""
    return getattr(getattr(sink, "metrics", None), "__func__", None) not in _NO_METRICS


MAX_QUEUED = 10_000
"""Items waiting for the sinks past which metrics rows are dropped for them."""


_Item = tuple["SinkDispatcher", str, dict[str, Any]] | threading.Event | None
"""A queued item: (dispatcher, kind, payload) for the sinks; an Event that
:meth:`SinkThread.flush` waits for; ``None``: the thread ends."""


def _deliver(items: queue.Queue[_Item]) -> None:
    """The sinks' thread: delivers what :meth:`SinkDispatcher.put` queued, in order.

    It holds nothing of a dispatcher while it waits: each queued item carries its
    dispatcher, and the thread lets go of it before it waits again. A thread that held the
    dispatcher (its sinks, a callback that refers to the Monitor) kept the Monitor alive for
    good: it was never collected, never said it was not closed, and never left its model
    (a later repairing Monitor on it was refused). It ends at ``None``: put by ``close()``,
    or when the dispatcher is collected."""
    while True:
        item = items.get()
        if item is None:
            return
        if isinstance(item, threading.Event):  # flush(): all before it is delivered
            item.set()
            continue
        dispatcher, kind, payload = item
        del item
        dispatcher.deliver(kind, payload)
        del dispatcher, payload  # (before waiting again: see above)


class SinkThread:
    """The sinks' thread and its queue: all that may outlive a :class:`SinkDispatcher`
    (nothing of its sinks), so a registry can wait for what a lost Monitor's sinks still
    have to deliver without keeping the Monitor alive."""

    def __init__(self) -> None:
        self.queue: queue.Queue[_Item] = queue.Queue()
        self.thread = threading.Thread(
            target=_deliver, args=(self.queue,), name="trainrecord-sinks", daemon=True
        )

    def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until everything queued so far is delivered."""
        if self.thread.is_alive():
            done = threading.Event()
            self.queue.put(done)
            done.wait(timeout)


class SinkDispatcher:
    """Runs sinks on a background thread; reports failures through ``on_error``, held
    weakly (a ``weakref.WeakMethod``). Neither the thread nor anything global holds the
    dispatcher while no item waits (see :func:`_deliver`): a callback that refers to its
    Monitor does not keep the Monitor alive."""

    def __init__(
        self, sinks: list[Any], on_error: weakref.WeakMethod[Callable[[str, str], None]]
    ) -> None:
        self.sinks = sinks
        self.on_error = on_error
        self.failures = 0
        self.dropped = 0  # metrics rows not queued: the sinks were behind (see put)
        self._seen: set[tuple[str, str]] = set()
        self.worker = SinkThread()
        self._queue = self.worker.queue
        self._thread = self.worker.thread
        # metrics rows are queued only when a sink does something with them (the logging
        # and callback sinks do not): no thread wake-up on every check for nothing
        self._wants_metrics = any(_takes_metrics(s) for s in sinks)
        if sinks:
            self._thread.start()
            # dropped unclosed (its Monitor collected): the thread ends after what is queued
            weakref.finalize(self, self._queue.put, None)

    def put(self, kind: str, payload: dict[str, Any]) -> None:
        """Queue an event ('event') or a metrics row ('metrics') for every sink. A metrics
        row is dropped while :data:`MAX_QUEUED` items wait (sinks slower than the checks:
        the queue grew without bound, 830 bytes a row), said once as a sink_error; events
        are always queued (the diary's lines, few)."""
        if not self.sinks or (kind == "metrics" and not self._wants_metrics):
            return
        if kind == "metrics" and self._queue.qsize() >= MAX_QUEUED:
            self.dropped += 1
            if self.dropped == 1:
                self.failures += 1
                report = self.on_error()
                if report is not None:
                    names = "+".join(
                        str(getattr(x, "name", type(x).__name__))
                        for x in self.sinks
                        if _takes_metrics(x)
                    )
                    report(
                        names,
                        f"the sinks are slower than the checks: {MAX_QUEUED} items wait, so "
                        "metrics rows are dropped for the sinks until they catch up (the "
                        "record keeps every row; make the sink faster or check less often)",
                    )
            return
        self._queue.put((self, kind, payload))

    def deliver(self, kind: str, payload: dict[str, Any]) -> None:
        """Give one item to every sink (on the sinks' thread); a failure is counted."""
        for sink in self.sinks:
            try:
                getattr(sink, kind)(payload)
            except Exception as exc:  # a sink must never stop training
                self._failed(sink, exc)

    def _failed(self, sink: Any, exc: Exception) -> None:
        """Count a sink's failure; report the first of each (sink, exception type)."""
        self.failures += 1
        key = (str(getattr(sink, "name", type(sink).__name__)), type(exc).__name__)
        if key not in self._seen:
            self._seen.add(key)
            text = f"{type(exc).__name__}: {exc}"[:500]
            report = self.on_error()
            if report is not None:
                report(key[0], text)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` seconds) until everything queued so far is delivered."""
        self.worker.flush(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Deliver what is queued (waiting at most ``timeout`` seconds), then stop."""
        if self.sinks and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)
        for sink in self.sinks:  # a sink that holds resources gives them back (optional)
            closer = getattr(sink, "close", None)
            if callable(closer) and not self._thread.is_alive():
                try:
                    closer()
                except Exception as exc:  # never raised into the training loop
                    self._failed(sink, exc)
