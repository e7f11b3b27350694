"""The PyTorch training monitor: ``from trainrecord import Monitor``.

See :class:`trainrecord.monitor.monitor.Monitor` for the loop, and the modules beside it
for each concept: gradients (norms, baselines, alarms), structure (pairing from the
dataflow), channels (stuck-channel statistics), certificate (proofs of dead channels),
repair, loss, sinks and distributed. ``UnsupportedModel`` (a ``TypeError``) is what the
Monitor raises for a model it cannot observe (FSDP); ``MonitorMisuseWarning`` (a
``UserWarning``, issued with :func:`warnings.warn`) what it warns when ``step()`` is called
more often than the optimizer steps.
"""

from trainrecord.errors import MonitorMisuseWarning
from trainrecord.extras import missing_extra

try:
    # numpy before torch: a missing numpy is then named at once, before torch would warn
    # that it cannot initialise NumPy
    import numpy  # noqa: F401

    from trainrecord.monitor.distributed import UnsupportedModel
    from trainrecord.monitor.monitor import Monitor
except ModuleNotFoundError as exc:  # torch or numpy: say which extra, not a bare traceback
    line = missing_extra(exc, "the trainrecord monitor")
    if line is None:
        raise
    raise ModuleNotFoundError(line, name=exc.name) from None

__all__ = ["Monitor", "MonitorMisuseWarning", "UnsupportedModel"]
