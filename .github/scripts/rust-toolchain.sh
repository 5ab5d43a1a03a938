#!/usr/bin/env bash
# Set up a Rust toolchain for the rest of the job with the runner's own rustup (GitHub's
# Ubuntu images carry it): no toolchain action, so no code but the image's and rustup's
# signature-checked downloads runs. The toolchain is chosen through RUSTUP_TOOLCHAIN in
# $GITHUB_ENV, not `rustup default`, so a self-hosted runner's default stays as it was.
#
#   rust-toolchain.sh TOOLCHAIN [--component NAME]... [--target TRIPLE]...
set -euo pipefail
if [ "$#" -lt 1 ] || [ -z "$1" ]; then
  echo "usage: rust-toolchain.sh TOOLCHAIN [--component NAME]... [--target TRIPLE]..." >&2
  exit 2
fi
toolchain="$1"
shift
if ! command -v rustup >/dev/null; then
  echo "::error title=rust-toolchain::no rustup on this runner: install it (https://rustup.rs) for the runner's user, then re-run the job"
  exit 1
fi
rustup toolchain install "$toolchain" --profile minimal --no-self-update "$@"
echo "RUSTUP_TOOLCHAIN=$toolchain" >> "${GITHUB_ENV:?GITHUB_ENV is not set: run this as a workflow step}"
RUSTUP_TOOLCHAIN="$toolchain" rustc --version
RUSTUP_TOOLCHAIN="$toolchain" cargo --version
