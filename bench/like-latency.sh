#!/usr/bin/env bash
# `run --like LABEL` against the published figures it emulates: REPEATS runs (default 5) of
# qd1-read and sync-write under the caps and the FUSE latency emulation, each row the
# target's IOPS and p99 beside the measured ones and the ratio. Needs root (cgroup caps,
# mount) and /dev/fuse; release build.
#
#   bench/like-latency.sh [LABEL ...]    (default: runson-m8a-2xlarge runson-m8azn-large, EBS gp3)
#   REPEATS=3 DIR=/work/bench-scratch bench/like-latency.sh
#
# Target: IOPS and p99 within 25% of the label's (the issue's tolerance); a label p99 below
# its own time per I/O (a published sync-write p99 times the write alone) is printed, not judged.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${REPEATS:-5}
dir=${DIR:-target/bench-like}
labels=("$@")
[ ${#labels[@]} -gt 0 ] || labels=(runson-m8a-2xlarge runson-m8azn-large)

cargo build --release --quiet -p cargo-diskbench --bin cargo-diskbench
bin=target/release/cargo-diskbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dir"
"$bin" diskbench import ../shared/data/published/ec2-storage-2026-09-30_10-01.csv --results "$work/results" >/dev/null 2>&1
echo "date: $(date -u +%FT%TZ)  host: $(uname -n), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "dir: $dir ($(df -T "$dir" | awk 'NR==2 {print $2}'))"
printf '%-22s %-10s %3s %12s %12s %7s %10s %10s %7s  %s\n' \
  label column run target_iops iops ratio target_p99 p99 ratio "held / slower here"
for label in "${labels[@]}"; do
  for i in $(seq 1 "$repeats"); do
    "$bin" diskbench run --like "$label" --no-steps --no-site --only qd1-read,sync-write \
      --dir "$dir" --results "$work/results" --json - --quiet >"$work/rec.json" 2>"$work/err.log" ||
      { cat "$work/err.log"; exit 1; }
    jq -r --arg lab "$label" --arg i "$i" '
      .settings.like as $l
      | $l.columns[]
      | select(.id == "qd1-read" or .id == "sync-write")
      | [$lab, .id, $i,
         (.target | floor), (.measured | floor), ((.measured / .target * 1000 | round) / 1000),
         ((.latency.target_p99_ns // 0) / 1000 | floor | tostring) + "us",
         ((.latency.measured_p99_ns // 0) / 1000 | floor | tostring) + "us",
         (if (.latency.target_p99_ns // 0) >= (.latency.target_per_io_ns // 1e18)
          then ((.latency.measured_p99_ns / .latency.target_p99_ns * 1000 | round) / 1000 | tostring)
          else "n/j" end),
         (($l.latency_emulation // {}) | "\(.held_reads // 0)r \(.held_direct_writes // 0)w \(.held_syncs // 0)s / \(.slower_here // 0), timer late \((.late_per_io_ns // 0) / 1000 | floor) us")]
      | @tsv' "$work/rec.json" |
      while IFS=$'\t' read -r a b c d e f g h k m; do
        printf '%-22s %-10s %3s %12s %12s %7s %10s %10s %7s  %s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$k" "$m"
      done
  done
done
echo "n/j: the label's p99 is below its own time per I/O (the write without its fdatasync): not judged"
