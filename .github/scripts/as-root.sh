#!/usr/bin/env bash
# A workflow step's script, run as root with the runner user's toolchain: for the tests that
# need root (`shell: bash .github/scripts/as-root.sh {0}`). sudo resets the environment
# (sudo-rs also ignores -E), so what cargo and the tests read is passed by name; afterwards
# what root wrote under target/ is handed back to the runner user, whose cache step saves it.
# sudo -n: a runner that would ask for a password fails at once instead of hanging.
set -euo pipefail
script="$1"
vars=("PATH=$PATH" "HOME=$HOME")
for name in CARGO_HOME RUSTUP_HOME CARGO_INCREMENTAL CARGO_TERM_COLOR DISKBENCH_TEST_STRICT; do
  if [ -n "${!name:-}" ]; then
    vars+=("$name=${!name}")
  fi
done
status=0
sudo -n env "${vars[@]}" bash -e "$script" || status=$?
if [ -d target ]; then
  sudo -n chown -R "$(id -u):$(id -g)" target
fi
exit "$status"
