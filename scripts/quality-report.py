#!/usr/bin/env python3
"""Turns `conflictbench build` output folders into the tables of QUALITY.md.

Usage: scripts/quality-report.py LABEL=DIR [LABEL=DIR ...]
  e.g. scripts/quality-report.py on=/tmp/q-on off=/tmp/q-off

For each build folder (the `--out` of a build) and each domain under it, it reads
`manifest.json` (stage counts, reasons, rows, calls and token totals), `rejects.jsonl` (reason
and tries of each reject) and the rows' `lineage` (the try at which each model step was
accepted), and prints Markdown tables:
  1. per domain, the folders side by side: items in, rows out, calls and tokens per row;
  2. per domain and step: in -> out and the reject reasons;
  3. the tries after an unusable answer (a repair or a resample, as the recipe says): per
     step, rows whose lineage shows the step accepted at the first try and at each later
     one (rows a later try saved), and the step's rejects after more than one try.
Only the standard library is used.
"""

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROW_FILES = {"kre": None, "recall": ["qa_a.jsonl", "qa_na.jsonl", "text_generation.jsonl"]}


def jsonl(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def domains(root):
    for manifest in sorted(root.glob("*/*/manifest.json")):
        yield manifest.parent


def rows_of(d, m):
    files = ROW_FILES.get(m["benchmark"]) or [f"{m['domain']}.jsonl"]
    return [r for f in files for r in jsonl(d / f)]


def summarise(d):
    m = json.loads((d / "manifest.json").read_text())
    rows = rows_of(d, m)
    rejects = jsonl(d / "rejects.jsonl")
    # Lineage records every call; the accepted call of a step is its last attempt.
    last = defaultdict(dict)
    for r in rows:
        item = r.get("source_id", r["id"])
        for c in r.get("lineage", []):
            prev = last[item].get(c["step"], 0)
            last[item][c["step"]] = max(prev, c["attempt"])
    accepted_at = defaultdict(Counter)
    for item, steps in last.items():
        for step, att in steps.items():
            accepted_at[step][att] += 1
    rejected_after = Counter()
    for j in rejects:
        if j.get("attempts", 0) >= 2:
            rejected_after[(j["stage"], j["reason"])] += 1
    return {
        "bench": m["benchmark"],
        "domain": m["domain"],
        "in": m["stages"][0]["in"],
        "rows": m["rows"],
        "items_out": m["stages"][-1]["out"],
        "stages": m["stages"],
        "calls": m["llm"]["calls"],
        "tokens": m["llm"]["prompt_tokens"] + m["llm"]["completion_tokens"],
        "accepted_at": accepted_at,
        "rejected_after": rejected_after,
    }


def per_row(x, n):
    return "-" if n == 0 else f"{x / n:.1f}"


def main(args):
    builds = []
    for a in args:
        label, _, path = a.partition("=")
        builds.append((label, {(s["bench"], s["domain"]): s for s in map(summarise, domains(Path(path)))}))
    keys = sorted({k for _, b in builds for k in b})

    print("## Rows per domain\n")
    head = ["domain", "items in"]
    for label, _ in builds:
        head += [f"items out ({label})", f"rows ({label})", f"calls/item ({label})", f"tokens/item ({label})"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    totals = defaultdict(int)
    for k in keys:
        first = next(b[k] for _, b in builds if k in b)
        cells = [f"{k[0]}/{k[1]}", str(first["in"])]
        for label, b in builds:
            s = b.get(k)
            if s is None:
                cells += ["n/a"] * 4
                continue
            totals[label, "items"] += s["items_out"]
            totals[label, "rows"] += s["rows"]
            cells += [str(s["items_out"]), str(s["rows"]), per_row(s["calls"], s["items_out"]),
                      per_row(s["tokens"], s["items_out"])]
        print("| " + " | ".join(cells) + " |")
    cells = ["total", str(sum(next(b[k] for _, b in builds if k in b)["in"] for k in keys))]
    for label, _ in builds:
        cells += [str(totals[label, "items"]), str(totals[label, "rows"]), "", ""]
    print("| " + " | ".join(cells) + " |\n")

    print("## Steps: in -> out, rejects by reason\n")
    print("| domain | step | " + " | ".join(label for label, _ in builds) + " |")
    print("|---|---|" + "---|" * len(builds))
    for k in keys:
        names = [s["name"] for s in next(b[k] for _, b in builds if k in b)["stages"]]
        for name in names:
            cells = [f"{k[0]}/{k[1]}", name]
            for _, b in builds:
                s = b.get(k)
                st = next((x for x in s["stages"] if x["name"] == name), None) if s else None
                if st is None:
                    cells.append("n/a")
                    continue
                why = ", ".join(f"{r} {n}" for r, n in sorted(st["reasons"].items()))
                cells.append(f"{st['in']} -> {st['out']}" + (f" ({why})" if why else ""))
            print("| " + " | ".join(cells) + " |")
    print()

    print("## Tries after an unusable answer\n")
    print("Per model step: rows whose step was accepted at the first try, rows accepted at a later "
          "try (try number: rows; lost without the retries), and items rejected after more than "
          "one try, by reason.\n")
    print("| build | domain | step | accepted at try 1 | accepted later | rejected after retries |")
    print("|---|---|---|---|---|---|")
    grand = defaultdict(Counter)
    for label, b in builds:
        for k in keys:
            s = b.get(k)
            if s is None:
                continue
            steps = sorted(set(s["accepted_at"]) | {st for st, _ in s["rejected_after"]})
            for step in steps:
                at = s["accepted_at"].get(step, Counter())
                after = Counter({r: n for (st, r), n in s["rejected_after"].items() if st == step})
                later = sum(n for t, n in at.items() if t >= 2)
                grand[label, step]["first"] += at[1]
                grand[label, step]["later"] += later
                grand[label, step]["after"] += sum(after.values())
                tries = ", ".join(f"{t}: {n}" for t, n in sorted(at.items()) if t >= 2) or "0"
                why = ", ".join(f"{r} {n}" for r, n in sorted(after.items())) or "0"
                print(f"| {label} | {k[0]}/{k[1]} | {step} | {at[1]} | {tries} | {why} |")
    print("\n| build | step | accepted at try 1 | accepted later | rejected after retries |")
    print("|---|---|---|---|---|")
    for (label, step), c in sorted(grand.items()):
        print(f"| {label} | {step} | {c['first']} | {c['later']} | {c['after']} |")

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
