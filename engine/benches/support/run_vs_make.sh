#!/bin/sh
# `run` of N `echo` stages against `make -j2` on the same DAG (docs/performance.md, the
# `run`-vs-`make` row). Stage i (i ≥ 1) needs stage (i-1)/2: a binary tree rooted at s0.
#
#   engine/benches/support/run_vs_make.sh OUT [N]      # writes OUT/echo.kdl and OUT/Makefile
#
# then, from the workspace root, with a release build and hyperfine (paired, A B A B):
#
#   hyperfine -N --warmup 1 --runs 10 \
#       "target/release/reviewflow run OUT/echo.kdl --jobs 2" "make -s -j2 -C OUT"
#
# `make` rebuilds every target each time (they are phony); `run` starts a new run each time.
set -eu
out=${1:?usage: run_vs_make.sh OUT [N]}
n=${2:-1000}
mkdir -p "$out"
{
    echo 'pipeline "echoes"'
    i=0
    while [ "$i" -lt "$n" ]; do
        echo "stage \"s$i\" uses=\"run\" {"
        echo "    command \"echo\" \"s$i\""
        [ "$i" -gt 0 ] && echo "    needs \"s$(((i - 1) / 2))\""
        echo '}'
        i=$((i + 1))
    done
} >"$out/echo.kdl"
{
    printf '.PHONY: all'
    i=0
    while [ "$i" -lt "$n" ]; do printf ' s%d' "$i"; i=$((i + 1)); done
    printf '\nall:'
    i=0
    while [ "$i" -lt "$n" ]; do printf ' s%d' "$i"; i=$((i + 1)); done
    printf '\n'
    i=0
    while [ "$i" -lt "$n" ]; do
        if [ "$i" -gt 0 ]; then printf 's%d: s%d\n' "$i" $(((i - 1) / 2)); else printf 's0:\n'; fi
        printf '\techo s%d\n' "$i"
        i=$((i + 1))
    done
} >"$out/Makefile"
