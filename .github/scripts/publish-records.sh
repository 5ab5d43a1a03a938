#!/usr/bin/env bash
# Add downloaded records to the data branch and push it.
#
#   publish-records.sh ARTIFACTS_DIR [EXPECTED_LABELS]
#
# Run from a clone whose `origin` may be pushed to, with cargo-diskbench on PATH.
# Env: DATA_BRANCH (default: data), DATA_WORKTREE (default: ./data-branch),
#      RETRY_DELAY_S (default: 3; the wait before attempt N is N times this, plus jitter).
#
# The data branch is append-only: `cargo diskbench merge` only adds record files. When
# another run pushed first, the push is refused; we then start again from the new tip and
# merge again (duplicates are skipped), so no run's records are ever lost and none is
# written twice.
set -euo pipefail

artifacts="${1:?usage: publish-records.sh ARTIFACTS_DIR [EXPECTED_LABELS]}"
expect="${2:-}"
branch="${DATA_BRANCH:-data}"
worktree="${DATA_WORKTREE:-data-branch}"
attempts=5
retry_delay_s="${RETRY_DELAY_S:-3}"
mkdir -p "$artifacts"
artifacts="$(cd "$artifacts" && pwd)"

git_commit() {
  git -C "$worktree" \
    -c user.name="github-actions[bot]" \
    -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
    commit --quiet "$@"
}

checkout_data_branch() {
  git worktree remove --force "$worktree" 2>/dev/null || rm -rf "$worktree"
  git worktree prune
  if git ls-remote --exit-code --heads origin "$branch" >/dev/null; then
    git fetch --quiet --no-tags --depth=1 origin "+refs/heads/$branch:refs/remotes/origin/$branch"
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
    cat > "$worktree/README.md" <<'EOF'
# cargo-diskbench records

Written by the benchmark workflow; one JSON record per run under `results/`, named
`<UTC date>-<runner label>-<short id>.json`. Files are only ever added. Render them with

    cargo diskbench site --results results --out site
EOF
    git -C "$worktree" add README.md
  fi
}

for attempt in $(seq 1 "$attempts"); do
  checkout_data_branch
  describe_branch
  # Only the first attempt reports to the job summary; a retry would repeat it.
  if [ "$attempt" -gt 1 ]; then export GITHUB_STEP_SUMMARY=""; fi
  merge_args=(diskbench merge --into "$worktree/results" "$artifacts")
  if [ -n "$expect" ]; then merge_args+=(--expect "$expect"); fi
  cargo-diskbench "${merge_args[@]}"
  if [ -d "$worktree/results" ]; then git -C "$worktree" add results; fi
  if git -C "$worktree" diff --cached --quiet; then
    echo "nothing new for $branch"
    exit 0
  fi
  added="$(git -C "$worktree" diff --cached --name-only -- results | wc -l)"
  git_commit -m "Add $added record(s) from run ${GITHUB_RUN_ID:-local} of ${GITHUB_REPOSITORY:-this repository}"
  if git -C "$worktree" push --quiet origin "HEAD:refs/heads/$branch"; then
    echo "pushed $added record(s) to $branch"
    exit 0
  fi
  echo "push to $branch refused (attempt $attempt of $attempts); merging again on the new tip"
  sleep $((attempt * retry_delay_s + RANDOM % (retry_delay_s + 1)))
done
echo "::error title=cargo-diskbench::could not push to $branch after $attempts attempts"
exit 1
