#!/usr/bin/env bash
# Make a release: package the binaries, pin their SHA-256 in the action's own files, tag,
# publish.
#
#   release.sh check VERSION                       may VERSION be released (or finished) from here?
#   release.sh package VERSION TARGET BINARY OUT   OUT/cargo-diskbench-TARGET-vVERSION.tar.gz
#   release.sh pin VERSION ASSETS                  ASSETS/SHA256SUMS, the pins file, a commit, the tag
#   release.sh push VERSION                        push the tag and the branch release/vVERSION
#                                                  (remote: token)
#   release.sh publish VERSION ASSETS              the GitHub release: draft, assets, published (gh)
#   release.sh check-tag TAG [ASSETS]              does TAG's commit pin its binaries (and these)?
#
# Every phase after `package` can be run again after a failure and finishes what is missing: a
# tag the workflow made already is kept when it pins these very tarballs (pin), a push of what
# the remote has already is a no-op (push), and a draft release gets the assets it lacks
# (publish). So "Re-run failed jobs" completes a release whose publish step failed after the
# tag was pushed. The pins commit is pushed as the branch release/vX.Y.Z beside the tag, so it
# is on a branch of the repository (github.com marks a commit that is on none as possibly
# from a fork).
#
# Why a commit of its own: the action checks a downloaded binary against a SHA-256 in its own
# files, and a tag's files cannot hold the hash of binaries built from that tag. So the release
# workflow builds first, then commits the hashes (.github/actions/diskbench/release.sha256) on
# top of the commit it built, and tags that commit. A tag whose commit pins no hashes was not
# made here: `check-tag` refuses it. The pins file carries the hashes of every earlier release
# too (from the newest earlier tag), so the action at one tag can install an older version.
#
# Run from a clone of the repository with its tags (fetch-depth: 0). Nothing here runs
# cargo-diskbench or any other code the release built: the job that holds the write token
# runs this script, git, sha256sum and gh only.
# Env: GITHUB_SERVER_URL, GITHUB_REPOSITORY (the download location written into the pins
#      file; the repository gh publishes to); GITHUB_RUN_ID (named in the release notes);
#      GH_TOKEN (publish only, for gh); RELEASE_DOWNLOAD_URL (instead of those two: where the tarballs will be, e.g. a
#      test's local server); RELEASE_PUSH_TOKEN (push only: sent as an HTTP header by this
#      script's own git call, never written to .git/config).
set -euo pipefail

TARGETS=(aarch64-unknown-linux-musl x86_64-unknown-linux-musl)
PINS=.github/actions/diskbench/release.sha256

fail() {
  local code="$1"
  shift
  echo "::error title=cargo-diskbench release::$*"
  exit "$code"
}
usage() {
  echo "usage: release.sh check VERSION | package VERSION TARGET BINARY OUT | pin VERSION ASSETS | push VERSION | publish VERSION ASSETS | check-tag TAG [ASSETS]" >&2
  exit 2
}

valid_version() {
  [[ "$1" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]]
}

# The workspace's version at REV (default: the work tree), from [workspace.package] or, without
# one, the cargo-diskbench package.
cargo_version() {
  local text
  if [ -n "${1:-}" ]; then text="$(git show "$1:Cargo.toml")"; else text="$(cat Cargo.toml)"; fi
  local v
  v="$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' <<< "$text" | head -n1)"
  if [ -z "$v" ]; then
    if [ -n "${1:-}" ]; then text="$(git show "$1:cargo-diskbench/Cargo.toml")"; else text="$(cat cargo-diskbench/Cargo.toml)"; fi
    v="$(sed -n '/^\[package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' <<< "$text" | head -n1)"
  fi
  echo "$v"
}

tarball_name() { echo "cargo-diskbench-$2-v$1.tar.gz"; }

# The token reaches git through GIT_CONFIG_* variables for one command: it is in no file.
# shellcheck source=.github/scripts/remote-git.sh
. "$(dirname "${BASH_SOURCE[0]}")/remote-git.sh"
if [ -n "${RELEASE_PUSH_TOKEN:-}" ]; then
  push_token "$RELEASE_PUSH_TOKEN"
  unset RELEASE_PUSH_TOKEN
fi

# VERSION may be released from this checkout: X.Y.Z, the version Cargo.toml says, and either
# no tag vX.Y.Z here or at origin, or one this workflow made (its commit pins the binaries):
# then the release is finished, never made again. A tag is never moved.
phase_check() {
  local version="$1" in_toml status=0 at_origin=false
  valid_version "$version" || fail 2 "version '$version' is not X.Y.Z (no leading v, no suffix)"
  in_toml="$(cargo_version)"
  [ "$in_toml" = "$version" ] || fail 2 "version $version: Cargo.toml says '$in_toml'; bump the workspace version (and CHANGELOG.md) in a pull request first, then release from that commit"
  remote_git ls-remote --exit-code --tags origin "refs/tags/v$version" >/dev/null 2>"${TMPDIR:-/tmp}/release-ls-remote.err" || status=$?
  case "$status" in
    0) at_origin=true ;;
    2) ;;  # no such tag
    *) fail 1 "cannot ask origin for its tags (git ls-remote exit $status): $(cat "${TMPDIR:-/tmp}/release-ls-remote.err")" ;;
  esac
  local fetched=false where=""
  if [ "$at_origin" = true ]; then where=" at origin"; fi
  if [ "$at_origin" = true ] && ! git rev-parse --quiet --verify "refs/tags/v$version" >/dev/null; then
    remote_git fetch --quiet --no-tags origin "refs/tags/v$version" 2>/dev/null \
      || fail 1 "cannot fetch tag v$version from origin"
    git update-ref "refs/tags/v$version" FETCH_HEAD
    fetched=true
  fi
  if git rev-parse --quiet --verify "refs/tags/v$version" >/dev/null; then
    if ! ( phase_check_tag "v$version" ) >/dev/null 2>&1; then
      # Fetched only to look at: not left behind.
      if [ "$fetched" = true ]; then git update-ref -d "refs/tags/v$version"; fi
      fail 2 "tag v$version exists$where already and was not made by the release workflow (its commit pins no binaries); a release tag is never moved or made again: release the next version"
    fi
    echo "v$version is tagged$where already by the release workflow: this run finishes that release (the same tag, the tarballs it pins)"
    return 0
  fi
  echo "v$version can be released from $(git rev-parse HEAD)"
}

# A tarball as cargo-binstall expects it (Cargo.toml's [package.metadata.binstall]): one folder
# cargo-diskbench-TARGET-vVERSION/ holding the binary and the licence texts; same bytes for the
# same inputs (sorted, fixed times and owners, gzip without a name or time).
phase_package() {
  local version="$1" target="$2" binary="$3" out="$4"
  valid_version "$version" || fail 2 "version '$version' is not X.Y.Z"
  local known=false t
  for t in "${TARGETS[@]}"; do [ "$t" = "$target" ] && known=true; done
  [ "$known" = true ] || fail 2 "target '$target': releases are built for ${TARGETS[*]}"
  if [ ! -f "$binary" ] || [ ! -x "$binary" ]; then fail 2 "$binary: not an executable file"; fi
  local name="cargo-diskbench-$target-v$version"
  local stage
  stage="$(mktemp -d)"
  mkdir "$stage/$name"
  install -m 0755 "$binary" "$stage/$name/cargo-diskbench"
  for f in README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE; do
    if [ -f "$f" ]; then install -m 0644 "$f" "$stage/$name/$f"; fi
  done
  mkdir -p "$out"
  local epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    -C "$stage" -cf - "$name" | gzip -9 -n > "$out/$name.tar.gz"
  rm -rf "$stage"
  echo "$out/$name.tar.gz"
}

# The pins of the newest earlier release that has any (they carry every older one).
earlier_pins() {
  local tag
  while read -r tag; do
    if git cat-file -e "$tag:$PINS" 2>/dev/null; then
      git show "$tag:$PINS" | awk 'length($1) == 64 && $1 ~ /^[0-9a-f]+$/ && NF == 2'
      return
    fi
  done < <(git tag --list 'v[0-9]*' --sort=-v:refname)
}

phase_pin() {
  local version="$1" assets="$2"
  phase_check "$version"
  [ -d "$assets" ] || fail 2 "$assets: no such folder (the built tarballs)"
  local t name
  for t in "${TARGETS[@]}"; do
    name="$(tarball_name "$version" "$t")"
    [ -f "$assets/$name" ] || fail 2 "$assets/$name is missing: every target is released together"
  done
  if git rev-parse --quiet --verify "refs/tags/v$version" >/dev/null; then
    # A rerun: the tag stays; these must be the tarballs it pins.
    ( phase_check_tag "v$version" "$assets" ) \
      || fail 1 "tag v$version pins other tarballs than these (they were built again, and a build is not bit for bit the same): re-run the failed jobs of the run that made the tag (its build artifacts are kept 7 days), or release the next version"
    (
      cd "$assets"
      for t in "${TARGETS[@]}"; do sha256sum "$(tarball_name "$version" "$t")"; done
    ) > "$assets/SHA256SUMS"
    echo "v$version was tagged by an earlier attempt and pins these tarballs: kept"
    return 0
  fi
  local download
  if [ -n "${RELEASE_DOWNLOAD_URL:-}" ]; then
    download="${RELEASE_DOWNLOAD_URL%/}"
  else
    [ -n "${GITHUB_REPOSITORY:-}" ] || fail 2 "GITHUB_REPOSITORY is not set: the pins file must say where the tarballs are"
    download="${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY/releases/download"
  fi
  (
    cd "$assets"
    for t in "${TARGETS[@]}"; do sha256sum "$(tarball_name "$version" "$t")"; done
  ) > "$assets/SHA256SUMS"
  local earlier
  earlier="$(earlier_pins)"
  {
    echo "# SHA-256 of the cargo-diskbench release binaries, written by the release workflow"
    echo "# (.github/scripts/release.sh pin) into the commit that tag v$version points at. The"
    echo "# action installs the version below (or its version input) from the download location"
    echo "# below and refuses a tarball whose hash differs. Branches have no such file: there the"
    echo "# action builds from source."
    echo "# version: $version"
    echo "# download: $download"
    { if [ -n "$earlier" ]; then echo "$earlier"; fi; cat "$assets/SHA256SUMS"; } | sort -k2,2 -u
  } > "$PINS"
  git add -f "$PINS"
  git -c user.name="github-actions[bot]" \
    -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
    commit --quiet -m "Release v$version: pin the SHA-256 of its binaries" \
    -m "Built from $(git rev-parse HEAD); the tag v$version points at this commit."
  git -c user.name="github-actions[bot]" \
    -c user.email="41898282+github-actions[bot]@users.noreply.github.com" \
    tag -a "v$version" -m "cargo-diskbench $version"
  phase_check_tag "v$version" "$assets"
}

# The tag and the branch release/vVERSION at its commit, together (--atomic: both or neither).
# What the remote has already is left as it is, so a rerun pushes only what is missing; a tag
# or branch there at another commit is refused, never overwritten.
phase_push() {
  local version="$1" commit
  phase_check_tag "v$version"
  commit="$(git rev-parse "v$version^{commit}")"
  remote_git push --quiet --atomic origin "refs/tags/v$version:refs/tags/v$version" "$commit:refs/heads/release/v$version" \
    || fail 1 "the push of tag v$version and branch release/v$version was refused; nothing was pushed (an existing tag or branch is never overwritten: if origin has either at another commit, release the next version)"
  echo "pushed tag v$version and branch release/v$version ($commit)"
}

# The GitHub release of the pushed tag: created as a draft with the assets, then published
# (with release immutability on, assets can be added only before publishing). A rerun finds the
# draft and uploads what it lacks (--clobber: an upload cut off is replaced), or finds it
# published with every asset and does nothing.
phase_publish() {
  local version="$1" assets="$2" tag="v$1"
  valid_version "$version" || fail 2 "version '$version' is not X.Y.Z"
  [ -n "${GITHUB_REPOSITORY:-}" ] || fail 2 "GITHUB_REPOSITORY is not set: the repository to publish the release in"
  command -v gh >/dev/null || fail 2 "the GitHub CLI (gh) is needed to publish the release"
  phase_check_tag "$tag" "$assets" >/dev/null
  local files=() t
  for t in "${TARGETS[@]}"; do files+=("$assets/$(tarball_name "$version" "$t")"); done
  files+=("$assets/SHA256SUMS")
  [ -f "$assets/SHA256SUMS" ] || fail 2 "$assets/SHA256SUMS is missing: run the pin phase first"
  local err="${TMPDIR:-/tmp}/release-gh.err" draft
  if draft="$(gh release view "$tag" --repo "$GITHUB_REPOSITORY" --json isDraft --jq .isDraft 2>"$err")"; then
    if [ "$draft" = true ]; then
      echo "$tag: a draft from an earlier attempt; uploading its assets again"
      gh release upload "$tag" --repo "$GITHUB_REPOSITORY" --clobber "${files[@]}" \
        || fail 1 "uploading the assets of $tag failed; re-run this job to try again"
    else
      local present missing=()
      present="$(gh release view "$tag" --repo "$GITHUB_REPOSITORY" --json assets --jq '.assets[].name')" \
        || fail 1 "cannot list the assets of release $tag"
      local f
      for f in "${files[@]}"; do
        grep -qFx "${f##*/}" <<< "$present" || missing+=("${f##*/}")
      done
      if [ "${#missing[@]}" -gt 0 ]; then
        fail 1 "release $tag is published without ${missing[*]}; a published release cannot be changed (release immutability): release the next version"
      fi
      echo "release $tag is published with every asset already"
      return 0
    fi
  elif grep -qi 'release not found' "$err"; then
    local notes="${TMPDIR:-/tmp}/release-notes.md"
    {
      echo "Static binaries for x86_64 and aarch64 Linux (musl), built by run ${GITHUB_RUN_ID:-(local)}."
      echo
      echo "The action at \`@$tag\` installs them and checks each tarball against"
      echo "\`$PINS\` in the tagged commit (also on the branch \`release/$tag\`)."
      echo
      echo '```'
      cat "$assets/SHA256SUMS"
      echo '```'
    } > "$notes"
    gh release create "$tag" --repo "$GITHUB_REPOSITORY" --verify-tag --draft \
      --title "cargo-diskbench $version" --notes-file "$notes" "${files[@]}" \
      || fail 1 "creating the draft release $tag failed; re-run this job: the draft is finished, not made again"
  else
    fail 1 "cannot ask for release $tag: $(tr '\n' ' ' < "$err")"
  fi
  gh release edit "$tag" --repo "$GITHUB_REPOSITORY" --draft=false \
    || fail 1 "publishing the draft release $tag failed; re-run this job"
  echo "published release $tag"
}

# TAG's commit pins both targets' tarballs of TAG's version, and Cargo.toml there says that
# version; with ASSETS, the tarballs there are the pinned ones.
phase_check_tag() {
  local tag="$1" assets="${2:-}" version
  version="${tag#v}"
  if [ "$tag" = "$version" ] || ! valid_version "$version"; then fail 2 "tag '$tag' is not vX.Y.Z"; fi
  git rev-parse --quiet --verify "refs/tags/$tag" >/dev/null || fail 2 "no tag $tag here"
  local commit
  commit="$(git rev-parse "$tag^{commit}")"
  if ! git cat-file -e "$commit:$PINS" 2>/dev/null; then
    fail 1 "tag $tag ($commit) was not made by the release workflow: its commit has no $PINS, so the action at $tag would build from source and no binary of it is pinned. Delete the tag (git push origin :refs/tags/$tag) and run the release workflow (Actions -> release -> Run workflow, version $version)"
  fi
  local pins in_toml t name
  pins="$(git show "$commit:$PINS")"
  [ "$(sed -n 's/^# version: *//p' <<< "$pins" | head -n1)" = "$version" ] \
    || fail 1 "tag $tag: $PINS names version '$(sed -n 's/^# version: *//p' <<< "$pins" | head -n1)', not $version"
  in_toml="$(cargo_version "$commit")"
  [ "$in_toml" = "$version" ] || fail 1 "tag $tag: Cargo.toml there says version '$in_toml'"
  for t in "${TARGETS[@]}"; do
    name="$(tarball_name "$version" "$t")"
    local pinned
    pinned="$(awk -v f="$name" '$2 == f && length($1) == 64 && $1 ~ /^[0-9a-f]+$/ { print $1 }' <<< "$pins")"
    [ -n "$pinned" ] || fail 1 "tag $tag: $PINS pins no SHA-256 for $name"
    if [ -n "$assets" ]; then
      local actual
      actual="$(sha256sum "$assets/$name" | cut -d' ' -f1)"
      [ "$actual" = "$pinned" ] || fail 1 "tag $tag: $assets/$name has SHA-256 $actual, the tag pins $pinned"
    fi
  done
  echo "$tag ($commit) pins the SHA-256 of its ${#TARGETS[@]} binaries"
}

phase="${1:-}"
[ -n "$phase" ] || usage
shift
case "$phase" in
  check) [ "$#" -eq 1 ] || usage; phase_check "$1" ;;
  package) [ "$#" -eq 4 ] || usage; phase_package "$@" ;;
  pin) [ "$#" -eq 2 ] || usage; phase_pin "$@" ;;
  push) [ "$#" -eq 1 ] || usage; phase_push "$1" ;;
  publish) [ "$#" -eq 2 ] || usage; phase_publish "$@" ;;
  check-tag) if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then usage; fi; phase_check_tag "$@" ;;
  *) usage ;;
esac
