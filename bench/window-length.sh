#!/usr/bin/env bash
# How much a short measured window changes a column's figure on this disk, from fio itself at
# the public harness's settings (2 s ramp + 20 s; 2 GiB files, 1 GiB per job for the 4-job
# columns), with a 0.5 s IOPS log: RUNS runs (default 3) of each column, then per column the
# spread over the runs of the whole 20 s figure, of the first 5 s and of the first 3 s (what
# a rule that stops early would see), and within each run how far its four 5 s blocks are
# apart. It answers whether a shorter window, not the disk, is what widens a spread.
#
#   bench/window-length.sh [DIR]       (default /work/bench-scratch/window-length; removed after)
#   RUNS=5 bench/window-length.sh
set -euo pipefail
dir=${1:-/work/bench-scratch/window-length}
runs=${RUNS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT
opts() { case $1 in
  seq-read) echo "--rw=read --bs=1m --iodepth=32 --numjobs=1 --size=2g" ;;
  seq-write) echo "--rw=write --bs=1m --iodepth=32 --numjobs=1 --size=2g" ;;
  rand-read) echo "--rw=randread --bs=4k --iodepth=32 --numjobs=4 --size=1g" ;;
  rand-write) echo "--rw=randwrite --bs=4k --iodepth=32 --numjobs=4 --size=1g" ;;
  qd1-read) echo "--rw=randread --bs=4k --iodepth=1 --numjobs=1 --size=2g" ;;
  sync-write) echo "--rw=write --bs=4k --iodepth=1 --numjobs=1 --fdatasync=1 --size=2g" ;;
esac; }
columns=(seq-read seq-write rand-read rand-write qd1-read sync-write)
echo "date: $(date -u +%FT%TZ)  host: $(uname -n), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)  dir: $dir"
for run in $(seq 1 "$runs"); do
  for col in "${columns[@]}"; do
    rm -rf "$dir"; mkdir -p "$dir"
    o=$(opts "$col")
    jobs=${o#*--numjobs=}; jobs=${jobs%% *}; size=${o#*--size=}; size=${size%% *}
    ro=()
    case $col in *-read)
      fio --name=prep --directory="$dir" --ioengine=libaio --direct=1 --bs=1M --iodepth=32 \
        --size="$size" --numjobs="$jobs" --rw=write --fallocate=none --refill_buffers=1 \
        --end_fsync=1 --filename_format="$col.\$jobnum" --output=/dev/null
      ro=(--allow_file_create=0 --readonly) ;;
    esac
    # shellcheck disable=SC2086 # options split into words on purpose
    fio --name="$col" --directory="$dir" --ioengine=libaio --direct=1 $o --time_based --runtime=20 \
      --ramp_time=2 --group_reporting=1 --filename_format="$col.\$jobnum" "${ro[@]}" \
      --write_iops_log="$out/$col.$run" --log_avg_msec=500 --output=/dev/null
    echo "$(date -u +%T) $col run $run (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
python3 - "$out" "$runs" "${columns[@]}" <<'PY'
import collections, glob, statistics as st, sys
out, runs, cols = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def series(col, run):
    sums = collections.defaultdict(float)
    for f in glob.glob(f"{out}/{col}.{run}_iops.*.log"):
        for i, line in enumerate(open(f)):
            sums[i] += float(line.split(",")[1])
    return [sums[i] for i in sorted(sums)]
spread = lambda v: (max(v) - min(v)) / st.median(v) * 100
print(f"{'column':11} {'20 s':>7} {'first 5 s':>10} {'first 3 s':>10}  5 s blocks within each run")
for c in cols:
    s = [series(c, r) for r in range(1, runs + 1)]
    n = min(len(x) for x in s)
    s = [x[:n] for x in s]
    blocks = []
    for x in s:
        b = [st.mean(x[i:i + 10]) for i in range(0, n - 9, 10)]
        blocks.append(f"{(max(b) - min(b)) / st.mean(x) * 100:.1f}%")
    print(f"{c:11} {spread([st.mean(x) for x in s]):6.1f}% {spread([st.mean(x[:10]) for x in s]):9.1f}% "
          f"{spread([st.mean(x[:6]) for x in s]):9.1f}%  {' / '.join(blocks)}")
print("spread: (max - min) / median over the runs; blocks: (max - min) of a run's 5 s means / its 20 s mean")
PY
