# Sourced by the scripts that push: git against the remote with a token that reaches git
# through GIT_CONFIG_* variables set for one git command at a time, so it is in no file and in
# no argument. `push_token TOKEN` takes it (and masks it in the log); `remote_git ARGS` runs
# git with it, or plain git when no token was given.
# shellcheck shell=bash
auth_header=""
push_token() {
  auth_header="AUTHORIZATION: basic $(printf 'x-access-token:%s' "$1" | base64 | tr -d '\n')"
  echo "::add-mask::${auth_header#AUTHORIZATION: basic }"
}
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
