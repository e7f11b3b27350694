# DO NOT EDIT: generated from spec/schemas by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
"""Generated models, one module per schema file."""
