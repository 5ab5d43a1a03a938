#!/usr/bin/env bash
# Add downloaded records to the data branch and push it.
#
#   publish-records.sh ARTIFACTS_DIR [EXPECTED_LABELS]
#
# Run from a clone of the repository (checked out with persist-credentials: false), with
# cargo-diskbench on PATH.
# Env: DATA_BRANCH (default: data), DATA_WORKTREE (default: ./data-branch),
#      RETRY_DELAY_S (default: 3; the wait before attempt N+1 is N times this, plus jitter),
#      DATA_PUSH_TOKEN (optional: a token for $GITHUB_SERVER_URL, sent as an HTTP header by
#      this script's own git calls only, never written to .git/config).
#
# The data branch is append-only: `cargo diskbench merge` only adds record files. When
# another run pushed first, the push is refused; we then start again from the new tip and
# merge again (duplicates are skipped), so no run's records are ever lost and none is
# written twice. The branch always holds results/ (with a .gitkeep), so the site can be
# rendered from it even before the first record arrives.
set -euo pipefail

artifacts="${1:?usage: publish-records.sh ARTIFACTS_DIR [EXPECTED_LABELS]}"
expect="${2:-}"
branch="${DATA_BRANCH:-data}"
worktree="${DATA_WORKTREE:-data-branch}"
attempts=5
retry_delay_s="${RETRY_DELAY_S:-3}"
case "$retry_delay_s" in
  '' | *[!0-9]*) echo "::error title=cargo-diskbench::RETRY_DELAY_S must be a whole number of seconds, not '$retry_delay_s'"; exit 2 ;;
esac
mkdir -p "$artifacts"
artifacts="$(cd "$artifacts" && pwd)"

# The token reaches git through GIT_CONFIG_* variables set for one command at a time: it is
# in no file and in no other process's environment (cargo-diskbench never sees it).
auth_header=""
if [ -n "${DATA_PUSH_TOKEN:-}" ]; then
  auth_header="AUTHORIZATION: basic $(printf 'x-access-token:%s' "$DATA_PUSH_TOKEN" | base64 | tr -d '\n')"
  echo "::add-mask::${auth_header#AUTHORIZATION: basic }"
  unset DATA_PUSH_TOKEN
fi
remote_git() {
  if [ -n "$auth_header" ]; then
    GIT_CONFIG_COUNT=1 \
      GIT_CONFIG_KEY_0="http.${GITHUB_SERVER_URL:-https://github.com}/.extraheader" \
      GIT_CONFIG_VALUE_0="$auth_header" \
      git "$@"
  else
    git "$@"
  fi
}

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
  if remote_git ls-remote --exit-code --heads origin "$branch" >/dev/null; then
    remote_git fetch --quiet --no-tags --depth=1 origin "+refs/heads/$branch:refs/remotes/origin/$branch"
    git worktree add --quiet --force -B "$branch" "$worktree" "origin/$branch"
  else
    # First publication: an empty branch with no history of the code.
    git worktree add --quiet --detach "$worktree"
    git -C "$worktree" checkout --quiet --orphan "$branch"
    git -C "$worktree" rm -r --quiet --force --ignore-unmatch .
    git -C "$worktree" clean -fdxq
  fi
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

# The merge's job summary is kept aside and added only once the push has gone through, so the
# summary never says "added" for records that did not reach the branch.
summary_file="$(mktemp)"
trap 'rm -f "$summary_file"' EXIT
report_summary() {
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    {
      cat "$summary_file"
      if [ -n "${1:-}" ]; then printf '\n%s\n' "$1"; fi
    } >> "$GITHUB_STEP_SUMMARY"
  fi
}

for attempt in $(seq 1 "$attempts"); do
  checkout_data_branch
  describe_branch
  : > "$summary_file"
  merge_args=(diskbench merge --into "$worktree/results" "$artifacts")
  if [ -n "$expect" ]; then merge_args+=(--expect "$expect"); fi
  GITHUB_STEP_SUMMARY="$summary_file" cargo-diskbench "${merge_args[@]}"
  git -C "$worktree" add results
  if git -C "$worktree" diff --cached --quiet; then
    echo "nothing new for $branch"
    report_summary
    exit 0
  fi
  added="$(git -C "$worktree" diff --cached --name-only --diff-filter=A -- 'results/*.json' | wc -l)"
  git_commit -m "Add $added record(s) from run ${GITHUB_RUN_ID:-local} of ${GITHUB_REPOSITORY:-this repository}"
  if remote_git -C "$worktree" push --quiet origin "HEAD:refs/heads/$branch"; then
    echo "pushed $added record(s) to $branch"
    report_summary "Pushed to \`$branch\`."
    exit 0
  fi
  if [ "$attempt" -lt "$attempts" ]; then
    echo "push to $branch refused (attempt $attempt of $attempts); merging again on the new tip"
    sleep $((attempt * retry_delay_s + RANDOM % (retry_delay_s + 1)))
  fi
done
echo "::error title=cargo-diskbench::could not push to $branch after $attempts attempts; the records are still in this run's artifacts, re-run the merge job to publish them"
report_summary "**Not published:** the push to \`$branch\` was refused $attempts times; nothing above was added."
exit 1
