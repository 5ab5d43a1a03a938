#!/usr/bin/env bash
# Make a release: package the binaries, pin their SHA-256 in the action's own files, tag.
#
#   release.sh check VERSION                       may VERSION be released from here? (no writes)
#   release.sh package VERSION TARGET BINARY OUT   OUT/cargo-diskbench-TARGET-vVERSION.tar.gz
#   release.sh pin VERSION ASSETS                  ASSETS/SHA256SUMS, the pins file, a commit, the tag
#   release.sh push VERSION                        push the tag (remote: token)
#   release.sh check-tag TAG [ASSETS]              does TAG's commit pin its binaries (and these)?
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
#      file); RELEASE_DOWNLOAD_URL (instead of those two: where the tarballs will be, e.g. a
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
  echo "usage: release.sh check VERSION | package VERSION TARGET BINARY OUT | pin VERSION ASSETS | push VERSION | check-tag TAG [ASSETS]" >&2
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

# VERSION may be released from this checkout: X.Y.Z, the version Cargo.toml says, and no tag
# vX.Y.Z here or at origin (a tag once published is never made again).
phase_check() {
  local version="$1" in_toml status=0
  valid_version "$version" || fail 2 "version '$version' is not X.Y.Z (no leading v, no suffix)"
  in_toml="$(cargo_version)"
  [ "$in_toml" = "$version" ] || fail 2 "version $version: Cargo.toml says '$in_toml'; bump the workspace version (and CHANGELOG.md) in a pull request first, then release from that commit"
  if git rev-parse --quiet --verify "refs/tags/v$version" >/dev/null; then
    fail 2 "tag v$version exists already; a release tag is never moved or made again: release the next version"
  fi
  remote_git ls-remote --exit-code --tags origin "refs/tags/v$version" >/dev/null 2>"${TMPDIR:-/tmp}/release-ls-remote.err" || status=$?
  case "$status" in
    0) fail 2 "tag v$version exists at origin already; a release tag is never moved or made again: release the next version" ;;
    2) ;;  # no such tag
    *) fail 1 "cannot ask origin for its tags (git ls-remote exit $status): $(cat "${TMPDIR:-/tmp}/release-ls-remote.err")" ;;
  esac
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

phase_push() {
  local version="$1"
  phase_check_tag "v$version"
  remote_git push --quiet origin "refs/tags/v$version:refs/tags/v$version" \
    || fail 1 "the push of tag v$version was refused; nothing was released (an existing tag is never overwritten)"
  echo "pushed tag v$version ($(git rev-parse "v$version^{commit}"))"
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
  check-tag) if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then usage; fi; phase_check_tag "$@" ;;
  *) usage ;;
esac
