#!/usr/bin/env bash
# Render benchmark: 10,000 generated records (500 runners x 20 runs) into a site, release
# build; prints wall time and peak memory. Target on a 2-core machine: <= 3 s, <= 300 MiB.
#
#   bench/site.sh [WORKDIR]      (default: target/bench-site; records are generated once)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-target/bench-site}
runners=${RUNNERS:-500}
runs=${RUNS:-20}

cargo build --release --quiet -p cargo-diskbench -p diskbench-site --bin cargo-diskbench --example demo_site
bin=target/release/cargo-diskbench

if [ ! -f "$work/results/.complete-$runners-$runs" ]; then
  rm -rf "$work/results"
  echo "generating $((runners * runs)) records (once; each is written with fsync, so this is slow)..."
  target/release/examples/demo_site "$work/results" "$runners" "$runs"
  touch "$work/results/.complete-$runners-$runs"
fi
echo "records: $(find "$work/results" -name '*.json' | wc -l), $(du -sh "$work/results" | cut -f1)"

for attempt in 1 2 3; do
  rm -rf "$work/site"
  # GNU time: %e wall seconds, %M peak resident set in KiB, %U/%S CPU seconds (the machine
  # may be shared: CPU time says what the work cost, wall time what a user waits).
  /usr/bin/time -f "%e %M %U %S" -o "$work/time.txt" \
    "$bin" site --results "$work/results" --out "$work/site" 2>"$work/site.log"
  read -r wall_s peak_kib user_s sys_s <"$work/time.txt"
  printf 'run %d: %s s wall (CPU %s s user + %s s sys), %.0f MiB peak RSS, %s pages\n' "$attempt" "$wall_s" "$user_s" "$sys_s" \
    "$(awk "BEGIN { print $peak_kib / 1024 }")" "$(find "$work/site" -name "*.html" | wc -l)"
done
echo "(target: <= 3 s and <= 300 MiB; machine load now: $(cut -d' ' -f1-3 /proc/loadavg))"
