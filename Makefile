# Two commands for a newcomer: `make demo` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.npufit-installed
DEMO_OUT ?= out/demo

.PHONY: demo test test-load lint install bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch is pinned exactly (2.13.0, CPU build on this machine) inside the [dev] extra
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@# RKNN-Toolkit2 lives in its own env (~1 min and 1.4 GB the first time, nothing to do afterwards): without it
	@# the demo's rk3588 compile cells would be skipped
	@$(BIN)/npufit env install rknn || echo "demo: the RKNN env could not be installed; rk3588 compile cells will be skipped"
	$(BIN)/npufit pipeline run examples/timeseries.yaml --output-dir $(DEMO_OUT)
	@echo; echo "== one check report in full: the LSTM regressor on Hailo-8 =="
	$(BIN)/npufit check $(DEMO_OUT)/lstm/export/model.onnx --target hailo8
	@echo "report: $(DEMO_OUT)/report.html"

# style (120 columns, unused names, import order) and types (graph/, check/, targets/, verbs.py: pyproject [tool.mypy])
lint: $(STAMP)
	$(BIN)/ruff check npufit benchmarks calibration
	$(BIN)/mypy

test: $(STAMP) lint
	bash scripts/test-setup.sh $(BIN)
	@# tests run in a seeded random order (tests/shuffle.py): the seed is printed; NPUFIT_TEST_SEED=N repeats one
	$(BIN)/python -m pytest -q -p no:cacheprovider

# the same suite beside two busy CPU hogs, as on a loaded CI machine (docs/dev/testing.md)
test-load: $(STAMP)
	PYTHON=$(BIN)/python bash scripts/test-under-load.sh

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_check.py

docs: $(STAMP)
	$(BIN)/npufit targets --write-docs docs/targets

clean:
	rm -rf $(VENV) out .pytest_cache
	@echo "vendor tool environments live outside the repository (~/.cache/npufit/envs, or \$$NPUFIT_ENVS):"
	@echo "  list them with '.venv/bin/npufit env list' (before clean) or remove one with 'npufit env remove NAME'"
