#!/usr/bin/env bash
# The fio how-to article's job files (read.fio: [bgread], write.fio: [bgwrite]; libaio,
# iodepth 64, direct=1, invalidate=1) with size and runtime scaled down, run through
# `cargo diskbench fio FILE.fio` and through `fio FILE.fio`, in alternating pairs (fio first in
# odd pairs, ours first in even ones), each run on a file neither has seen (removed before
# every run). Prints every run's IOPS, the per-pair ratio ours/fio, and the load average
# before each run; then per file the medians, fio's own run-to-run band (its lowest and highest
# run over its median) and whether the engine's median over fio's lies inside that band.
#
# usage: bench/vs-fio-jobfile.sh [--dir DIR] [--size SIZE] [--runtime S] [--pairs N] [--bin PATH]
# needs: fio, jq; builds the release binary unless --bin is given.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dir="$repo/target/bench-jobfile"
size=512M
runtime=10
pairs=3
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --runtime) runtime=$2; shift 2 ;;
        --pairs) pairs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --release -q -p cargo-diskbench)
    bin="$repo/target/release/cargo-diskbench"
fi
mkdir -p "$dir"
rm -f "$dir/iops.txt"
data="$dir/testfio"
for kind in read write; do
    rw=rand$kind
    section=bg$kind
    cat > "$dir/$kind.fio" <<JOB
[global]
rw=$rw
size=$size
runtime=$runtime
filename=$data
ioengine=libaio
iodepth=4
invalidate=1
direct=1
[$section]
rw=$rw
iodepth=64
JOB
done

ours() { # FILE DIRECTION -> IOPS
    rm -f "$data"
    "$bin" fio "$1" --output-format=json 2>/dev/null | jq -r ".tests[0].$2.iops"
}
theirs() {
    rm -f "$data"
    fio "$1" --output-format=json 2>/dev/null | jq -r ".jobs[0].$2.iops"
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "build: $(git -C "$repo" rev-parse --short HEAD), bin: $bin, size=$size runtime=$runtime"
echo "file pair order load(ours) ours_iops load(fio) fio_iops ratio"
for kind in read write; do
    for p in $(seq 1 "$pairs"); do
        if [ $((p % 2)) -eq 1 ]; then
            lf=$(load); f=$(theirs "$dir/$kind.fio" "$kind")
            lo=$(load); o=$(ours "$dir/$kind.fio" "$kind")
            order=fio-first
        else
            lo=$(load); o=$(ours "$dir/$kind.fio" "$kind")
            lf=$(load); f=$(theirs "$dir/$kind.fio" "$kind")
            order=ours-first
        fi
        ratio=$(awk -v o="$o" -v f="$f" 'BEGIN { printf "%.3f", o / f }')
        printf '%s.fio %d %s [%s] %.0f [%s] %.0f %s\n' "$kind" "$p" "$order" "$lo" "$o" "$lf" "$f" "$ratio"
        echo "$kind $o $f" >> "$dir/iops.txt"
    done
done
echo
echo "file ours_median fio_median ours/fio fio_band verdict"
for kind in read write; do
    awk -v k="$kind" 'BEGIN { n = 0 } $1 == k { o[n] = $2; f[n] = $3; n++ }
        function median(a, m,   i, j, t) {
            for (i = 0; i < m; i++) for (j = i + 1; j < m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return m % 2 ? a[int(m / 2)] : (a[m / 2 - 1] + a[m / 2]) / 2
        }
        END {
            mo = median(o, n); mf = median(f, n); lo = f[0]; hi = f[n - 1]
            r = mo / mf; inside = (r >= lo / mf && r <= hi / mf) ? "inside fio'"'"'s band" : "OUTSIDE fio'"'"'s band"
            printf "%s.fio %.0f %.0f %.3f %.3f-%.3f %s\n", k, mo, mf, r, lo / mf, hi / mf, inside
        }' "$dir/iops.txt"
done
rm -f "$data"
