#!/usr/bin/env bash
# Checks that a change leaves the offline outputs byte-identical.
#
#   scripts/compare-build.sh BEFORE [AFTER_BINARY]
#
# BEFORE is either
#   - a folder holding `conflictbench build all --out DIR` made by the earlier binary: the
#     default recipes are built again with AFTER_BINARY and compared; or
#   - the earlier conflictbench binary itself: both binaries then build every bundled recipe
#     from the bundled `raw/` samples (the default ones with `build all`, the alternate
#     `kre-ecqa-jsonl` by name; `raw/` has no e-CARE task files for `kre-ecare-tasks`), and
#     the KRE domains whose sources are in ../shared/data (e-CARE both ways, CoS-E, SQuAD,
#     MuSiQue).
# AFTER_BINARY defaults to this checkout's target/debug/conflictbench. Run from the
# repository root; the builds are offline (no endpoint, no cache). Each binary builds with the
# recipes and prompts bundled in it (its own `init`), not the checkout's `recipes/`.
# COMPARE_KEEP=DIR keeps both builds in DIR/before and DIR/after.
#
# Left out of the comparison: `runs.jsonl` only. It is the one output file that records facts
# of the run itself (its Unix time and the LLM layer's counters of that run) and grows by one
# line per run, so two runs of the same build differ there by design; every other file
# (rows, rejects, manifests, cards) must be the same byte for byte.
# Exit status: 0 identical, 1 different, 2 usage or build error.
set -euo pipefail

before=${1:?usage: scripts/compare-build.sh BEFORE [AFTER_BINARY]}
after=${2:-target/debug/conflictbench}
[ -x "$after" ] || { echo "no binary $after (cargo build -p conflictbench)" >&2; exit 2; }
if [ -n "${COMPARE_KEEP:-}" ]; then
    # COMPARE_KEEP=DIR keeps both builds there (DIR/before, DIR/after), to look at what differs.
    work=$COMPARE_KEEP
    rm -rf "$work/before" "$work/after"
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

# Builds every compared set with binary $1 into folder $2, each binary with the recipes and
# prompts bundled in it (written out by its own `init`): a checkout's `recipes/` folder would
# otherwise be read by both, and an older binary may not know a newer recipe's keys.
build_with() {
    local bin=$1 out=$2
    # One folder for both binaries, so that the manifests name the same one.
    rm -rf "$work/assets"
    "$bin" init "$work/assets" >/dev/null
    local own=(--recipes "$work/assets/recipes" --prompts "$work/assets/prompts")
    "$bin" build all "${own[@]}" --out "$out/bundled" --no-progress >/dev/null
    "$bin" build kre --domains ecqa-jsonl "${own[@]}" --out "$out/bundled" --no-progress >/dev/null
    if [ -d ../shared/data/ecare ]; then
        "$bin" build kre --domains ecare,ecare-tasks,cose,squad,musique --raw ../shared/data \
            "${own[@]}" --out "$out/shared" --no-progress >/dev/null
    fi
}

if [ -d "$before" ]; then
    "$after" build all --out "$work/after" --no-progress >/dev/null
    left=$before
    right=$work/after
else
    [ -x "$before" ] || { echo "BEFORE must be a folder or an executable: $before" >&2; exit 2; }
    build_with "$before" "$work/before"
    build_with "$after" "$work/after"
    left=$work/before
    right=$work/after
fi

rm -rf "$work/assets"
files=$(find "$right" -type f ! -name runs.jsonl | wc -l)
rows=$(find "$right" -name '*.jsonl' ! -name runs.jsonl ! -name rejects.jsonl -exec cat {} + | wc -l)
if diff -r -x runs.jsonl "$left" "$right"; then
    echo "identical: $files files ($rows JSONL rows) compared, runs.jsonl left out"
else
    echo "DIFFERENT (see above)"
    exit 1
fi
