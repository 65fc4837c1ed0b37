#!/usr/bin/env bash
# Seconds from README's first command (`make demo`) on a fresh clone to /readyz answering 200.
# Usage: benchmarks/time_to_ready.sh [PORT]   (pip's cache is bypassed so every wheel is fetched again)
set -euo pipefail
port=${1:-8765}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill -- -$pid 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q "$repo" "$work/gweta"
cd "$work/gweta"
start=$(date +%s.%N)
PIP_NO_CACHE_DIR=1 setsid make demo PORT="$port" >"$work/demo.log" 2>&1 &
pid=$!
until curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null; then tail -20 "$work/demo.log"; echo "make demo exited early" >&2; exit 1; fi
  sleep 0.5
done
ready=$(date +%s.%N)
curl -sN --max-time 30 "http://127.0.0.1:$port/api/v1/query/stream?q=How+long+is+maternity+leave%3F" >"$work/answer.sse"
printf 'fresh clone -> make demo -> /readyz 200: %.0f s; first question: %s token events, final: %s\n' \
  "$(echo "$ready - $start" | bc)" "$(grep -c '^event: token' "$work/answer.sse")" \
  "$(grep -q '^event: final' "$work/answer.sse" && echo yes || echo no)"
grep -E "^(real|Installing collected|Successfully installed gweta)" "$work/demo.log" | cut -c1-80 || true
