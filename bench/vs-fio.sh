#!/usr/bin/env bash
# cargo-diskbench against fio, run the way published figures are made, in pairs of runs whose
# order alternates or rotates.
#
# Modes:
#   suite (default)  Each column as the standard suite runs it (`cargo diskbench run --only
#                    COLUMN`: every column makes, prepares and removes its own files, so a
#                    column run alone is the column as the suite runs it) against fio run
#                    exactly as the public harness runs that column: libaio, O_DIRECT,
#                    time-based after a 2 s ramp, one file per job
#                    (--filename_format={name}.$jobnum) removed after the test; a read test's
#                    files written first by a separate fio job (--fallocate=none
#                    --refill_buffers=1 --end_fsync=1), a write test's created and fallocated
#                    by fio itself.
#                    Settings: without --against, both tools get --runtime, --size (per job
#                    file) and the 2 s ramp. With --against published, fio runs at the
#                    harness's published settings whatever the engine runs (20 s + 2 s ramp,
#                    2 GiB files for the one-job columns, 1 GiB per job for rand-read and
#                    rand-write; --runtime and --size are refused) and the engine runs with its
#                    own defaults plus --engine-args.
#                    Per pair and column: fio twice (fio-A, then fio-B) and the engine once,
#                    the engine's place rotated over the pairs (pair 1: fio-A engine fio-B,
#                    pair 2: engine fio-A fio-B, pair 3: fio-A fio-B engine, and again), the
#                    columns in the suite's order; runs of one column follow each other, so
#                    the host's drift hits both tools alike. Per column: medians of the
#                    engine's figure and of fio's (all its runs); the ratio (engine / the
#                    median of the pair's two fio runs, median over pairs) and its range over
#                    the pairs; fio's A/A band (the range of fio-A / fio-B over the same
#                    pairs); the tolerance (the wider of that band and 0.90-1.10) and a
#                    verdict, `within` or `outside`, of the median ratio against it; then CPU
#                    per I/O (medians, and their ratio), each tool's spread over the pairs
#                    ((max - min) / median of the headline; fio's over both its runs) and the
#                    median wall time of one column run (the tool's whole command, files made,
#                    prepared, measured and removed), with their sum over the columns.
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
#                        [--against published] [--engine-args WORDS] [--bin PATH]
#   defaults: --dir the current folder, --runtime 5, --pairs 3, --size 1g, all columns/lines.
#   --only: suite mode, column ids; fio mode, line ids (write, randwrite-fdatasync, randrw,
#   read, randread-2x16-libaio, randread-2x16-psync).
#   --against published (suite mode): fio at the public harness's settings (above).
#   --engine-args WORDS (suite mode): more words for the engine's `run`, split on spaces, e.g.
#   --engine-args "--preset published" or "--engine libaio". The script gives it --dir, --only,
#   --no-steps, --no-site, --quiet, --results, --json (and, without --against, --size,
#   --runtime, --ramp): those are refused here, as the engine refuses an option given twice.
#   The words are checked with the engine's `run WORDS --help` before anything runs.
#   --fio-vs-fio: the engine's slot runs fio too, the same way (suite and fio modes): an A/A
#   run, whose ratios show how far this machine moves a figure between two runs of one tool.
#   A tolerance tighter than that spread cannot be checked here with this many pairs. In
#   suite mode the table's A/A band already shows it; there the flag makes a third fio run.
#   --fio-extra OPTS: more options for fio's measured runs (suite and fio modes), e.g.
#   --fio-extra --thread to run fio's jobs as threads (the engine's run as processes, as
#   fio's do by default).
#   --settle S: wait S seconds before every run of either tool (suite and fio modes; default
#   0). For memory on a VM that hands freed memory back to its host (virtio-balloon free page
#   reporting): a write column there runs at the speed of the host's page faults unless the
#   previous run freed its memory a moment ago, so back-to-back runs compare the order, not
#   the tools. 10 s lets the guest hand all of it back before either tool starts.
# For testing this script only (the table then says the settings are NOT the published ones):
#   VS_FIO_PUBLISHED_RUNTIME=S, VS_FIO_PUBLISHED_SIZE_1JOB=SIZE, VS_FIO_PUBLISHED_SIZE_4JOB=SIZE
#   replace --against published's 20 s, 2g and 1g, e.g. VS_FIO_PUBLISHED_RUNTIME=1
#   VS_FIO_PUBLISHED_SIZE_1JOB=64m VS_FIO_PUBLISHED_SIZE_4JOB=32m with --engine-args
#   "--runtime 1 --size 64m" for a run of a minute or two.
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
against=
engine_args=
runtime_given=0
size_given=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
        --dir) dir=$2; shift 2 ;;
        --runtime) runtime=$2; runtime_given=1; shift 2 ;;
        --pairs) pairs=$2; shift 2 ;;
        --size) size=$2; size_given=1; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --settle) settle=$2; shift 2 ;;
        --fio-vs-fio) aa=1; shift ;;
        --fio-extra) fio_extra=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --against) against=$2; shift 2 ;;
        --engine-args) engine_args=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "vs-fio.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $pairs in ''|*[!0-9]*|0) echo "vs-fio.sh: --pairs needs a whole number >= 1" >&2; exit 2 ;; esac
case $settle in ''|*[!0-9]*) echo "vs-fio.sh: --settle needs a whole number of seconds >= 0" >&2; exit 2 ;; esac
case $against in
    ''|published) ;;
    *) echo "vs-fio.sh: --against $against: the only settings known are 'published' (the public harness's)" >&2; exit 2 ;;
esac
if [ "$mode" != suite ] && { [ -n "$against" ] || [ -n "$engine_args" ]; }; then
    echo "vs-fio.sh: --against and --engine-args are for suite mode only" >&2; exit 2
fi
# The public harness's settings for fio (bin/hw-bench.py). The VS_FIO_PUBLISHED_* variables
# exist only to test this script at tiny settings; a table made with them says so.
pub_runtime=${VS_FIO_PUBLISHED_RUNTIME:-20}
pub_size_1job=${VS_FIO_PUBLISHED_SIZE_1JOB:-2g}
pub_size_4job=${VS_FIO_PUBLISHED_SIZE_4JOB:-1g}
pub_overridden=
for v in VS_FIO_PUBLISHED_RUNTIME VS_FIO_PUBLISHED_SIZE_1JOB VS_FIO_PUBLISHED_SIZE_4JOB; do
    [ -z "${!v:-}" ] || pub_overridden="$pub_overridden $v=${!v}"
done
if [ "$against" = published ]; then
    # Only fio's settings are fixed; the engine keeps its own defaults unless --engine-args
    # changes them, so a --runtime or --size here would say nothing about either tool.
    if [ "$runtime_given" = 1 ] || [ "$size_given" = 1 ]; then
        echo "vs-fio.sh: --against published fixes fio's runtime and size; give the engine's through --engine-args (e.g. --engine-args \"--runtime 20 --size 2G\")" >&2; exit 2
    fi
    case $pub_runtime in ''|*[!0-9]*|0) echo "vs-fio.sh: VS_FIO_PUBLISHED_RUNTIME needs a whole number of seconds >= 1" >&2; exit 2 ;; esac
    for v in "$pub_size_1job" "$pub_size_4job"; do
        [[ $v =~ ^[0-9]+[kKmMgG]?$ ]] || { echo "vs-fio.sh: published size $v: give a number with k, m or g (VS_FIO_PUBLISHED_SIZE_*)" >&2; exit 2; }
    done
fi
read -r -a engine_words <<<"$engine_args"
# The engine refuses an option given twice: refuse here, before any file is touched, the ones
# this script always gives it, and without --against the settings both tools take from it.
for w in "${engine_words[@]}"; do
    case ${w%%=*} in
        --dir|--only|--no-steps|--no-site|--quiet|-q|--results|--json)
            echo "vs-fio.sh: --engine-args $w: the script gives the engine ${w%%=*} itself" >&2; exit 2 ;;
        --size|--runtime|--ramp)
            [ "$against" = published ] || {
                echo "vs-fio.sh: --engine-args $w: without --against both tools take ${w%%=*} from the script's own option (or use --against published)" >&2; exit 2; } ;;
    esac
done
for tool in fio jq; do
    command -v "$tool" >/dev/null || { echo "vs-fio.sh: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
[ -d "$dir" ] || { echo "vs-fio.sh: --dir $dir: not a folder" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --release -q -p cargo-diskbench)
    bin=$repo/target/release/cargo-diskbench
fi

# A word the engine does not take would stop the run only after fio's first run of the first
# column (2 GiB written and 22 s measured at the published settings): `run WORDS --help` parses
# them and touches nothing.
if [ ${#engine_words[@]} -gt 0 ] && ! refusal=$("$bin" run "${engine_words[@]}" --help 2>&1 >/dev/null); then
    echo "vs-fio.sh: --engine-args \"$engine_args\": this engine ($bin) refuses it: ${refusal%%$'\n'*}" >&2
    exit 2
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

# fio's file size per job and measured seconds for a column: the script's --size and --runtime,
# or with --against published the harness's (2 GiB for one job, 1 GiB per job for four).
fio_settings() { # column -> "size runtime"
    if [ "$against" != published ]; then echo "$size $runtime"; return; fi
    case $(column_opts "$1") in
        *--numjobs=4*) echo "$pub_size_4job $pub_runtime" ;;
        *) echo "$pub_size_1job $pub_runtime" ;;
    esac
}

# One column the way the public harness runs it (bin/hw-bench.py: fio()), in $work/fio.
fio_harness_column() { # column size runtime
    local col=$1 fsize=$2 fruntime=$3 jobs reads=0 read_only=()
    jobs=$(column_opts "$col" | sed 's/.*--numjobs=\([0-9]*\).*/\1/')
    case $col in *-read) reads=1 ;; esac
    rm -rf "$work/fio"; mkdir -p "$work/fio"
    if [ $reads = 1 ]; then
        fio --name="$col-prep" --directory="$work/fio" --ioengine=libaio --direct=1 --bs=1M \
            --iodepth=32 --size="$fsize" --numjobs="$jobs" --rw=write --fallocate=none \
            --refill_buffers=1 --end_fsync=1 --filename_format="$col.\$jobnum" --output=/dev/null
        read_only=(--allow_file_create=0 --readonly)
    fi
    # shellcheck disable=SC2046,SC2086 # options split into words on purpose
    fio --name="$col" --directory="$work/fio" --ioengine=libaio --direct=1 $(column_opts "$col") \
        --size="$fsize" --time_based --runtime="$fruntime" --ramp_time="$ramp" --group_reporting=1 \
        --filename_format="$col.\$jobnum" "${read_only[@]}" $fio_extra --output-format=json --output="$work/fio.json" >/dev/null
    rm -rf "$work/fio"
}

now_s() { date +%s.%N; }

# One run of a column by fio, appended to $work/$2.$1 as "headline ios cpu_s load wall_s".
suite_fio_run() { # column fio-A|fio-B|ours (the engine's slot in an A/A run)
    local col=$1 out=$work/$2.$1 t0 t1 fsize fruntime
    read -r fsize fruntime <<<"$(fio_settings "$col")"
    t0=$(now_s)
    fio_harness_column "$col" "$fsize" "$fruntime"
    t1=$(now_s)
    local figs; figs=$(fio_figures "$work/fio.json" "$(headline_of "$col")")
    if [ "$2" = ours ]; then figs="$figs fio -"; fi # the engine's fields: used, file preparation
    echo "$figs $(load | cut -d' ' -f1) $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" >>"$out"
}

# One run of a column by the engine, appended to $work/ours.$1 as
# "headline ios cpu_s used file-preparation load wall_s".
suite_engine_run() { # column
    local col=$1 t0 t1 settings=()
    # With --against published the engine keeps its own defaults (plus --engine-args).
    [ "$against" = published ] || settings=(--size "$size" --runtime "$runtime" --ramp "$ramp")
    rm -rf "$work/results"
    t0=$(now_s)
    "$bin" run --dir "$work" "${settings[@]}" --only "$col" --no-steps --no-site --quiet \
        --results "$work/results" --json "$work/ours.json" "${engine_words[@]}" >/dev/null 2>"$work/ours.err" \
        || { echo "vs-fio.sh: the engine failed on $col:" >&2; cat "$work/ours.err" >&2; exit 1; }
    t1=$(now_s)
    echo "$(ours_figures "$work/ours.json" "$col" "$(headline_of "$col")") $(load | cut -d' ' -f1) $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" >>"$work/ours.$col"
}

# The numbers in field $2 of file $1, one a line.
field() { awk -v c="$2" '{print $c}' "$1"; }
# min-max of the numbers on stdin.
range_of() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f-%.2f", lo, hi}'; }
# (max - min) / median of the numbers on stdin, in percent.
spread_pct() {
    sort -g | awk '{v[NR] = $1} END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.1f%%", (m > 0 ? (v[NR] - v[1]) / m * 100 : 0) }'
}

suite_mode() {
    IFS=, read -r -a columns <<<"${only:-seq-read,seq-write,rand-read,rand-write,qd1-read,sync-write}"
    for col in "${columns[@]}"; do
        column_opts "$col" >/dev/null
        for who in ours fio-A fio-B; do : >"$work/$who.$col"; done
    done
    local fio_desc eng_desc
    if [ "$against" = published ]; then
        fio_desc="fio at the published settings: ${pub_runtime}s + ${ramp}s ramp, $pub_size_1job per file for one job, $pub_size_4job per job for four"
        [ -z "$pub_overridden" ] || fio_desc="$fio_desc (NOT the published settings: test overrides$pub_overridden)"
        eng_desc="engine: run --only COLUMN with its own defaults${engine_args:+ and $engine_args}"
    else
        fio_desc="both tools ${runtime}s + ${ramp}s ramp, size $size per job file"
        eng_desc="engine: run --only COLUMN --size $size --runtime $runtime --ramp $ramp${engine_args:+ $engine_args}"
    fi
    [ "$aa" = 0 ] || eng_desc="the engine's slot: fio a third time, the same way (--fio-vs-fio)"
    echo "suite columns vs fio (the harness's way) in $dir: $fio_desc; $eng_desc; $pairs rotated pairs per column (fio twice, the engine once), ${settle}s settle before each run" >&2
    for ((p = 1; p <= pairs; p++)); do
        # The engine's place rotates over the pairs; fio-A is the earlier of fio's two runs.
        case $((p % 3)) in
            1) order="fio-A ours fio-B" ;;
            2) order="ours fio-A fio-B" ;;
            0) order="fio-A fio-B ours" ;;
        esac
        echo "  pair $p: ${order//ours/$(subject engine)} (load $(load))" >&2
        for col in "${columns[@]}"; do
            for who in $order; do
                settle_before_run
                if [ "$who" != ours ] || [ "$aa" = 1 ]; then
                    suite_fio_run "$col" "$who"
                else
                    suite_engine_run "$col"
                fi
            done
        done
    done
    suite_report
}

# The tables: figures and verdict, then cost (CPU per I/O), stability and wall time.
suite_report() {
    local eng; eng=$(subject engine)
    printf '\n%s\n' "$(subject "engine columns") vs fio run the harness's way, $dir ($(findmnt -no FSTYPE -T "$dir" | head -1)), median of $pairs rotated pairs, ${settle}s settle before each run${fio_extra:+, fio given $fio_extra}"
    printf '%s\n%s\n' "  $fio_desc" "  $eng_desc"
    printf '%s\n' "  ratio: $eng / the median (mean) of the pair's two fio runs, median over pairs; fio A/A: fio-A / fio-B per pair; tolerance: the wider of the A/A band and 0.90-1.10; verdict on the median ratio"
    printf '%-11s %-6s %12s %12s %7s %11s %11s %11s  %s\n' column unit "$eng" fio ratio "pair ratios" "fio A/A" tolerance verdict
    for col in "${columns[@]}"; do
        # ours: fig ios cpu used prep load wall | fio-A, fio-B: fig ios cpu load wall
        # -> eng fioA fioB ratio A/B cpu/io(eng A B) used prep load(eng A B) wall(eng A B)
        paste -d' ' "$work/ours.$col" "$work/fio-A.$col" "$work/fio-B.$col" | awk '{
            fio = ($8 + $13) / 2
            print $1, $8, $13, (fio > 0 ? $1 / fio : 0), ($13 > 0 ? $8 / $13 : 0),
                ($2 > 0 ? $3 / $2 * 1e6 : 0), ($9 > 0 ? $10 / $9 * 1e6 : 0), ($14 > 0 ? $15 / $14 * 1e6 : 0),
                $4, $5, $6, $11, $16, $7, $12, $17 }' >"$work/pairs.$col"
        local pf=$work/pairs.$col unit=IOPS ratio band tol verdict
        [ "$(headline_of "$col")" = mib_s ] && unit=MiB/s
        ratio=$(field "$pf" 4 | median)
        band=$(field "$pf" 5 | range_of)
        tol=$(awk -v b="$band" 'BEGIN {split(b, r, "-"); lo = r[1] < 0.90 ? r[1] : 0.90; hi = r[2] > 1.10 ? r[2] : 1.10; printf "%.2f-%.2f", lo, hi}')
        verdict=$(awk -v t="$tol" -v x="$ratio" 'BEGIN {split(t, r, "-"); print (x >= r[1] && x <= r[2]) ? "within" : "outside"}')
        printf '%-11s %-6s %12.1f %12.1f %7.3f %11s %11s %11s  %s\n' "$col" "$unit" "$(field "$pf" 1 | median)" \
            "$( { field "$pf" 2; field "$pf" 3; } | median)" "$ratio" "$(field "$pf" 4 | range_of)" "$band" "$tol" "$verdict"
        awk -v c="$col" -v e="$eng" '{printf "    %s pair %d: %s %.1f  fio-A %.1f  fio-B %.1f  ratio %.3f  A/B %.3f  wall %.1f/%.1f/%.1fs  (load %s / %s / %s)\n",
            c, NR, e, $1, $2, $3, $4, $5, $14, $15, $16, $11, $12, $13}' "$pf" >&2
    done
    printf '\n%-11s %11s %11s %7s %11s %11s %11s %10s %10s  %-9s %s\n' column "cpu/io eng" "cpu/io fio" ratio "spread eng" "spr fio-A" "spread fio" "wall eng" "wall fio" engine "file (engine)"
    local wall_eng_total=0 wall_fio_total=0
    for col in "${columns[@]}"; do
        local pf=$work/pairs.$col cpu_eng cpu_fio wall_eng wall_fio
        cpu_eng=$(field "$pf" 6 | median)
        cpu_fio=$( { field "$pf" 7; field "$pf" 8; } | median)
        wall_eng=$(field "$pf" 14 | median)
        wall_fio=$( { field "$pf" 15; field "$pf" 16; } | median)
        wall_eng_total=$(awk -v a="$wall_eng_total" -v b="$wall_eng" 'BEGIN {print a + b}')
        wall_fio_total=$(awk -v a="$wall_fio_total" -v b="$wall_fio" 'BEGIN {print a + b}')
        printf '%-11s %9.2fus %9.2fus %7.3f %11s %11s %11s %9.1fs %9.1fs  %-9s %s\n' "$col" "$cpu_eng" "$cpu_fio" \
            "$(awk -v a="$cpu_eng" -v b="$cpu_fio" 'BEGIN {print (b > 0 ? a / b : 0)}')" \
            "$(field "$pf" 1 | spread_pct)" "$(field "$pf" 2 | spread_pct)" "$( { field "$pf" 2; field "$pf" 3; } | spread_pct)" "$wall_eng" "$wall_fio" \
            "$(field "$pf" 9 | sort -u | paste -sd/)" "$(field "$pf" 10 | sort -u | paste -sd/)"
    done
    printf '%-11s %11s %11s %7s %11s %11s %11s %9.1fs %9.1fs\n' total "" "" "" "" "" "" "$wall_eng_total" "$wall_fio_total"
    printf '%s\n' "  spread: (max - min) / median of the headline over the pairs (spr fio-A: over fio's first run of each pair, as many runs as the engine's; spread fio: over both its runs per pair); wall: median seconds of one column run (files made, prepared, measured, removed), total: their sum"
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
