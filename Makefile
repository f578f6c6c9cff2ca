# zhiyi: two commands do all the set-up on a fresh machine with Python 3.11.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: up test install install-test bench clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml clients/python/pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m pip install --quiet -e clients/python
	@touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

## make up: start zhiyi on http://127.0.0.1:7821 (private Redis with AOF under ./data unless REDIS_URL is set)
up: install
	$(BIN)/zhiyi up --data-dir $${ZHIYI_DATA_DIR:-./data} --host $${ZHIYI_HOST:-127.0.0.1} --port $${ZHIYI_PORT:-7821}

## make test: type checks (mypy, strict on events/, commands/ and the Python client), then the whole suite against a
## private redis-server the test session starts itself
test: install-test
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

bench: install-test
	$(BIN)/python tests/bench/ingest.py
	$(BIN)/python tests/bench/project.py
	$(BIN)/python tests/bench/recall.py

clean:
	rm -rf $(VENV) *.egg-info
