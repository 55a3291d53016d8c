# OpenProgram — two commands: `make run` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: run test bench lint format system-deps clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# Debian packages the tests need: Chromium for the browser tests, Redis and
# PostgreSQL servers for the scale-out tests. Installed only when missing.
system-deps:
	@missing=""; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

test: $(STAMP) system-deps
	$(BIN)/ruff check .
	@tests/services.sh start; \
	. var/test-services/env; \
	$(BIN)/pytest -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 0 ]; then \
	  echo "=== again on PostgreSQL (database-backed tests)"; \
	  DATABASE_URL=$$TEST_POSTGRES_URL $(BIN)/pytest -p no:cacheprovider -m "not e2e" tests/component tests/integration; rc=$$?; \
	fi; \
	tests/services.sh stop; exit $$rc

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .

clean:
	rm -rf $(VENV) var/test-services
