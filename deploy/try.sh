#!/usr/bin/env bash
# Brings the production recipe up on this machine: Debian's haproxy (deploy/haproxy.cfg) in front of
# two Trackstack instances, on this machine's PostgreSQL (a fresh database, dropped at the end) and
# Redis. Each instance has a loopback address of its own (127.0.0.11, .12), as it would a host or a
# container, so they all use the same ports and nothing clashes with what runs on 127.0.0.1.
#
#   deploy/try.sh            up until Ctrl-C (or SIGTERM), then everything is torn down
#   deploy/try.sh --check    up, health checked through HAProxy, torn down
#
# An instance that exits is started again, as systemd's Restart=always does: `kill -TERM $(cat
# $TRY_RUN_DIR/app1.pid)` is a rolling restart's step (docs/operations.md).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

export HAPROXY_BIND="${HAPROXY_BIND:-127.0.0.10}"
export HAPROXY_HTTP_PORT="${HAPROXY_HTTP_PORT:-8080}"
export TRACKSTACK_1="${TRACKSTACK_1:-127.0.0.11}"
export TRACKSTACK_2="${TRACKSTACK_2:-127.0.0.12}"
export TRACKSTACK_HTTP_PORT="${TRACKSTACK_HTTP_PORT:-8080}"
pg_admin_url="${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
run="${TRY_RUN_DIR:-$(mktemp -d -t trackstack-try-XXXXXX)}"
mkdir -p "$run"
database="trackstack_try_$$_$RANDOM"

for tool in haproxy psql node; do
  command -v "$tool" >/dev/null || { echo "try.sh: $tool is not installed (apt-get install -y haproxy postgresql-client; Node 24)" >&2; exit 1; }
done

# The instances' settings: those of deploy/trackstack.env.example that fit one machine.
export DATABASE_URL="${pg_admin_url%/*}/$database"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export EVENT_CHANNEL="trackstack-try:$database"
export DATA_DIR="$run/data"
export PORT="$TRACKSTACK_HTTP_PORT"
export PUBLIC_URL="${PUBLIC_URL:-http://$HAPROXY_BIND:$HAPROXY_HTTP_PORT}"
export TRUST_PROXY="${TRUST_PROXY:-127.0.0.0/8}"
export DRAIN_DELAY="${DRAIN_DELAY:-1}"
export LOG_LEVEL="${LOG_LEVEL:-warn}"

supervisors=()
haproxy_pid=""
teardown() {
  trap - EXIT INT TERM
  touch "$run/stopping"
  for pidfile in "$run"/app*.pid; do [ -e "$pidfile" ] && kill -TERM "$(cat "$pidfile")" 2>/dev/null || true; done
  for pid in "${supervisors[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -n "$haproxy_pid" ] && kill "$haproxy_pid" 2>/dev/null && wait "$haproxy_pid" 2>/dev/null || true
  psql -q "$pg_admin_url" -c "drop database if exists $database with (force)" >/dev/null || true
  [ -z "${TRY_RUN_DIR:-}" ] && rm -rf "$run"
  echo "try.sh: torn down"
}
trap teardown EXIT
trap 'exit 0' INT TERM

# Health through a plain socket, with no client to install: true when the answer says "ready":true.
ready() {
  local answer
  answer=$( (exec 3<>"/dev/tcp/$1/$2" && printf 'GET /api/auth/health HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3 && cat <&3) 2>/dev/null) || return 1
  [[ "$answer" == *'"ready":true'* ]]
}
wait_ready() {
  for _ in $(seq 1 240); do ready "$1" "$2" && return 0; sleep 0.5; done
  echo "try.sh: $1:$2 never became ready" >&2
  return 1
}

# One instance, started again whenever it exits, until teardown.
supervise() {
  local name=$1 address=$2
  while [ ! -e "$run/stopping" ]; do
    HOST="$address" METRICS_HOST="$address" node "$repo/src/main.ts" >>"$run/$name.log" 2>&1 &
    echo $! >"$run/$name.pid"
    wait $! || true
  done
}

psql -q "$pg_admin_url" -c "create database $database" >/dev/null
# The first instance migrates the new database and writes the shared keys into DATA_DIR; then the second.
supervise app1 "$TRACKSTACK_1" & supervisors+=($!)
wait_ready "$TRACKSTACK_1" "$TRACKSTACK_HTTP_PORT"
supervise app2 "$TRACKSTACK_2" & supervisors+=($!)
wait_ready "$TRACKSTACK_2" "$TRACKSTACK_HTTP_PORT"

haproxy -db -f "$repo/deploy/haproxy.cfg" >>"$run/haproxy.log" 2>&1 &
haproxy_pid=$!
wait_ready "$HAPROXY_BIND" "$HAPROXY_HTTP_PORT"
echo "try.sh: ready at http://$HAPROXY_BIND:$HAPROXY_HTTP_PORT (devices on $HAPROXY_BIND, Traccar's ports; logs and pids in $run)"

[ "${1:-}" = "--check" ] && exit 0
wait "$haproxy_pid"
