#!/usr/bin/env bash
# Import memory benchmark: a CSV of ROWS rows of published figures (default 1,000,000, about
# 30 MB: under the 64 MiB input cap), release build; prints wall time and peak RSS.
# Target: peak RSS under 500 MB for 1,000,000 rows, whatever the row count.
#
#   bench/import.sh [WORKDIR]            (default: target/bench-import)
#   ROWS=100000 bench/import.sh          (fewer rows)
#   CHECK_ONLY=1 bench/import.sh         (the last row is bad: every row is read, built and
#                                         checked, nothing is written; the import's first pass)
#
# Each record is written with two fsyncs (file and folder), so a full import of 1,000,000 rows
# takes as long as 2,000,000 fsyncs on the results disk; CHECK_ONLY measures the reading pass
# over all rows in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-target/bench-import}
rows=${ROWS:-1000000}
check_only=${CHECK_ONLY:-0}

cargo build --release --quiet -p cargo-diskbench --bin cargo-diskbench
bin=target/release/cargo-diskbench
mkdir -p "$work"
csv="$work/figures-$rows-$check_only.csv"
if [ ! -f "$csv" ]; then
  awk -v rows="$rows" -v bad="$check_only" 'BEGIN {
    print "date,label,seq-read_mib_s,rand-read_iops"
    for (i = 0; i < rows; i++) {
      if (bad == 1 && i == rows - 1) { print "2026-09-30,last,not-a-number,1"; continue }
      printf "2026-%02d-%02d,r%d,%d,%d\n", 1 + i % 9, 1 + i % 28, i, 100 + i % 900, 1000 + i % 9000
    }
  }' >"$csv"
fi
echo "CSV: $rows rows, $(du -h "$csv" | cut -f1)$([ "$check_only" = 1 ] && echo ', last row bad (nothing is written)')"
rm -rf "$work/results"
# GNU time: %e wall seconds, %M peak resident set in KiB, %x exit code.
/usr/bin/time -f "%e %M %x" -o "$work/time.txt" \
  "$bin" import "$csv" --results "$work/results" >/dev/null 2>"$work/import.log" || true
# A non-zero exit adds a "Command exited with non-zero status" line first: the figures are last.
read -r wall_s peak_kib code < <(tail -n 1 "$work/time.txt")
# No results folder at all after a refused import (CHECK_ONLY): 0 written, not a failed script.
written=$( (find "$work/results" -name '*.json' 2>/dev/null || true) | wc -l)
printf 'import: exit %s, %s s wall, %.0f MiB peak RSS, %s records written\n' "$code" "$wall_s" \
  "$(awk "BEGIN { print $peak_kib / 1024 }")" "$written"
tail -n 1 "$work/import.log"
echo "(target: < 500 MB peak RSS; machine load now: $(cut -d' ' -f1-3 /proc/loadavg))"
