#!/usr/bin/env bash
# `make test`'s passes, after ruff, with the Redis and PostgreSQL servers running
# (tests/services.sh). Called by the Makefile with BIN, NODE, CONFORMANCE_JS and
# TEST_WORKERS in the environment.
#
# The SQLite pass (every test, browser tests last) runs in TEST_WORKERS processes. Alone
# it left about a third of two cores idle (browser tests and real servers wait on each
# other), so the PostgreSQL pass and then the MCP conformance suite run beside it, from
# the start, in one process of their own. Their output is kept in var/test-logs/ and
# printed once the SQLite pass is done. Every pass runs whatever another one's result,
# and the run fails when any of them fails (pytest's exit 5, no tests collected,
# included). TEST_WORKERS=0 runs each pass in a single process (the two still side by
# side).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${BIN:?} ${NODE:?} ${CONFORMANCE_JS:?} ${TEST_WORKERS:?}"
pytest=("$BIN/pytest" -p no:cacheprovider)
xdist=(-n "$TEST_WORKERS" --dist loadscope)
logs=${TEST_LOGS_DIR:-var/test-logs}
mkdir -p "$logs"

beside() {
  echo "=== again on PostgreSQL (the tests that use the database), connections kept as in production"
  # One process: it shares the machine with the SQLite pass.
  OPENPROGRAM_TEST_PRODUCTION_CONNECTIONS=1 DATABASE_URL=$TEST_POSTGRES_URL \
    "${pytest[@]}" -n "$((TEST_WORKERS > 0 ? 1 : 0))" --database-tests-only -m "not e2e"
  local postgres=$?
  echo "=== MCP client conformance: the suite's core scenarios (make conformance runs all)"
  "$BIN/python" tests/conformance/run_suite.py --node "$NODE" --suite-js "$CONFORMANCE_JS" \
    --group core
  local conformance=$?
  echo "=== PostgreSQL pass exit $postgres, conformance exit $conformance"
  [ "$postgres" -eq 0 ] && [ "$conformance" -eq 0 ]
}

# In a process group of its own (job control on for this one start), so that however
# this script ends, every process of the passes beside it ends with it.
set -m
beside > "$logs/beside.log" 2>&1 &
beside_pid=$!
set +m
trap 'kill -- "-$beside_pid" 2>/dev/null' EXIT

echo "=== every test on SQLite, browser tests included ($logs/beside.log: the passes running beside it)"
"${pytest[@]}" "${xdist[@]}"
sqlite=$?

echo "=== file tools and attachments again, openat2 off (the component walk)"
OPENPROGRAM_FS_FORCE_WALK=1 "${pytest[@]}" -q \
  tests/unit/programs/builtin/test_{read,write,edit,list_dir,glob,grep,swapped_path}.py \
  tests/integration/chat_app/test_attachments.py::test_a_directory_swapped_for_a_symlink_at_any_step_never_sends_the_file_outside
walk=$?

wait "$beside_pid"
beside_rc=$?
cat "$logs/beside.log"
echo "=== exit: SQLite pass $sqlite, openat2-off pass $walk, PostgreSQL and conformance $beside_rc"
[ "$sqlite" -eq 0 ] && [ "$walk" -eq 0 ] && [ "$beside_rc" -eq 0 ]
