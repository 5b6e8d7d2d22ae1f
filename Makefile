# The two commands a newcomer needs: `make run` and `make test`.
# Both create or refresh the local virtualenv first.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Empty: the user's own state dir, the one an agent registered as the README says uses.
STATE_DIR ?=
STATE_FLAG := $(if $(STATE_DIR),--state-dir $(STATE_DIR))

# The agent CLIs whose model input tests/e2e/test_agent_clients.py checks, and the MCP
# Inspector CLI that tests/e2e/test_inspector_cli.py runs; the pins match
# tests/agent_clients.py. Installed into .venv/node where npm can reach its registry;
# without them those tests are skipped.
AGENT_CLIS := @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 \
	@modelcontextprotocol/inspector@2.12.0
NODE_DIR := $(VENV)/node
NODE_STAMP := $(NODE_DIR)/.installed

.PHONY: install bytecode run daemon test lint format bench demo docs clean agent-clis browser

install: $(STAMP)

# The kernels' template venv (ipykernel, compiled) is built here, once per user and Python
# (in ~/.cache/nbstage), so that a new user's first kernel does not wait for uv.
# Every daemon, client, session child and kernel is a fresh Python process. Where
# PYTHONDONTWRITEBYTECODE is set (CI images set it), each would compile nbstage's
# sources again; compiling them once here spares every one of them that work.
bytecode: install
	@PYTHONDONTWRITEBYTECODE= $(BIN)/python -m compileall -q actors entrypoints protocol
	@$(BIN)/python -c "from nbstage.protocol.common.method_cache import write; write()"
	@$(BIN)/python -c "from nbstage.actors.daemon.environment.environments import ensure_template, template_root; ensure_template(template_root())"

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The main job: the MCP server on stdio (it starts the daemon if none runs), with its
# state in the user's state dir (or STATE_DIR=...). From a terminal it first prints how
# to add it to Claude Code and Codex.
run: bytecode
	@$(BIN)/nbstage mcp $(STATE_FLAG)

# The daemon alone, in the foreground.
daemon: bytecode
	$(BIN)/nbstage daemon start --foreground $(STATE_FLAG)

# The tests' temp files go in one dir that is removed afterwards, so a run leaves
# nothing behind in /tmp.
test: bytecode agent-clis browser
	@tmp=$$(mktemp -d /tmp/nbstage-tests-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
		$(BIN)/python -m pytest -q --basetemp="$$tmp/t"

agent-clis: $(NODE_STAMP)

# Debian's chromium and its driver, for tests/e2e/test_lab_browser.py: installed where this
# runs as root (CI); elsewhere that test is skipped and names the install command.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			apt-get update -q >/dev/null 2>&1; \
			apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || true; \
		fi; \
	fi

$(NODE_STAMP): Makefile
	@mkdir -p $(NODE_DIR)
	@if command -v npm >/dev/null && npm install --silent --no-audit --no-fund \
		--prefix $(NODE_DIR) $(AGENT_CLIS) >$(NODE_DIR)/install.log 2>&1; then \
		touch $@; \
	else \
		echo "Claude Code, Codex and the MCP Inspector not installed (see $(NODE_DIR)/install.log); their tests skip"; \
	fi

# mypy finds nbstage.actors, .protocol and .entrypoints through links named as the
# package names them (pyproject.toml's mypy_path); the folders themselves are not so named.
MYPY_PATH := $(VENV)/mypy-path/nbstage

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	@mkdir -p $(MYPY_PATH)
	@for part in actors protocol entrypoints; do ln -sfn ../../../$$part $(MYPY_PATH)/$$part; done
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: bytecode
	$(BIN)/python bench/thespian_bases.py
	$(BIN)/python bench/kernel_roundtrip.py
	$(BIN)/python bench/peers.py
	$(BIN)/python bench/mcp_roundtrip.py
	$(BIN)/python bench/recovery.py
	$(BIN)/python bench/many_clients.py --clients 32
	$(BIN)/python bench/environments.py
	$(BIN)/python bench/lab_sync.py
	$(BIN)/python bench/gateways.py
	$(BIN)/python bench/gateway_hosts.py --notebooks 32

# docs/tools.md and docs/settings.md, from the code that declares them.
docs: install
	$(BIN)/python docs/reference.py

demo: install
	$(BIN)/nbstage harness examples/two-agents.toml

clean:
	rm -rf $(VENV) .state build *.egg-info .mypy_cache
