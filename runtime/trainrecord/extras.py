"""Which optional dependency comes with which extra of ``pyproject.toml``, and the one line
that says what to install when one is missing.

The base install (``pip install trainrecord``) holds only the spec models (pydantic); the
runtime, the command lines, plotting, the monitor and the conformance suite each need an
extra. A missing one is reported as ``... needs numpy, which is not installed: pip install
"trainrecord[monitor]"`` instead of a ``ModuleNotFoundError`` traceback.
"""

from __future__ import annotations

EXTRA_OF = {
    "jsonschema": "runtime",
    "rfc3339_validator": "runtime",
    "requests": "runtime",
    "urllib3": "runtime",
    "cryptography": "runtime",
    "orjson": "runtime",
    "matplotlib": "plot",
    "torch": "monitor",
    "numpy": "monitor",
    "tensorboard": "tensorboard",
    "hypothesis": "conformance",
    "trustme": "conformance",
}
"""Top-level module name -> the extra that installs it (pyproject.toml,
[project.optional-dependencies])."""


def missing_module(exc: BaseException) -> str | None:
    """The top-level name of an optional dependency whose import failed in ``exc`` (a
    ``ModuleNotFoundError``, also ``sys.modules[name] = None``); None for anything else."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    return top if top in EXTRA_OF else None


TORCH_PIN = "torch==2.13.0"
"""The torch the project installs (the Makefile's ``TORCH_PIN``; a test keeps them equal):
the monitor extra asks for ``torch>=2.6``, which pip alone resolves to the newest release,
on Linux a CUDA build of several GB."""


def install_hint(module: str, extra: str | None = None) -> str:
    """``needs MODULE, which is not installed: pip install "trainrecord[EXTRA]"``, with
    :data:`TORCH_PIN` before the monitor extra."""
    extra = extra or EXTRA_OF[module]
    torch = f"{TORCH_PIN} " if extra == "monitor" else ""
    return f'needs {module}, which is not installed: pip install {torch}"trainrecord[{extra}]"'


def missing_extra(exc: BaseException, what: str, extra: str | None = None) -> str | None:
    """One line, ``WHAT needs MODULE, which is not installed: pip install ...``, when
    ``exc`` is a missing optional dependency; None otherwise. ``extra`` overrides the
    extra named (the conformance suite's own extra holds the runtime's too)."""
    module = missing_module(exc)
    if module is None:
        return None
    own = EXTRA_OF[module]
    return f"{what} {install_hint(module, extra if extra and own == 'runtime' else own)}"
