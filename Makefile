# trainrecord: one entry point for every job. Everything installs into .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# torch is pinned: an open-ended torch would make pip fetch a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
# Every other package of the dev environment at its tested version (see the file).
CONSTRAINTS := tools/constraints.txt
HYPOTHESIS_PROFILE ?= dev
TARGET ?= python,harness

TS_TOOLS := tools/ts
NODE_IMPL := conformance/implementations/node

.PHONY: all venv ts-setup generate check-generated lint test demo conformance bench clean

all: test

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c $(CONSTRAINTS) --upgrade pip
	$(PIP) install -q "$(TORCH_PIN)"
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[dev,monitor]"
	touch $@

venv: $(VENV)/.installed

## The pinned npm tools (json-schema-to-typescript, tsc) and the Node implementation's
## packages (ajv), from their package-lock.json files. Needs Node.js >= 20 and npm.
$(TS_TOOLS)/node_modules/.installed: $(TS_TOOLS)/package-lock.json
	cd $(TS_TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(NODE_IMPL)/node_modules/.installed: $(NODE_IMPL)/package-lock.json
	cd $(NODE_IMPL) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

ts-setup: $(TS_TOOLS)/node_modules/.installed $(if $(wildcard $(NODE_IMPL)/package-lock.json),$(NODE_IMPL)/node_modules/.installed)

## Regenerate generated/ from spec/ (never edit generated/ by hand).
generate: venv ts-setup
	$(PY) tools/generate.py --out generated

## Fail when generated/ differs from what spec/ produces.
check-generated: venv ts-setup
	$(PY) tools/generate.py --check generated

lint: venv
	$(VENV)/bin/ruff check runtime conformance tests tools bench
	$(VENV)/bin/ruff format --check runtime conformance tests tools bench
	$(VENV)/bin/mypy

test: venv ts-setup check-generated lint
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest -n 2 --dist loadgroup -q

## The main job: train a small CNN, break it, watch the monitor catch it, verify and plot.
demo: venv
	$(VENV)/bin/trainrecord demo --out runs/demo

conformance: venv ts-setup
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENV)/bin/trainrecord-conformance run --target "$(TARGET)"

bench: venv
	for f in bench/*.py; do $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache
