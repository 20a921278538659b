#!/usr/bin/env bash
# The script of the composite action at the repository's top (action.yml, docs/install.md):
# installs reviewflow as the action's own commit has it.
#
#   install.sh plan      writes the cache's folder and key (`dir=`, `key=`) to $GITHUB_OUTPUT
#   install.sh install   fills $REVIEWFLOW_DIR unless the cache restored it, and puts its bin
#                        folder on $GITHUB_PATH
#
# It installs the release archive that .github/action/releases lists for the runner, checked
# against the checksum listed beside it, or else builds the action's source with
# `cargo install --locked --path`. A listed archive that fails its checksum is an error, never a
# reason to build instead: the list is what the commit vouches for.
set -euo pipefail

action="${GITHUB_ACTION_PATH:?the folder of the action}"
releases="${action}/.github/action/releases"

fail() {
    echo "::error title=reviewflow::$*" >&2
    exit 1
}

# The release target of the runner; none for a runner no archive is built for.
case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
    Linux/X64) target=x86_64-unknown-linux-gnu ;;
    Linux/ARM64) target=aarch64-unknown-linux-gnu ;;
    macOS/ARM64) target=aarch64-apple-darwin ;;
    *) target="" ;;
esac

# The SHA-256 program: coreutils' on Linux, shasum on macOS.
if command -v sha256sum >/dev/null 2>&1; then
    sha256=(sha256sum)
else
    sha256=(shasum -a 256)
fi

# What the commit holds: a digest of the action's files, by path. Not the commit's id, which
# GitHub does not promise a composite action's steps (its ref can be empty there); the files are
# the commit's whatever named it, and a tag moved to other code gives another key.
digest() {
    (cd "${action}" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z |
        xargs -0 "${sha256[@]}" --) | "${sha256[@]}" | cut -d ' ' -f 1
}

plan() {
    local out="${GITHUB_OUTPUT:?the output file of the step}"
    local sum
    sum="$(digest)"
    local dir="${RUNNER_TOOL_CACHE:-${HOME}/.cache}/reviewflow/${sum}"
    printf 'dir=%s\nkey=reviewflow-%s-%s-%s\n' "${dir}" "${RUNNER_OS:-os}" "${RUNNER_ARCH:-arch}" "${sum}" >>"${out}"
}

# The line `TARGET SHA256 URL` the releases file lists for this runner, if any.
release_line() {
    [[ -n "${target}" && -f "${releases}" ]] || return 1
    local t sum url
    while read -r t sum url; do
        if [[ "${t}" == "${target}" ]]; then
            printf '%s %s\n' "${sum}" "${url}"
            return 0
        fi
    done < <(grep -v '^[[:space:]]*\(#\|$\)' "${releases}")
    return 1
}

download() {
    local dir="$1" sum="$2" url="$3"
    [[ "${sum}" =~ ^[0-9a-f]{64}$ ]] || fail "${releases}: '${sum}' is not a SHA-256 checksum"
    [[ "${url}" == https://* ]] || fail "${releases}: '${url}' is not an https URL"
    local tmp
    tmp="$(mktemp -d)"
    curl --proto '=https' --tlsv1.2 --fail --silent --show-error --location \
        --output "${tmp}/reviewflow.tar.gz" "${url}"
    local got
    got="$("${sha256[@]}" "${tmp}/reviewflow.tar.gz" | cut -d ' ' -f 1)"
    if [[ "${got}" != "${sum}" ]]; then
        rm -rf "${tmp}"
        fail "${url}: the archive's SHA-256 is ${got}, and ${releases} lists ${sum}: nothing installed"
    fi
    mkdir -p "${dir}"
    tar -xzf "${tmp}/reviewflow.tar.gz" -C "${dir}"
    rm -rf "${tmp}"
    echo "reviewflow: the release archive for ${target}, checksum ${sum}"
}

install() {
    local dir="${REVIEWFLOW_DIR:?the folder the plan step named}"
    local line
    if [[ "${REVIEWFLOW_CACHE_HIT:-}" == "true" && -x "${dir}/bin/reviewflow" ]]; then
        echo "reviewflow: restored from the cache"
    elif line="$(release_line)"; then
        # shellcheck disable=SC2086 # the line is two words: the checksum and the URL
        download "${dir}" ${line}
    else
        echo "reviewflow: no release archive for ${target:-this runner}; building the action's source"
        cargo install --locked --path "${action}" --root "${dir}"
    fi
    [[ -x "${dir}/bin/reviewflow" ]] || fail "${dir}/bin/reviewflow was not installed"
    echo "${dir}/bin" >>"${GITHUB_PATH:?the PATH file of the job}"
}

case "${1:-}" in
    plan) plan ;;
    install) install ;;
    *) fail "usage: install.sh plan|install" ;;
esac
