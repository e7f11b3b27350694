"""The PyTorch training monitor: ``from trainrecord import Monitor``.

See :class:`trainrecord.monitor.monitor.Monitor` for the loop, and the modules beside it
for each concept: gradients (norms, baselines, alarms), structure (pairing from the
dataflow), channels (stuck-channel statistics), certificate (proofs of dead channels),
repair, loss, sinks and distributed.
"""

from trainrecord.monitor.monitor import Monitor

__all__ = ["Monitor"]
