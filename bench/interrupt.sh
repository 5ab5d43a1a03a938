#!/usr/bin/env bash
# How fast `site`, `merge` and `import` stop on SIGINT / SIGTERM: each command is started on a
# large input, signalled after a range of delays (so the signal lands in loading, analysing,
# rendering, copying or writing), and the time from the signal to the exit is printed with the
# exit code. Target: exit 130 within 1 s of the signal, at any point.
#
#   bench/interrupt.sh [WORKDIR]     (default: target/bench-interrupt)
#   BIN=target/debug/cargo-diskbench RUNNERS=250 RUNS=20 bench/interrupt.sh
#
# Uses the release build unless BIN is given. Records are generated once (fsync each: slow).
# The machine may be shared: run it more than once and read the medians, not one figure.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-target/bench-interrupt}
runners=${RUNNERS:-250}
runs=${RUNS:-20}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p cargo-diskbench -p diskbench-site --example demo_site
  BIN=target/release/cargo-diskbench
  demo=target/release/examples/demo_site
else
  cargo build --quiet -p diskbench-site --example demo_site
  demo=target/debug/examples/demo_site
fi
mkdir -p "$work"
if [ ! -f "$work/results/.complete-$runners-$runs" ]; then
  rm -rf "$work/results"
  echo "generating $((runners * runs)) records (once)..."
  "$demo" "$work/results" "$runners" "$runs" >/dev/null
  touch "$work/results/.complete-$runners-$runs"
fi
if [ ! -f "$work/many.csv" ]; then
  { echo "date,label,seq-read_mib_s"; for i in $(seq 1 20000); do echo "2026-10-01,csv-$i,$((100 + i))"; done; } >"$work/many.csv"
fi

now_ns() { date +%s%N; }

# try NAME DELAY_MS SIGNAL CMD...: prints "NAME delay signal exit latency_ms"
try() {
  local name=$1 delay_ms=$2 sig=$3
  shift 3
  rm -rf "$work/out" "$work/merged" "$work/imported"
  "$@" >/dev/null 2>"$work/last.log" &
  local pid=$!
  sleep "$(printf '0.%03d' "$delay_ms")"
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" || true
    printf '%-6s %5d ms  %-4s finished before the signal\n' "$name" "$delay_ms" "$sig"
    return
  fi
  local sent
  sent=$(now_ns)
  kill -s "$sig" "$pid"
  local code=0
  wait "$pid" || code=$?
  local done_ns
  done_ns=$(now_ns)
  printf '%-6s %5d ms  %-4s exit %3d after %4d ms\n' "$name" "$delay_ms" "$sig" "$code" \
    $(((done_ns - sent) / 1000000))
}

for delay in 50 200 400 700 950; do
  for sig in INT TERM; do
    try site "$delay" "$sig" "$BIN" site --results "$work/results" --out "$work/out"
    try merge "$delay" "$sig" "$BIN" merge --into "$work/merged" "$work/results"
    try import "$delay" "$sig" "$BIN" import --results "$work/imported" "$work/many.csv"
  done
done
