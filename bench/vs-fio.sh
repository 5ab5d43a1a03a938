#!/usr/bin/env bash
# cargo-diskbench's engine against fio: the same job, the same file, alternating runs.
#
# For each of the six columns, N pairs of runs (fio first in odd pairs, the engine first in
# even pairs, so drift and cache state hit both alike), then per column: the engine's figure,
# fio's figure, their ratio and the CPU time per I/O of each, all medians of the pairs.
# Then one-at-a-time 4 KiB reads on tmpfs: the engine (psync) vs fio psync vs a bare, untimed
# pread loop (bench/bare_pread.c), rotated in one run.
#
# fio runs with --ioengine=libaio --direct=1 (the sync-write column with --fdatasync=1); the
# engine runs the very same options through `cargo-diskbench fio` (libaio maps to io_uring).
#
# usage: bench/vs-fio.sh [--dir DIR] [--runtime S] [--ramp S] [--pairs N] [--size SIZE]
#                        [--only COLUMNS|none] [--no-tmpfs-qd1] [--tmpfs-dir DIR] [--bin PATH]
# needs: fio, jq, cc, /usr/bin/time; builds the release binary unless --bin is given.
#
# CPU per I/O: fio's from its usr_cpu/sys_cpu x job_runtime (measured window); the engine's from
# its record (the job threads over the measured window) and, as "proc", from /usr/bin/time over
# the whole process scaled by runtime / (runtime + ramp): that one includes io_uring's kernel
# worker threads (iou-wrk), which do the copying for buffered files such as tmpfs.
set -euo pipefail

dir=${PWD}
runtime=5
ramp=1
pairs=3
size=1g
only=seq-read,seq-write,rand-read,rand-write,qd1-read,sync-write
tmpfs_qd1=1
tmpfs_dir=/dev/shm
bin=

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
        --dir) dir=$2; shift 2 ;;
        --runtime) runtime=$2; shift 2 ;;
        --ramp) ramp=$2; shift 2 ;;
        --pairs) pairs=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --no-tmpfs-qd1) tmpfs_qd1=0; shift ;;
        --tmpfs-dir) tmpfs_dir=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "vs-fio.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $pairs in ''|*[!0-9]*|0) echo "vs-fio.sh: --pairs needs a whole number >= 1" >&2; exit 2 ;; esac
for tool in fio jq cc /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "vs-fio.sh: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
[ -d "$dir" ] || { echo "vs-fio.sh: --dir $dir: not a folder" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --release -q -p cargo-diskbench)
    bin=$repo/target/release/cargo-diskbench
fi

work=$(mktemp -d "$dir/.vs-fio.XXXXXX")
shm_work=
cleanup() { rm -rf "$work"; [ -z "$shm_work" ] || rm -rf "$shm_work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Median of the numbers on stdin (mean of the middle two for an even count).
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# The columns: id, fio options, headline (mib_s or iops).
column_opts() {
    case $1 in
        seq-read)   echo "--rw=read --bs=1m --iodepth=32 --numjobs=1" ;;
        seq-write)  echo "--rw=write --bs=1m --iodepth=32 --numjobs=1" ;;
        rand-read)  echo "--rw=randread --bs=4k --iodepth=32 --numjobs=4" ;;
        rand-write) echo "--rw=randwrite --bs=4k --iodepth=32 --numjobs=4" ;;
        qd1-read)   echo "--rw=randread --bs=4k --iodepth=1 --numjobs=1" ;;
        sync-write) echo "--rw=write --bs=4k --iodepth=1 --numjobs=1 --fdatasync=1" ;;
        *) echo "vs-fio.sh: unknown column $1" >&2; exit 2 ;;
    esac
}
headline_of() { case $1 in seq-*) echo mib_s ;; *) echo iops ;; esac; }

# fio's JSON -> "headline ios cpu_s" (CPU: fio's usr/sys percent of the summed job runtime).
fio_figures() { # json headline
    jq -r --arg h "$2" '.jobs[0] as $j
        | ($j.read.total_ios + $j.write.total_ios) as $ios
        | (if $h == "mib_s" then ($j.read.bw_bytes + $j.write.bw_bytes) / 1048576
           else $j.read.iops + $j.write.iops end) as $fig
        | (($j.usr_cpu + $j.sys_cpu) / 100 * $j.job_runtime / 1000) as $cpu
        | "\($fig) \($ios) \($cpu)"' "$1"
}
# The engine's record -> "headline ios cpu_s engine-used".
ours_figures() { # json headline
    jq -r --arg h "$2" '.tests[0] as $t
        | [$t.read, $t.write] | map(select(. != null)) as $d
        | ($d | map(.ios) | add) as $ios
        | (if $h == "mib_s" then ($d | map(.mib_s) | add) else ($d | map(.iops) | add) end) as $fig
        | "\($fig) \($ios) \($t.cpu.user_s + $t.cpu.sys_s) \($t.engine.used)"' "$1"
}

if [ "$only" != none ]; then
file=$work/vs-fio.dat
common="--filename=$file --size=$size --time_based --runtime=$runtime --ramp_time=$ramp --group_reporting"

echo "laying out $size in $work (fio, sequential 1 MiB writes)..." >&2
fio --name=layout --filename="$file" --size="$size" --rw=write --bs=1m --iodepth=8 \
    --ioengine=libaio --direct=1 --refill_buffers --output=/dev/null

printf '\n%s\n' "engine vs fio (libaio, direct) in $dir: ${runtime}s + ${ramp}s ramp, size $size, median of $pairs alternating pairs"
printf '%-11s %-8s %12s %12s %7s %12s %12s %12s %7s  %s\n' column unit engine fio ratio "cpu/io eng" "eng proc" "cpu/io fio" ratio engine-used
IFS=, read -r -a columns <<<"$only"
for col in "${columns[@]}"; do
    opts=$(column_opts "$col")
    h=$(headline_of "$col")
    : >"$work/ours.txt"; : >"$work/fio.txt"
    for ((p = 1; p <= pairs; p++)); do
        order="fio ours"; [ $((p % 2)) -eq 0 ] && order="ours fio"
        for who in $order; do
            if [ "$who" = fio ]; then
                # shellcheck disable=SC2086
                fio --name="$col" $opts $common --ioengine=libaio --direct=1 \
                    --output-format=json --output="$work/fio.json" >/dev/null
                fio_figures "$work/fio.json" "$h" >>"$work/fio.txt"
            else
                # shellcheck disable=SC2086
                /usr/bin/time -f "%U %S" -o "$work/ours.time" \
                    "$bin" fio --name="$col" $opts $common --ioengine=libaio --direct=1 \
                    --output-format=json --output="$work/ours.json" 2>"$work/ours.err" \
                    || { cat "$work/ours.err" >&2; exit 1; }
                echo "$(ours_figures "$work/ours.json" "$h") $(tail -1 "$work/ours.time")" >>"$work/ours.txt"
            fi
        done
    done
    # Per pair: the figures and CPU per I/O; then medians.
    paste -d' ' "$work/ours.txt" "$work/fio.txt" | awk -v rt="$runtime" -v rp="$ramp" '{
        print $1, $7, ($7 > 0 ? $1 / $7 : 0), ($2 > 0 ? $3 / $2 * 1e6 : 0), ($8 > 0 ? $9 / $8 * 1e6 : 0), $4,
              ($2 > 0 ? ($5 + $6) * rt / (rt + rp) / $2 * 1e6 : 0) }' >"$work/pairs.txt"
    m() { awk -v c="$1" '{print $c}' "$work/pairs.txt" | median; }
    ours_m=$(m 1); fio_m=$(m 2); ratio_m=$(m 3); cpu_ours=$(m 4); cpu_fio=$(m 5); cpu_proc=$(m 7)
    used=$(awk '{print $6}' "$work/pairs.txt" | sort -u | paste -sd/)
    unit=IOPS; [ "$h" = mib_s ] && unit=MiB/s
    # The CPU ratio uses the larger of the engine's two CPU figures: never flattering.
    printf '%-11s %-8s %12.1f %12.1f %7.3f %10.2fus %10.2fus %10.2fus %7.3f  %s\n' "$col" "$unit" \
        "$ours_m" "$fio_m" "$ratio_m" "$cpu_ours" "$cpu_proc" "$cpu_fio" \
        "$(awk -v a="$cpu_ours" -v p="$cpu_proc" -v b="$cpu_fio" 'BEGIN{if (p > a) a = p; print (b > 0 ? a / b : 0)}')" "$used"
    awk '{printf "    pair %d: engine %.1f  fio %.1f  ratio %.3f  cpu/io %.2fus (proc %.2fus) vs %.2fus\n", NR, $1, $2, $3, $4, $7, $5}' \
        "$work/pairs.txt" >&2
done
rm -f "$file"
fi

[ "$tmpfs_qd1" = 1 ] || exit 0

# One-at-a-time 4 KiB reads on tmpfs: here the engine, not the disk, is the limit.
shm_work=$(mktemp -d "$tmpfs_dir/.vs-fio.XXXXXX")
shm_file=$shm_work/qd1.dat
shm_size=256m
shm_bytes=$((256 * 1024 * 1024))
cc -O2 -o "$shm_work/bare_pread" "$repo/bench/bare_pread.c"
fio --name=layout --filename="$shm_file" --size=$shm_size --rw=write --bs=1m \
    --refill_buffers --output=/dev/null
qd1="--name=qd1-read --filename=$shm_file --size=$shm_size --rw=randread --bs=4k --iodepth=1
     --numjobs=1 --time_based --runtime=$runtime --ramp_time=$ramp --ioengine=psync"
: >"$work/q_ours.txt"; : >"$work/q_fio.txt"; : >"$work/q_bare.txt"
for ((p = 1; p <= pairs; p++)); do
    case $((p % 3)) in 1) order="fio ours bare" ;; 2) order="ours bare fio" ;; 0) order="bare fio ours" ;; esac
    for who in $order; do
        case $who in
            fio)
                # shellcheck disable=SC2086
                fio $qd1 --output-format=json --output="$work/fio.json" >/dev/null
                fio_figures "$work/fio.json" iops >>"$work/q_fio.txt" ;;
            ours)
                # shellcheck disable=SC2086
                "$bin" fio $qd1 --output-format=json --output="$work/ours.json" 2>"$work/ours.err" \
                    || { cat "$work/ours.err" >&2; exit 1; }
                ours_figures "$work/ours.json" iops >>"$work/q_ours.txt" ;;
            bare)
                sleep "$ramp" # the same pause the others spend ramping: equal cache/CPU history
                "$shm_work/bare_pread" "$shm_file" "$shm_bytes" 4096 "$runtime" \
                    | sed 's/[a-z_]*=//g' | awk '{print $1, $2, $4}' >>"$work/q_bare.txt" ;;
        esac
    done
done
med() { awk -v c="$2" '{print $c}' "$1" | median; }
q_ours=$(med "$work/q_ours.txt" 1); q_fio=$(med "$work/q_fio.txt" 1); q_bare=$(med "$work/q_bare.txt" 1)
cpu_io() { awk '{ if ($2 > 0) print $3 / $2 * 1e6 }' "$1" | median; }
printf '\n%s\n' "one-at-a-time 4 KiB reads on $tmpfs_dir (psync), ${runtime}s, median of $pairs rotated runs"
printf '%-22s %12s %10s\n' "" IOPS "cpu/io"
printf '%-22s %12.0f %8.2fus\n' "engine (psync)" "$q_ours" "$(cpu_io "$work/q_ours.txt")"
printf '%-22s %12.0f %8.2fus\n' "fio psync" "$q_fio" "$(cpu_io "$work/q_fio.txt")"
printf '%-22s %12.0f %8.2fus\n' "bare pread loop" "$q_bare" "$(cpu_io "$work/q_bare.txt")"
awk -v o="$q_ours" -v f="$q_fio" -v b="$q_bare" 'BEGIN {
    printf "IOPS:       engine / fio psync = %.3f (target > 1)   engine / bare loop = %.3f (target >= 0.95)   bare / fio = %.3f\n", o / f, o / b, b / f }'
# On a busy machine IOPS mostly say how much CPU each run got; I/Os per CPU-second do not.
awk -v o="$(cpu_io "$work/q_ours.txt")" -v f="$(cpu_io "$work/q_fio.txt")" -v b="$(cpu_io "$work/q_bare.txt")" 'BEGIN {
    printf "per CPU-s:  engine / fio psync = %.3f                engine / bare loop = %.3f                    bare / fio = %.3f\n", f / o, b / o, f / b }'
for who in ours fio bare; do
    awk -v w="$who" '{printf "    %s run %d: %.0f IOPS, %.2fus CPU per I/O\n", w, NR, $1, ($2 > 0 ? $3 / $2 * 1e6 : 0)}' "$work/q_$who.txt" >&2
done
