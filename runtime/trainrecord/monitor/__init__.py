"""The PyTorch training monitor: ``from trainrecord import Monitor``.

See :class:`trainrecord.monitor.monitor.Monitor` for the loop, and the modules beside it
for each concept: gradients (norms, baselines, alarms), structure (pairing from the
dataflow), channels (stuck-channel statistics), certificate (proofs of dead channels),
repair, loss, sinks and distributed.
"""

from trainrecord.extras import missing_extra

try:
    from trainrecord.monitor.monitor import Monitor
except ModuleNotFoundError as exc:  # torch or numpy: say which extra, not a bare traceback
    line = missing_extra(exc, "the trainrecord monitor")
    if line is None:
        raise
    raise ModuleNotFoundError(line, name=exc.name) from None

__all__ = ["Monitor"]
