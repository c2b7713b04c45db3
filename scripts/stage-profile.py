#!/usr/bin/env python3
"""Attributes the CPU samples of a `perf record --call-graph dwarf` run of conflictbench to
the stages of a build (BENCHMARKS.md, "Where a build's time goes").

    perf script -i perf.data | python3 scripts/stage-profile.py

Each sample goes to the stage of the innermost frame of its call stack that names one (the
patterns below, first match from the leaf up): a SHA-256 inside the reader check counts as
`hash and lookup`, a malloc inside a validator as `validate`. Samples whose stack names no
stage are `other` (the runtime, start-up, the progress and logging code).
"""
import re
import sys

# (stage, pattern over a frame's symbol), tried in this order on each frame.
STAGES = [
    ("render", r"minijinja|cb_step::prompt::Prompt::render|render_str"),
    ("hash and lookup", r"cb_llm::request::cache_key|cb_llm::cache::Cache::get|cb_llm::lookup::|sha2::|rusqlite|sqlite3|cb_llm::Llm::cached|cb_llm::Llm::key"),
    ("validate", r"cb_quality::|cb_step::ask::checks|common_checks|::findings|validate|cb_steps::reasons"),
    ("read", r"cb_readers::|cb_engine::source::|cb_engine::inputs::"),
    ("join", r"cb_engine::join::"),
    ("write", r"cb_engine::output::|cb_engine::manifest|cb_engine::card|cb_engine::hub"),
    ("reader check", r"cb_steps::reader_check::|cb_step::choice::"),
    ("steps (rest)", r"cb_steps::|cb_step::ask::|cb_llm::Llm::complete|cb_engine::build::Runner::process"),
    ("engine (rest)", r"cb_engine::"),
]
COMPILED = [(name, re.compile(p)) for name, p in STAGES]


def stage_of(frames):
    for sym in frames:
        for name, rx in COMPILED:
            if rx.search(sym):
                return name
    return "other"


def samples(lines):
    frames = None
    for line in lines:
        if not line.strip():
            if frames is not None:
                yield frames
            frames = None
        elif line[0] not in " \t":
            frames = []
        elif frames is not None:
            parts = line.strip().split(" ", 1)
            if len(parts) == 2:
                frames.append(parts[1])
    if frames:
        yield frames


def main():
    counts = {}
    total = 0
    for frames in samples(sys.stdin):
        s = stage_of(frames)
        counts[s] = counts.get(s, 0) + 1
        total += 1
    if total == 0:
        sys.exit("no samples on stdin (perf script -i perf.data | ...)")
    print(f"| stage | samples | share |\n|---|---:|---:|")
    order = [n for n, _ in STAGES] + ["other"]
    for name in order:
        n = counts.get(name, 0)
        print(f"| {name} | {n} | {100 * n / total:.1f} % |")
    print(f"| all | {total} | 100 % |")


main()
