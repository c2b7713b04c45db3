#!/usr/bin/env bash
# Where a build's CPU time goes, by stage (BENCHMARKS.md, "Where a build's time goes").
#
#   scripts/stage-profile.sh BINARY ARGS...
#
# Runs `BINARY ARGS...` (e.g. a release conflictbench and a `build` command) under
# `perf record` with DWARF call stacks, then attributes every sample to a stage of the build
# (read, join, render, hash and lookup, validate, reader check, write, the rest) with
# scripts/stage-profile.py, and prints the table. Needs `perf` and a binary with line tables
# (the release profile keeps them). PROFILE_HZ sets the sampling rate (default 2000);
# PROFILE_DATA=FILE keeps the recording (for `perf report -i FILE`).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/stage-profile.sh BINARY ARGS..." >&2; exit 2; }
data=${PROFILE_DATA:-$(mktemp)}
[ -n "${PROFILE_DATA:-}" ] || trap 'rm -f "$data"' EXIT
perf record -q -F "${PROFILE_HZ:-2000}" --call-graph dwarf,16384 -o "$data" -- "$@" >/dev/null
perf script -i "$data" 2>/dev/null | python3 "$(dirname "$0")/stage-profile.py"
