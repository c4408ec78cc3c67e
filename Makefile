# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv if missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# torch first, from the local CPU wheel, so nothing ever pulls a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0

.PHONY: venv demo lint test test-fast bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml requirements-test.txt constraints.txt package-lock.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH_PIN)
	$(PY) -m pip install -q -c constraints.txt -e '.[test,cli,convert]' -r requirements-test.txt
	# Azurite (the Azure Blob emulator the storage tests start on 127.0.0.1); optional.
	-command -v npm >/dev/null && npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

# Style and types; `make test` runs it first, so CI does too.
lint: $(STAMP)
	$(VENV)/bin/ruff check streaming tests benchmarks scripts docs/examples
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -q -p no:cacheprovider tests

test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
