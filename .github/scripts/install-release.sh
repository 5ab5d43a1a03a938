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
# DEST_DIR/bin/cargo-diskbench. A transfer cut off, a server error (5xx, 429) or a timeout is
# tried again (3 attempts, RETRY_DELAY_S seconds apart, default 3, doubling); a mismatch, a
# missing asset (404), a failed download after the last attempt or a binary that does not run
# is refused by name, and nothing is installed.
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

retry_delay_s="${RETRY_DELAY_S:-3}"
case "$retry_delay_s" in
  '' | *[!0-9]*) fail 2 "RETRY_DELAY_S must be a whole number of seconds, not '$retry_delay_s'" ;;
esac
attempts=3

work="$(mktemp -d "${RUNNER_TEMP:-/tmp}/cargo-diskbench-download.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "downloading $url"
# Each attempt downloads the whole file again: the hash check below is on what arrived.
for attempt in $(seq 1 "$attempts"); do
  status=0
  http_code="$(curl --proto "$proto" --tlsv1.2 --location --fail --silent --show-error \
    --connect-timeout 20 --max-time 300 --max-filesize 209715200 \
    --write-out '%{http_code}' --output "$work/$tarball" "$url" 2>"$work/curl.err")" || status=$?
  if [ "$status" -eq 0 ]; then break; fi
  why="$(tr '\n' ' ' < "$work/curl.err")"
  # Worth another attempt: the server's own failure or a busy server (5xx, 429), a transfer
  # cut off (18), a timeout (28), a connection refused, reset or answered with nothing (7, 52,
  # 55, 56). A 404 and the rest are not.
  case "$status:$http_code" in
    22:5?? | 22:429 | 18:* | 28:* | 7:* | 52:* | 55:* | 56:*) again=true ;;
    *) again=false ;;
  esac
  if [ "$again" = true ] && [ "$attempt" -lt "$attempts" ]; then
    wait_s=$((retry_delay_s * (1 << (attempt - 1))))
    echo "attempt $attempt of $attempts failed (curl exit $status, HTTP $http_code): $why; trying again in ${wait_s} s"
    sleep "$wait_s"
    continue
  fi
  tries="after $attempt attempt(s)"
  case "$status:$http_code" in
    22:404) fail 1 "cannot download $tarball from $url: HTTP 404. Is release v$version published with that asset? ($why)" ;;
    22:5?? | 22:429) fail 1 "cannot download $tarball from $url: the server answered HTTP $http_code $tries, an error on its side, not a missing asset; re-run the job later (nothing was installed) ($why)" ;;
    22:*) fail 1 "cannot download $tarball from $url: HTTP $http_code ($why)" ;;
    18:*) fail 1 "cannot download $tarball from $url: the transfer was cut off before the end $tries; nothing was installed ($why)" ;;
    *) fail 1 "cannot download $tarball from $url (curl exit $status) $tries: $why" ;;
  esac
done
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
