#!/usr/bin/env bash
# Install a released cargo-diskbench binary, checked against the SHA-256 pinned in the action's
# own files.
#
#   install-release.sh PINS_FILE VERSION DEST_DIR
#
# PINS_FILE is the action's release.sha256, which the release workflow writes into the commit
# that a release tag points at (release.sh pin): `# download: URL` says where the tarballs are,
# and each `<sha256>  <tarball>` line pins one tarball of one release. VERSION is X.Y.Z (a
# leading v is dropped). The tarball for this machine's architecture is downloaded, its
# SHA-256 compared with the pinned one, and only then unpacked: the binary lands in
# DEST_DIR/bin/cargo-diskbench. A mismatch, a failed download (a 404, a cut-off transfer) or
# a binary that does not run is refused by name, and nothing is installed.
#
# Exit status: 0 installed; 1 the download failed or did not match; 2 bad usage, a version
# the pins file does not pin, or an architecture with no release binary.
set -euo pipefail

fail() {
  local code="$1"
  shift
  echo "::error title=cargo-diskbench::$*"
  exit "$code"
}

[ "$#" -eq 3 ] || fail 2 "usage: install-release.sh PINS_FILE VERSION DEST_DIR"
pins="$1"
version="${2#v}"
dest="$3"
[ -f "$pins" ] || fail 2 "$pins: no such file; this ref of the action pins no release (build from source instead)"
case "$version" in
  '' | *[!0-9.]* | .* | *. | *..*) fail 2 "version '$2' is not X.Y.Z" ;;
esac

case "$(uname -m)" in
  x86_64 | amd64) target=x86_64-unknown-linux-musl ;;
  aarch64 | arm64) target=aarch64-unknown-linux-musl ;;
  *) fail 2 "no release binary for this machine's architecture ($(uname -m)); releases are built for x86_64 and aarch64 Linux" ;;
esac

name="cargo-diskbench-${target}-v${version}"
tarball="${name}.tar.gz"
# The pin: a line "<64 hex>  <tarball>" (sha256sum's format), matched by the exact name.
expected="$(awk -v f="$tarball" '$2 == f && length($1) == 64 && $1 ~ /^[0-9a-f]+$/ { print $1; exit }' "$pins")"
if [ -z "$expected" ]; then
  pinned="$(awk 'length($1) == 64 && $1 ~ /^[0-9a-f]+$/ { print $2 }' "$pins" | sed -n 's/^cargo-diskbench-.*-v\([0-9.]*\)\.tar\.gz$/\1/p' | sort -uV | paste -sd, -)"
  fail 2 "version $version: $pins pins no SHA-256 for $tarball (it pins: ${pinned:-nothing}); use the action at the tag v$version, or leave version empty for the release this ref belongs to"
fi
base="$(sed -n 's/^# download: *//p' "$pins" | head -n1)"
[ -n "$base" ] || fail 2 "$pins names no download location (a '# download: URL' line)"
url="${base%/}/v${version}/${tarball}"

# HTTPS only, except a loopback address (the tests' local server); the hash check below is
# what makes the file trustworthy either way.
proto='=https'
case "$url" in
  http://127.0.0.1[:/]* | http://localhost[:/]* | http://\[::1\][:/]*) proto='=https,http' ;;
esac
command -v curl >/dev/null || fail 2 "curl is needed to download the release binary: apt-get install curl (or build from source with version: source)"

work="$(mktemp -d "${RUNNER_TEMP:-/tmp}/cargo-diskbench-download.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "downloading $url"
status=0
http_code="$(curl --proto "$proto" --tlsv1.2 --location --fail --silent --show-error \
  --retry 3 --connect-timeout 20 --max-time 300 --max-filesize 209715200 \
  --write-out '%{http_code}' --output "$work/$tarball" "$url" 2>"$work/curl.err")" || status=$?
if [ "$status" -ne 0 ]; then
  why="$(tr '\n' ' ' < "$work/curl.err")"
  case "$status" in
    22) fail 1 "cannot download $tarball from $url: HTTP $http_code. Is release v$version published with that asset? ($why)" ;;
    18) fail 1 "cannot download $tarball from $url: the transfer was cut off before the end; nothing was installed ($why)" ;;
    *) fail 1 "cannot download $tarball from $url (curl exit $status): $why" ;;
  esac
fi
actual="$(sha256sum "$work/$tarball" | cut -d' ' -f1)"
if [ "$actual" != "$expected" ]; then
  fail 1 "SHA-256 mismatch for $tarball from $url: expected $expected (pinned in $pins), got $actual ($(wc -c < "$work/$tarball") bytes); refused, nothing was installed"
fi
echo "$tarball: SHA-256 $actual, as pinned"

# Only the one member, as the runner user, no owners or modes from the archive.
mkdir "$work/unpacked"
tar -xzf "$work/$tarball" -C "$work/unpacked" --no-same-owner --no-same-permissions "$name/cargo-diskbench" \
  || fail 1 "$tarball holds no $name/cargo-diskbench"
bin="$work/unpacked/$name/cargo-diskbench"
if [ -L "$bin" ] || [ ! -f "$bin" ]; then
  fail 1 "$tarball: $name/cargo-diskbench is not a regular file"
fi
mkdir -p "$dest/bin"
install -m 0755 "$bin" "$dest/bin/cargo-diskbench.new"
# It must run here (a static binary runs on any Linux of its architecture) and be the version
# asked for.
said="$("$dest/bin/cargo-diskbench.new" diskbench --version 2>&1)" || {
  rm -f "$dest/bin/cargo-diskbench.new"
  fail 1 "the downloaded cargo-diskbench does not run on this machine: $said"
}
case "$said" in
  *" $version") ;;
  *)
    rm -f "$dest/bin/cargo-diskbench.new"
    fail 1 "the downloaded binary says '$said', not version $version"
    ;;
esac
mv -f "$dest/bin/cargo-diskbench.new" "$dest/bin/cargo-diskbench"
echo "installed $said into $dest/bin"
