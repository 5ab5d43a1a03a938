#!/usr/bin/env bash
# cargo-diskbench against fio, run the way published figures are made, in alternating pairs.
#
# Modes:
#   suite (default)  Each column as the standard suite runs it (`cargo diskbench run --only
#                    COLUMN`, default settings: every column makes, prepares and removes its
#                    own files, so a column run alone is the column as the suite runs it)
#                    against fio run exactly as the public harness runs that column: libaio,
#                    O_DIRECT, time-based after a 2 s ramp, one file per job
#                    (--filename_format={name}.$jobnum) removed after the test; a read test's
#                    files written first by a separate fio job (--fallocate=none
#                    --refill_buffers=1 --end_fsync=1), a write test's created and fallocated
#                    by fio itself. Only the file size differs: --size per job file for both
#                    (the harness uses 2 GiB for one job, 1 GiB per job for four).
#                    Per pair and column: the two runs back to back, fio first in odd pairs,
#                    the engine first in even ones, the columns in the suite's order; pairing
#                    per column keeps the two runs about 10 s apart, so the host's drift hits
#                    both alike. Per column: medians of the engine's figure, fio's, their
#                    ratio and CPU per I/O.
#   fio              Tutorial command lines through `cargo diskbench fio` and through fio, each
#                    on a file neither has seen (removed before every run), alternating pairs:
#                    medians of IOPS and p99 (fio with --lat_percentiles=1: issue to
#                    completion, as ours). With --fdatasync, fio reports the sync apart from
#                    the write: p99 is the sync call's own in both, the mean is write + sync.
#   prep             The write columns rand-write and sync-write on a new fallocated file (as
#                    fio and the suite prepare it) and on a file written before (fio and
#                    `cargo diskbench fio` with --overwrite=1), rotated per pair: how much the
#                    file's preparation moves a write figure.
#   qd1              One-at-a-time 4 KiB reads on tmpfs: the engine vs fio psync vs a bare
#                    pread loop (bench/bare_pread.c), rotated.
#
# usage: bench/vs-fio.sh [suite|fio|prep|qd1] [--dir DIR] [--runtime S] [--pairs N] [--size SIZE]
#                        [--only COLUMNS|LINES] [--settle S] [--fio-vs-fio] [--fio-extra OPTS]
#                        [--bin PATH]
#   --only: suite mode, column ids; fio mode, line ids (write, randwrite-fdatasync, randrw,
#   read, randread-2x16-libaio, randread-2x16-psync).
#   --fio-vs-fio: the engine's slot runs fio too, the same way (suite and fio modes): an A/A
#   run, whose ratios show how far this machine moves a figure between two runs of one tool.
#   A tolerance tighter than that spread cannot be checked here with this many pairs.
#   --fio-extra OPTS: more options for fio's measured runs (suite and fio modes), e.g.
#   --fio-extra --thread to run fio's jobs as threads (the engine's run as processes, as
#   fio's do by default).
#   --settle S: wait S seconds before every run of either tool (suite and fio modes; default
#   0). For memory on a VM that hands freed memory back to its host (virtio-balloon free page
#   reporting): a write column there runs at the speed of the host's page faults unless the
#   previous run freed its memory a moment ago, so back-to-back runs compare the order, not
#   the tools. 10 s lets the guest hand all of it back before either tool starts.
# needs: fio, jq, cc (qd1); builds the release binary unless --bin is given.
# The load average is printed with every pair: on a busy machine say so beside the figures.
set -euo pipefail

mode=suite
case ${1:-} in suite|fio|prep|qd1) mode=$1; shift ;; esac
dir=${PWD}
runtime=5
ramp=2 # the public harness's ramp, and the suite's default
pairs=3
size=1g
only=
settle=0
aa=0
fio_extra=
bin=

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
        --dir) dir=$2; shift 2 ;;
        --runtime) runtime=$2; shift 2 ;;
        --pairs) pairs=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --settle) settle=$2; shift 2 ;;
        --fio-vs-fio) aa=1; shift ;;
        --fio-extra) fio_extra=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "vs-fio.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $pairs in ''|*[!0-9]*|0) echo "vs-fio.sh: --pairs needs a whole number >= 1" >&2; exit 2 ;; esac
case $settle in ''|*[!0-9]*) echo "vs-fio.sh: --settle needs a whole number of seconds >= 0" >&2; exit 2 ;; esac
for tool in fio jq; do
    command -v "$tool" >/dev/null || { echo "vs-fio.sh: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
[ -d "$dir" ] || { echo "vs-fio.sh: --dir $dir: not a folder" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --release -q -p cargo-diskbench)
    bin=$repo/target/release/cargo-diskbench
fi

work=$(mktemp -d "$dir/.vs-fio.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# Median of the numbers on stdin (mean of the middle two for an even count).
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# The left-hand tool's name in the tables: the engine, or fio itself in an A/A run.
subject() { if [ "$aa" = 1 ]; then echo "fio (A/A)"; else echo "$1"; fi; }
settle_before_run() { [ "$settle" -eq 0 ] || sleep "$settle"; }

# The columns as fio options (CONTRACT section 1).
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

# fio's JSON -> "headline ios cpu_s" (CPU: fio's usr/sys percent of the job runtime).
fio_figures() { # json headline
    jq -r --arg h "$2" '.jobs[0] as $j
        | ($j.read.total_ios + $j.write.total_ios) as $ios
        | (if $h == "mib_s" then ($j.read.bw_bytes + $j.write.bw_bytes) / 1048576
           else $j.read.iops + $j.write.iops end) as $fig
        | (($j.usr_cpu + $j.sys_cpu) / 100 * $j.job_runtime / 1000) as $cpu
        | "\($fig) \($ios) \($cpu)"' "$1"
}
# One test of the engine's record -> "headline ios cpu_s engine-used file-preparation".
ours_figures() { # json test-index-or-id headline
    jq -r --arg id "$2" --arg h "$3" '(.tests[] | select(.id == $id or ($id == "0"))) as $t
        | [$t.read, $t.write] | map(select(. != null)) as $d
        | ($d | map(.ios) | add) as $ios
        | (if $h == "mib_s" then ($d | map(.mib_s) | add) else ($d | map(.iops) | add) end) as $fig
        | "\($fig) \($ios) \($t.cpu.user_s + $t.cpu.sys_s) \($t.engine.used) \($t.file_preparation.method // "-")"' "$1" | head -1
}

# One column the way the public harness runs it (bin/hw-bench.py: fio()), in $work/fio.
fio_harness_column() { # column
    local col=$1 jobs reads=0 read_only=()
    jobs=$(column_opts "$col" | sed 's/.*--numjobs=\([0-9]*\).*/\1/')
    case $col in *-read) reads=1 ;; esac
    rm -rf "$work/fio"; mkdir -p "$work/fio"
    if [ $reads = 1 ]; then
        fio --name="$col-prep" --directory="$work/fio" --ioengine=libaio --direct=1 --bs=1M \
            --iodepth=32 --size="$size" --numjobs="$jobs" --rw=write --fallocate=none \
            --refill_buffers=1 --end_fsync=1 --filename_format="$col.\$jobnum" --output=/dev/null
        read_only=(--allow_file_create=0 --readonly)
    fi
    # shellcheck disable=SC2046,SC2086 # options split into words on purpose
    fio --name="$col" --directory="$work/fio" --ioengine=libaio --direct=1 $(column_opts "$col") \
        --size="$size" --time_based --runtime="$runtime" --ramp_time="$ramp" --group_reporting=1 \
        --filename_format="$col.\$jobnum" "${read_only[@]}" $fio_extra --output-format=json --output="$work/fio.json" >/dev/null
    rm -rf "$work/fio"
}

suite_mode() {
    IFS=, read -r -a columns <<<"${only:-seq-read,seq-write,rand-read,rand-write,qd1-read,sync-write}"
    for col in "${columns[@]}"; do column_opts "$col" >/dev/null; : >"$work/ours.$col" ; : >"$work/fio.$col"; done
    echo "suite columns vs fio (the harness's way) in $dir: ${runtime}s + ${ramp}s ramp, size $size per job file, $pairs alternating pairs per column, ${settle}s settle before each run" >&2
    for ((p = 1; p <= pairs; p++)); do
        order="fio ours"; [ $((p % 2)) -eq 0 ] && order="ours fio"
        echo "  pair $p: $order (load $(load))" >&2
        for col in "${columns[@]}"; do
            for who in $order; do
                settle_before_run
                if [ "$who" = fio ]; then
                    fio_harness_column "$col"
                    echo "$(fio_figures "$work/fio.json" "$(headline_of "$col")") $(load | cut -d' ' -f1)" >>"$work/fio.$col"
                elif [ "$aa" = 1 ]; then
                    fio_harness_column "$col"
                    echo "$(fio_figures "$work/fio.json" "$(headline_of "$col")") fio - $(load | cut -d' ' -f1)" >>"$work/ours.$col"
                else
                    rm -rf "$work/results"
                    "$bin" run --dir "$work" --size "$size" --runtime "$runtime" --ramp "$ramp" \
                        --only "$col" --no-steps --no-site --quiet --results "$work/results" \
                        --json "$work/ours.json" >/dev/null 2>"$work/ours.err" \
                        || { cat "$work/ours.err" >&2; exit 1; }
                    echo "$(ours_figures "$work/ours.json" "$col" "$(headline_of "$col")") $(load | cut -d' ' -f1)" >>"$work/ours.$col"
                fi
            done
        done
    done
    printf '\n%s\n' "$(subject "engine columns") vs fio run the harness's way, $dir ($(findmnt -no FSTYPE -T "$dir" | head -1)), ${runtime}s + ${ramp}s ramp, size $size per job file, median of $pairs alternating pairs, ${settle}s settle before each run${fio_extra:+, fio given $fio_extra}"
    printf '%-11s %-6s %12s %12s %7s %13s %11s %11s  %-9s %s\n' column unit engine fio ratio "pair ratios" "cpu/io eng" "cpu/io fio" engine "file (engine)"
    for col in "${columns[@]}"; do
        # ours: fig ios cpu used prep load | fio: fig ios cpu load
        paste -d' ' "$work/ours.$col" "$work/fio.$col" | awk '{
            print $1, $7, ($7 > 0 ? $1 / $7 : 0), ($2 > 0 ? $3 / $2 * 1e6 : 0), ($8 > 0 ? $9 / $8 * 1e6 : 0), $4, $5, $6, $10 }' >"$work/pairs.txt"
        m() { awk -v c="$1" '{print $c}' "$work/pairs.txt" | median; }
        unit=IOPS; [ "$(headline_of "$col")" = mib_s ] && unit=MiB/s
        range=$(awk '{print $3}' "$work/pairs.txt" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}')
        printf '%-11s %-6s %12.1f %12.1f %7.3f %13s %9.2fus %9.2fus  %-9s %s\n' "$col" "$unit" "$(m 1)" "$(m 2)" "$(m 3)" "$range" "$(m 4)" "$(m 5)" \
            "$(awk '{print $6}' "$work/pairs.txt" | sort -u | paste -sd/)" "$(awk '{print $7}' "$work/pairs.txt" | sort -u | paste -sd/)"
        awk -v c="$col" '{printf "    %s pair %d: engine %.1f  fio %.1f  ratio %.3f  (load %s / %s)\n", c, NR, $1, $2, $3, $8, $9}' "$work/pairs.txt" >&2
    done
}

# Tutorial lines: id | options (the file and the time are added).
tutorial_lines() {
    cat <<'EOF'
write|--name=seqwrite --rw=write --bs=1m --iodepth=32 --numjobs=1 --ioengine=libaio --direct=1
randwrite-fdatasync|--name=randsync --rw=randwrite --bs=4k --fdatasync=1 --ioengine=psync --direct=1
randrw|--name=fiotest --rw=randrw --rwmixread=75 --bs=4k --iodepth=64 --ioengine=libaio --direct=1
read|--name=seqread --rw=read --bs=1m --iodepth=32 --numjobs=1 --ioengine=libaio --direct=1
randread-2x16-libaio|--name=rr --rw=randread --bs=4k --iodepth=16 --numjobs=2 --ioengine=libaio --direct=1
randread-2x16-psync|--name=rr --rw=randread --bs=4k --iodepth=16 --numjobs=2 --ioengine=psync --direct=1
EOF
}

# fio JSON -> "iops p99_ns mean_ns": the main direction (reads when the job reads). With
# fdatasync fio reports the sync apart from the write: p99 is then the sync call's own (both
# tools time that call alone), and the mean is write + sync (the sync's mean added to the
# write's), which is what one synced write costs.
fio_line_figures() {
    jq -r '.jobs[0] as $j
        | (if $j.read.total_ios > 0 then $j.read else $j.write end) as $d
        | ($j.read.iops + $j.write.iops) as $iops
        | ($j.read.total_ios == 0 and ($j.sync.lat_ns.N // 0) > 0) as $synced
        | (if $synced then $j.sync.lat_ns.percentile["99.000000"] else ($d.lat_ns.percentile["99.000000"] // 0) end) as $p99
        | ($d.lat_ns.mean + (if $synced then $j.sync.lat_ns.mean else 0 end)) as $mean
        | "\($iops) \($p99) \($mean)"' "$1"
}
ours_line_figures() {
    jq -r '.tests[0] as $t
        | (if $t.read != null then $t.read else $t.write end) as $d
        | ((($t.read.iops) // 0) + (($t.write.iops) // 0)) as $iops
        | (if $t.read == null and $d.sync_lat_ns != null then $d.sync_lat_ns.p99 else $d.lat_ns.p99 end) as $p99
        | "\($iops) \($p99) \($d.lat_ns.mean)"' "$1"
}

fio_mode() {
    echo "tutorial lines: engine vs fio in $dir, ${runtime}s time-based, size $size, $pairs alternating pairs" >&2
    if [ -n "$only" ]; then
        # Only the named lines (ids as printed: write, randrw, read, ...), in their order.
        tutorial_lines | awk -F'|' -v keep=",$only," 'index(keep, "," $1 ",")' >"$work/lines"
        [ -s "$work/lines" ] || { echo "vs-fio.sh: --only $only names no tutorial line" >&2; exit 2; }
    else
        tutorial_lines >"$work/lines"
    fi
    printf '\n%s\n' "$(subject "cargo diskbench fio") vs fio, $dir ($(findmnt -no FSTYPE -T "$dir" | head -1)), ${runtime}s, size $size, median of $pairs alternating pairs (p99 and mean: issue to completion)${fio_extra:+, fio given $fio_extra}"
    printf '%-22s %10s %10s %7s %10s %10s %7s %10s %10s %7s\n' line "IOPS eng" "IOPS fio" ratio "p99 eng" "p99 fio" ratio "mean eng" "mean fio" ratio
    while IFS='|' read -r id opts; do
        : >"$work/l.ours"; : >"$work/l.fio"
        f=$work/tutorial.dat
        common="--filename=$f --size=$size --time_based --runtime=$runtime --group_reporting"
        for ((p = 1; p <= pairs; p++)); do
            order="fio ours"; [ $((p % 2)) -eq 0 ] && order="ours fio"
            for who in $order; do
                rm -f "$f" # neither tool meets the other's file: each prepares its own, its way
                settle_before_run
                if [ "$who" = fio ] || [ "$aa" = 1 ]; then
                    # shellcheck disable=SC2086
                    fio $opts $common --lat_percentiles=1 $fio_extra --output-format=json --output="$work/l.json" >/dev/null
                    echo "$(fio_line_figures "$work/l.json") $(load | cut -d' ' -f1)" >>"$work/l.$who"
                else
                    # shellcheck disable=SC2086
                    "$bin" fio $opts $common --output-format=json --output="$work/l.json" 2>"$work/ours.err" \
                        || { cat "$work/ours.err" >&2; exit 1; }
                    echo "$(ours_line_figures "$work/l.json") $(load | cut -d' ' -f1)" >>"$work/l.ours"
                fi
            done
        done
        rm -f "$f"
        paste -d' ' "$work/l.ours" "$work/l.fio" | awk '{
            print $1, $5, ($5 > 0 ? $1 / $5 : 0), $2, $6, ($6 > 0 ? $2 / $6 : 0), $3, $7, ($7 > 0 ? $3 / $7 : 0), $4, $8 }' >"$work/pairs.txt"
        m() { awk -v c="$1" '{print $c}' "$work/pairs.txt" | median; }
        printf '%-22s %10.0f %10.0f %7.3f %8.0fus %8.0fus %7.3f %8.0fus %8.0fus %7.3f\n' "$id" "$(m 1)" "$(m 2)" "$(m 3)" \
            "$(awk "BEGIN{print $(m 4) / 1000}")" "$(awk "BEGIN{print $(m 5) / 1000}")" "$(m 6)" \
            "$(awk "BEGIN{print $(m 7) / 1000}")" "$(awk "BEGIN{print $(m 8) / 1000}")" "$(m 9)"
        awk -v c="$id" '{printf "    %s pair %d: IOPS %.0f vs %.0f (%.3f)  p99 %.0f vs %.0f us (%.3f)  (load %s / %s)\n", c, NR, $1, $2, $3, $4/1000, $5/1000, $6, $10, $11}' "$work/pairs.txt" >&2
    done <"$work/lines"
}

prep_mode() {
    printf '\n%s\n' "write columns on a new fallocated file vs a file written before, $dir ($(findmnt -no FSTYPE -T "$dir" | head -1)), ${runtime}s + ${ramp}s ramp, size $size, median of $pairs rotated runs"
    printf '%-11s %14s %14s %14s %14s\n' column "engine fresh" "fio fresh" "engine overwr" "fio overwr"
    for col in rand-write sync-write; do
        for v in ours-fresh fio-fresh ours-over fio-over; do : >"$work/p.$v"; done
        f=$work/prep.dat
        for ((p = 1; p <= pairs; p++)); do
            case $((p % 4)) in
                1) order="fio-fresh ours-fresh fio-over ours-over" ;;
                2) order="ours-fresh fio-over ours-over fio-fresh" ;;
                3) order="fio-over ours-over fio-fresh ours-fresh" ;;
                0) order="ours-over fio-fresh ours-fresh fio-over" ;;
            esac
            for v in $order; do
                rm -f "$f"
                extra=; case $v in *-over) extra=--overwrite=1 ;; esac
                opts="--name=$col $(column_opts "$col") --filename=$f --size=$size --time_based --runtime=$runtime --ramp_time=$ramp --group_reporting --ioengine=libaio --direct=1 $extra"
                case $v in
                    fio-*)
                        # shellcheck disable=SC2086
                        fio $opts --output-format=json --output="$work/p.json" >/dev/null
                        fio_figures "$work/p.json" iops | awk '{print $1}' >>"$work/p.$v" ;;
                    ours-*)
                        # shellcheck disable=SC2086
                        "$bin" fio $opts --output-format=json --output="$work/p.json" 2>"$work/ours.err" \
                            || { cat "$work/ours.err" >&2; exit 1; }
                        ours_figures "$work/p.json" 0 iops | awk '{print $1}' >>"$work/p.$v" ;;
                esac
            done
            echo "  $col pass $p done (load $(load))" >&2
        done
        rm -f "$f"
        printf '%-11s %14.0f %14.0f %14.0f %14.0f\n' "$col" "$(median <"$work/p.ours-fresh")" "$(median <"$work/p.fio-fresh")" \
            "$(median <"$work/p.ours-over")" "$(median <"$work/p.fio-over")"
        for v in ours-fresh fio-fresh ours-over fio-over; do echo "    $col $v: $(paste -sd' ' "$work/p.$v")" >&2; done
    done
}

qd1_mode() {
    command -v cc >/dev/null || { echo "vs-fio.sh: cc is needed for qd1 (apt-get install gcc)" >&2; exit 2; }
    local shm_file=$work/qd1.dat shm_bytes=$((256 * 1024 * 1024))
    cc -O2 -o "$work/bare_pread" "$repo/bench/bare_pread.c"
    fio --name=layout --filename="$shm_file" --size=256m --rw=write --bs=1m --refill_buffers --output=/dev/null
    local qd1="--name=qd1-read --filename=$shm_file --size=256m --rw=randread --bs=4k --iodepth=1
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
                    ours_figures "$work/ours.json" 0 iops | awk '{print $1, $2, $3}' >>"$work/q_ours.txt" ;;
                bare)
                    sleep "$ramp" # the same pause the others spend ramping
                    "$work/bare_pread" "$shm_file" "$shm_bytes" 4096 "$runtime" \
                        | sed 's/[a-z_]*=//g' | awk '{print $1, $2, $4}' >>"$work/q_bare.txt" ;;
            esac
        done
    done
    med() { awk -v c="$2" '{print $c}' "$1" | median; }
    cpu_io() { awk '{ if ($2 > 0) print $3 / $2 * 1e6 }' "$1" | median; }
    printf '\n%s\n' "one-at-a-time 4 KiB reads in $dir (psync), ${runtime}s, median of $pairs rotated runs"
    for who in ours fio bare; do
        printf '%-6s %12.0f IOPS %8.2fus CPU per I/O\n' "$who" "$(med "$work/q_$who.txt" 1)" "$(cpu_io "$work/q_$who.txt")"
    done
}

case $mode in
    suite) suite_mode ;;
    fio) fio_mode ;;
    prep) prep_mode ;;
    qd1) qd1_mode ;;
esac
echo "load average at the end: $(load)"
