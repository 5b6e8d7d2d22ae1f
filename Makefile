# The two commands a newcomer needs: `make run` and `make test`.
# Both create or refresh the local virtualenv first.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STATE_DIR ?= $(CURDIR)/.state

.PHONY: install run test lint format bench demo clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The main job: the notebook daemon, in the foreground, with its state in .state/.
# Point an MCP client at `$(BIN)/nbstage mcp --state-dir $(STATE_DIR)` to use it.
run: install
	$(BIN)/nbstage daemon start --foreground --state-dir $(STATE_DIR)

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(BIN)/python bench/kernel_roundtrip.py

clean:
	rm -rf $(VENV) .state build *.egg-info
