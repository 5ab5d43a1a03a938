#!/usr/bin/env bash
# Add downloaded records to the data branch and push it.
#
#   publish-records.sh exists                           is there a data branch yet? exists=true or
#                                                       false to $GITHUB_OUTPUT (remote: token)
#   publish-records.sh fetch                            check the data branch out (remote: token)
#   publish-records.sh merge ARTIFACTS_DIR [EXPECTED]   cargo-diskbench merge; hand the new record
#                                                       files on (no remote, no token)
#   publish-records.sh push [HANDOFF_DIR]               add them to the branch's tip and push, with
#                                                       retries (remote: token; git alone)
#   publish-records.sh ARTIFACTS_DIR [EXPECTED]         all three, in one process (local use)
#
# The benchmark workflow runs fetch and merge in its read-only merge job and push in a job of
# its own, the only one holding `contents: write`, which runs nothing but this script and git:
# the merge phase writes the record files it adds, and its summary, into the hand-off folder
# (default: inside the clone's .git), which the workflow carries to the push job as an
# artifact. cargo-diskbench never runs where a write token is.
#
# Run from a clone of the repository (checked out with persist-credentials: false), with
# cargo-diskbench on PATH for the merge phase.
# Env: DATA_BRANCH (default: data), DATA_WORKTREE (default: ./data-branch),
#      RETRY_DELAY_S (default: 3; the wait before attempt N+1 is N times this, plus jitter),
#      DATA_HANDOFF_DIR (default: .git/diskbench-publish/handoff: where merge puts the new
#      record files for push), DATA_PUSH_TOKEN (optional: a token for $GITHUB_SERVER_URL, sent
#      as an HTTP header by this script's own git calls only, never written to .git/config).
#
# The data branch is append-only: `cargo diskbench merge` only adds record files, after
# checking them against what the branch holds. The push phase starts from the branch's tip as
# the remote has it and adds the hand-off folder's record files by name (one already there
# with the same content is skipped, one with other content stops the push); when another run
# pushed meanwhile, the push is refused and the phase starts again from the new tip, so no
# run's records are ever lost and none is written twice. The branch always holds results/
# (with a .gitkeep), so the site can be rendered from it even before the first record arrives.
set -euo pipefail

usage() {
  echo "usage: publish-records.sh exists | fetch | merge ARTIFACTS_DIR [EXPECTED_LABELS] | push [HANDOFF_DIR] | ARTIFACTS_DIR [EXPECTED_LABELS]" >&2
  exit 2
}
phase="${1:-}"
case "$phase" in
  fetch | exists) [ "$#" -eq 1 ] || usage ;;
  push) [ "$#" -le 2 ] || usage ;;
  merge) shift; [ "$#" -ge 1 ] || usage ;;
  '') usage ;;
  *) phase=all ;;
esac
artifacts="${1:-}"
expect="${2:-}"
branch="${DATA_BRANCH:-data}"
worktree="${DATA_WORKTREE:-data-branch}"
attempts=5
retry_delay_s="${RETRY_DELAY_S:-3}"
case "$retry_delay_s" in
  '' | *[!0-9]*) echo "::error title=cargo-diskbench::RETRY_DELAY_S must be a whole number of seconds, not '$retry_delay_s'"; exit 2 ;;
esac
if [ "$phase" = merge ] || [ "$phase" = all ]; then
  mkdir -p "$artifacts"
  artifacts="$(cd "$artifacts" && pwd)"
fi
# What the phases hand on to each other, kept in the clone's .git: private to the job, never
# committed. The hand-off folder can be given (the workflow carries it from job to job).
state="$(git rev-parse --absolute-git-dir)/diskbench-publish"
mkdir -p "$state"
handoff="${DATA_HANDOFF_DIR:-$state/handoff}"
if [ "$phase" = push ] && [ -n "${2:-}" ]; then handoff="$2"; fi

# The token reaches git through GIT_CONFIG_* variables set for one git command at a time: it
# is in no file. (`unset` below only keeps it out of the children; this step's own
# /proc/<pid>/environ still holds it, which is why cargo-diskbench runs in another step.)
# shellcheck source=.github/scripts/remote-git.sh
. "$(dirname "${BASH_SOURCE[0]}")/remote-git.sh"
if [ -n "${DATA_PUSH_TOKEN:-}" ]; then
  # Only the phases that run git alone take it.
  if [ "$phase" = merge ] || [ "$phase" = all ]; then
    echo "::error title=cargo-diskbench::the merge phase runs cargo-diskbench and must not be given DATA_PUSH_TOKEN: run the fetch, merge and push phases as separate steps, the token on fetch and push only"
    exit 2
  fi
  push_token "$DATA_PUSH_TOKEN"
  unset DATA_PUSH_TOKEN
fi

git_commit() {
  git -C "$worktree" \
    -c user.name="github-actions[bot]" \
    -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
    commit --quiet "$@"
}

checkout_data_branch() {
  git worktree remove --force "$worktree" 2>/dev/null || rm -rf "$worktree"
  git worktree prune
  # A refused first push leaves the local branch of the previous attempt behind; it is ours
  # (the job's checkout is of the code), and each attempt starts again from the remote.
  git branch --quiet -D "$branch" 2>/dev/null || true
  # ls-remote --exit-code: 0 the branch is there, 2 it is not; anything else (no network, no
  # access, no such remote) is an error, never taken for "no branch yet".
  local status=0
  remote_git ls-remote --exit-code origin "refs/heads/$branch" >/dev/null 2>"$state/ls-remote.err" || status=$?
  case "$status" in
    0)
      remote_git fetch --quiet --no-tags --depth=1 origin "+refs/heads/$branch:refs/remotes/origin/$branch"
      git worktree add --quiet --force -B "$branch" "$worktree" "origin/$branch"
      ;;
    2)
      # First publication: an empty branch with no history of the code.
      git worktree add --quiet --detach "$worktree"
      git -C "$worktree" checkout --quiet --orphan "$branch"
      git -C "$worktree" rm -r --quiet --force --ignore-unmatch .
      git -C "$worktree" clean -fdxq
      ;;
    *)
      echo "::error title=cargo-diskbench::cannot ask origin whether $branch exists (git ls-remote exit $status): $(tr '\n' ' ' < "$state/ls-remote.err"); nothing was published"
      exit 1
      ;;
  esac
}

describe_branch() {
  if [ ! -e "$worktree/README.md" ]; then
    cat > "$worktree/README.md" <<'README'
# cargo-diskbench records

Written by the benchmark workflow; one JSON record per run under `results/`, named
`<UTC date>-<runner label>-<short id>.json`. Files are only ever added (`results/.gitkeep`
keeps the folder on the branch before the first record). Render them with

    cargo diskbench site --results results --out site
README
    git -C "$worktree" add README.md
  fi
  if [ ! -e "$worktree/results/.gitkeep" ]; then
    mkdir -p "$worktree/results"
    : > "$worktree/results/.gitkeep"
    git -C "$worktree" add results/.gitkeep
  fi
}

# The merge's job summary travels in the hand-off folder and is added only once the push has
# gone through, so the summary never says "added" for records that did not reach the branch.
report_summary() {
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    {
      if [ -f "$handoff/summary.md" ]; then cat "$handoff/summary.md"; fi
      if [ -n "${1:-}" ]; then printf '\n%s\n' "$1"; fi
    } >> "$GITHUB_STEP_SUMMARY"
  fi
}

commit_message() {
  echo "Add $1 record(s) from run ${GITHUB_RUN_ID:-local} of ${GITHUB_REPOSITORY:-this repository}"
}

# Whether the remote has the data branch, for a step that reads it only if it is there (the
# bench jobs' baseline): 0 yes, 2 not yet (the first run); anything else is said as a warning
# and taken as no branch, since a baseline is only ever a comparison.
phase_exists() {
  local status=0 exists=false
  remote_git ls-remote --exit-code origin "refs/heads/$branch" >/dev/null 2>"$state/ls-remote.err" || status=$?
  case "$status" in
    0) exists=true; echo "$branch exists" ;;
    2) echo "no $branch branch yet (the first run): no baseline" ;;
    *) echo "::warning title=cargo-diskbench::cannot ask origin whether $branch exists (git ls-remote exit $status): $(tr '\n' ' ' < "$state/ls-remote.err"); going on without a baseline" ;;
  esac
  echo "exists=$exists" >> "${GITHUB_OUTPUT:-/dev/stdout}"
}

# Phase 1: the data branch as the remote has it (or a new, empty one), in $worktree.
phase_fetch() {
  checkout_data_branch
}

# Phase 2: cargo-diskbench adds the new records to the checkout; the files it added and its
# summary go to the hand-off folder. No remote, nothing committed.
phase_merge() {
  if [ "$(git -C "$worktree" symbolic-ref --quiet HEAD 2>/dev/null)" != "refs/heads/$branch" ]; then
    echo "::error title=cargo-diskbench::$worktree holds no checkout of $branch: run the fetch phase first"
    exit 2
  fi
  rm -rf "$handoff"
  mkdir -p "$handoff/results"
  describe_branch
  merge_args=(diskbench merge --into "$worktree/results" "$artifacts")
  if [ -n "$expect" ]; then merge_args+=(--expect "$expect"); fi
  GITHUB_STEP_SUMMARY="$handoff/summary.md" cargo-diskbench "${merge_args[@]}"
  git -C "$worktree" add results
  local file added=0
  while IFS= read -r file; do
    cp "$worktree/$file" "$handoff/results/"
    added=$((added + 1))
  done < <(git -C "$worktree" diff --cached --name-only --diff-filter=A -- 'results/*.json')
  echo "$added new record file(s) handed on for the push"
}

# The hand-off folder's record files, checked: plain files with the names merge gives them.
handed_on_files() {
  local path name
  [ -d "$handoff/results" ] || return 0
  for path in "$handoff"/results/*; do
    [ -e "$path" ] || [ -L "$path" ] || continue
    name="${path##*/}"
    if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*\.json$ ]] || [ -L "$path" ] || [ ! -f "$path" ]; then
      echo "::error title=cargo-diskbench::$path: not a record file as the merge phase writes them (a plain file named <date>-<label>-<id>.json); nothing was pushed"
      exit 2
    fi
    echo "$name"
  done
}

# The branch's tip with the handed-on record files added by name. Returns 1 when a file of
# ours is there with other content (nothing is then pushed).
add_to_tip() {
  local name ours_blob theirs_blob
  checkout_data_branch
  describe_branch
  mkdir -p "$worktree/results"
  for name in "${files[@]}"; do
    ours_blob="$(git hash-object "$handoff/results/$name")"
    if theirs_blob="$(git -C "$worktree" rev-parse --verify --quiet "HEAD:results/$name" 2>/dev/null)"; then
      if [ "$theirs_blob" != "$ours_blob" ]; then
        echo "::error title=cargo-diskbench::results/$name is on $branch with other content than this run's; nothing was pushed"
        return 1
      fi
    else
      cp "$handoff/results/$name" "$worktree/results/$name"
      git -C "$worktree" add "results/$name"
    fi
  done
}

# Phase 3: add the handed-on files to the tip and push; on a refusal start again from the new
# tip. Git alone: no cargo-diskbench here.
phase_push() {
  local -a files
  mapfile -t files < <(handed_on_files)
  local added attempt
  for attempt in $(seq 1 "$attempts"); do
    add_to_tip || {
      report_summary "**Not published:** a record file of this run is on \`$branch\` with other content."
      exit 1
    }
    if git -C "$worktree" diff --cached --quiet; then
      echo "nothing new for $branch"
      if [ "${#files[@]}" -gt 0 ]; then
        report_summary "Already on \`$branch\`."
      else
        report_summary
      fi
      return 0
    fi
    added="$(git -C "$worktree" diff --cached --name-only --diff-filter=A -- 'results/*.json' | wc -l)"
    git_commit -m "$(commit_message "$added")"
    if remote_git -C "$worktree" push --quiet origin "HEAD:refs/heads/$branch"; then
      echo "pushed $added record(s) to $branch"
      report_summary "Pushed to \`$branch\`."
      return 0
    fi
    if [ "$attempt" -lt "$attempts" ]; then
      echo "push to $branch refused (attempt $attempt of $attempts); adding this run's records to the new tip"
      sleep $((attempt * retry_delay_s + RANDOM % (retry_delay_s + 1)))
    fi
  done
  echo "::error title=cargo-diskbench::could not push to $branch after $attempts attempts; the records are still in this run's artifacts, re-run the merge and push jobs to publish them"
  report_summary "**Not published:** the push to \`$branch\` was refused $attempts times; nothing above was added."
  exit 1
}

case "$phase" in
  exists) phase_exists ;;
  fetch) phase_fetch ;;
  merge) phase_merge ;;
  push) phase_push ;;
  all) phase_fetch; phase_merge; phase_push ;;
esac
