#!/usr/bin/env bash
# What-if experiments on a machine whose every core is busy: a CPU hog per core
# (a `nice -n 0` busy loop each, killed on exit), then RUNS times (default 5)
#   cargo-diskbench steps --what-if --only cargo-build,sqlite
# in a folder outside any Cargo project (so cargo-build builds the generated crate). Prints
# each run's verdict by experiment per step and the tally at the end.
# Acceptance: cargo-build cpu or cannot-tell, never latency or bandwidth, in every run;
# sqlite latency in every run.
#
#   bench/whatif-cpu-hog.sh [WORKDIR]        (default: target/bench-whatif-cpu-hog)
#   RUNS=3 bench/whatif-cpu-hog.sh           (fewer campaign runs)
#   MODULES=12 bench/whatif-cpu-hog.sh       (--crate-modules of the generated crate; default
#                                             the tool's own default)
#   EXTRA="--what-if-repeat 3" bench/whatif-cpu-hog.sh   (more options for every run)
#
# Needs root (the capped conditions). Runs for minutes with both cores and the disk busy: on a
# shared machine, run it when no other measurement is running.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(realpath -m "${1:-target/bench-whatif-cpu-hog}")
runs=${RUNS:-5}
modules=${MODULES:-}
extra=${EXTRA:-}

bin=$repo/target/release/cargo-diskbench
[ -x "$bin" ] || { echo "no $bin: build it first (cargo build --release --locked)" >&2; exit 2; }
mkdir -p "$work"
# Outside any Cargo project: no Cargo.toml in the folder or above it.
dir=$(mktemp -d /tmp/whatif-cpu-hog.XXXXXX)
for d in "$dir" "$(dirname "$dir")" /; do
  [ ! -f "$d/Cargo.toml" ] || { echo "$d/Cargo.toml: not outside a Cargo project" >&2; exit 2; }
done

hogs=()
stop_hogs() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap stop_hogs EXIT INT TERM
cores=$(nproc)
for _ in $(seq "$cores"); do
  nice -n 0 bash -c 'while :; do :; done' &
  hogs+=($!)
done
echo "CPU hog: $cores busy loops (nice 0), pids ${hogs[*]}"

# shellcheck disable=SC2054 # the comma is --only's list, one word
args=(steps --what-if --only cargo-build,sqlite --dir "$dir" --results "$dir/no-results")
[ -z "$modules" ] || args+=(--crate-modules "$modules")
# shellcheck disable=SC2206 # EXTRA is split on purpose
[ -z "$extra" ] || args+=($extra)
echo "command (in $dir): $bin ${args[*]} --json FILE"
echo "started $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

# The verdict by experiment of one step in a record: cannot-tell, or the bound.
# shellcheck disable=SC2016 # jq's $id, not the shell's
verdict='.steps[] | select(.id == $id) |
  if .status != "ok" then "step-" + .status
  elif .what_if == null then "no-what-if"
  elif .what_if.cannot_tell then "cannot-tell"
  else .what_if.bound end'
# How it came about: the runs per condition and the load.
# shellcheck disable=SC2016 # jq's $id, not the shell's
detail='.steps[] | select(.id == $id) | .what_if // empty |
  ([.baseline] + .conditions | map("\(.id) \(.runs)x \(.wall_s * 100 | round / 100) s")
   | join(", ")) + (if .load_avg_1m then ", load \(.load_avg_1m * 10 | round / 10)" else "" end)'

declare -A tally
for i in $(seq "$runs"); do
  json="$work/run-$i.json"
  start=$(date +%s)
  (cd "$dir" && "$bin" "${args[@]}" --json "$json") >"$work/run-$i.out" 2>"$work/run-$i.log" \
    || { echo "run $i: exit $? (see $work/run-$i.log)"; continue; }
  took=$(($(date +%s) - start))
  line="run $i ($took s, load after $(cut -d' ' -f1 /proc/loadavg)):"
  for id in cargo-build sqlite; do
    v=$(jq -r --arg id "$id" "$verdict" "$json")
    tally[$id:$v]=$((${tally[$id:$v]:-0} + 1))
    line+=" $id $v;"
  done
  echo "${line%;}"
  for id in cargo-build sqlite; do
    echo "    $id: $(jq -r --arg id "$id" "$detail" "$json")"
  done
done

echo "ended $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
out="tally:"
for id in cargo-build sqlite; do
  parts=""
  for k in $(printf '%s\n' "${!tally[@]}" | sort); do
    [[ $k == "$id:"* ]] && parts+="${parts:+, }${k#"$id":} ${tally[$k]}"
  done
  out+=" $id: ${parts:-none};"
done
echo "${out%;}"
