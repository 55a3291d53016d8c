#!/usr/bin/env bash
# Start or stop the real Redis and PostgreSQL servers the tests use, on loopback
# ports of their own, with data under var/test-services (or $TEST_SERVICES_DIR, so two
# people running it from one checkout keep their own pids). `start` writes
# <that directory>/env with REDIS_TEST_URL and TEST_POSTGRES_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TEST_SERVICES_DIR:-$PWD/var/test-services}"
redis_port=${TEST_REDIS_PORT:-56379}
pg_port=${TEST_PG_PORT:-55432}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
pg_data=/tmp/openprogram-test-pg-$pg_port

start() {
  stop >/dev/null 2>&1 || true
  mkdir -p "$dir"
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
  rm -rf "$pg_data"; mkdir -p "$pg_data"
  local run=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$pg_data"; run=(runuser -u postgres --); fi
  "${run[@]}" "$pg_bin/initdb" -D "$pg_data" -A trust -U openprogram >/dev/null
  "${run[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_data/log" -w \
    -o "-p $pg_port -k $pg_data -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  "${run[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U openprogram openprogram
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  cat > "$dir/env" <<ENV
export REDIS_TEST_URL=redis://127.0.0.1:$redis_port/0
export TEST_POSTGRES_URL=postgres://openprogram@127.0.0.1:$pg_port/openprogram
ENV
  echo "test services: redis :$redis_port, postgresql :$pg_port"
}

stop() {
  if [ -f "$dir/redis.pid" ]; then kill "$(cat "$dir/redis.pid")" 2>/dev/null || true; rm -f "$dir/redis.pid"; fi
  if [ -d "$pg_data" ]; then
    local run=(); [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
    "${run[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$pg_data"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
