"""trainrecord_conformance: a Hypothesis-driven conformance suite for the trainrecord formats.

Runs every rule of the registry in ``spec/rules/`` against this project's runtime
in-process, or against any implementation through the newline-delimited JSON harness
protocol (``spec/harness/``).
"""

__version__ = "0.1.0"
