#!/usr/bin/env python3
"""Mix built KRE rows with released KRE rows into one blind rating sheet (A.4's scale).
usage: blind_sheet.py make OUT_DIR SEED ours:DOMAIN:FILE.jsonl... released:DOMAIN:FILE.json:N...
       blind_sheet.py score OUT_DIR RATINGS.json...
The sheet (sheet.md) shows per item: question, options, the answer the context is judged against,
the context. The key (key.json) says where each item came from; raters never see it."""
import json, random, sys, os, string
from itertools import combinations

LEVELS = ["not", "somewhat", "highly"]

def load_ours(domain, path):
    for line in open(path):
        r = json.loads(line)
        yield dict(domain=domain, source="ours", id=r["id"], question=r["question"], choices=r["choices"],
                   negative_answer=r["negative_answer"], context=r["negative_context"])

def load_released(domain, path, n, rng):
    rows = json.load(open(path))
    for i in sorted(rng.sample(range(len(rows)), n)):
        r = rows[i]
        yield dict(domain=domain, source="released", id=f"{domain}#{i}", question=r["question"], choices=r["choices"],
                   negative_answer=r["negative_answer"], context=r["negative_context"])

def make(out, seed, specs):
    rng = random.Random(int(seed)); items = []
    for s in specs:
        kind, domain, path, *rest = s.split(":")
        items += list(load_ours(domain, path)) if kind == "ours" else list(load_released(domain, path, int(rest[0]), rng))
    rng.shuffle(items)
    os.makedirs(out, exist_ok=True); key = {}
    with open(os.path.join(out, "sheet.md"), "w") as f:
        f.write("# Rating sheet\n\nFor each item: how much does the context lead one to choose the given answer?\n"
                "Answer `not` (the context does not lead to the answer), `somewhat` (it has elements that could lead to it, "
                "but not definitively or strongly enough), or `highly` (it strongly leads you to choose that answer).\n\n")
        for k, it in enumerate(items, 1):
            iid = f"I{k:03d}"; key[iid] = {x: it[x] for x in ("domain", "source", "id")}
            opts = "\n".join(f"   {string.ascii_uppercase[j]}. {c}" for j, c in enumerate(it["choices"]))
            f.write(f"## {iid}\nQuestion: {it['question']}\nOptions:\n{opts}\nAnswer: {it['negative_answer']}\n"
                    f"Context: {it['context']}\n\n")
    json.dump(key, open(os.path.join(out, "key.json"), "w"), indent=1)
    print(f"{len(items)} items -> {out}/sheet.md")

def fleiss(table):
    # table: list of per-item counts over LEVELS (same number of raters per item)
    n = sum(table[0]); N = len(table)
    p = [sum(r[j] for r in table) / (N * n) for j in range(len(LEVELS))]
    P = [(sum(c * c for c in r) - n) / (n * (n - 1)) for r in table]
    Pb = sum(P) / N; Pe = sum(x * x for x in p)
    return (Pb - Pe) / (1 - Pe) if Pe < 1 else float("nan")

def score(out, files):
    key = json.load(open(os.path.join(out, "key.json")))
    ratings = [json.load(open(f)) for f in files]
    for f, r in zip(files, ratings):
        missing = [i for i in key if r.get(i) not in LEVELS]
        if missing: sys.exit(f"{f}: {len(missing)} items unrated or not one of {LEVELS}: {missing[:5]}")
    groups = {}
    for iid, k in key.items():
        votes = [r[iid] for r in ratings]
        maj = max(LEVELS, key=votes.count) if max(votes.count(l) for l in LEVELS) * 2 > len(votes) else "none"
        groups.setdefault((k["source"], k["domain"]), []).append((iid, votes, maj))
    print("| rows | domain | items | majority highly | majority somewhat | majority not | no majority |")
    print("|---|---|---|---|---|---|---|")
    for (src, dom), its in sorted(groups.items()):
        c = {l: sum(1 for _, _, m in its if m == l) for l in LEVELS + ["none"]}
        n = len(its)
        print(f"| {src} | {dom} | {n} | {c['highly']}/{n} ({100*c['highly']/n:.0f} %) | {c['somewhat']} | {c['not']} | {c['none']} |")
    table = [[[r[i] for r in ratings].count(l) for l in LEVELS] for i in key]
    print(f"\nFleiss' kappa over {len(key)} items, {len(ratings)} raters: {fleiss(table):.3f}")
    for src in ("ours", "released"):
        t = [[[r[i] for r in ratings].count(l) for l in LEVELS] for i, k in key.items() if k["source"] == src]
        if t:
            same = sum(1 for c in t if max(c) == len(ratings))
            print(f"  {src}: {fleiss(t):.3f} over {len(t)} items; all raters agree on {same}")
    agree = sum(1 for i in key if len({r[i] for r in ratings}) == 1)
    print(f"All raters agree on {agree}/{len(key)} items ({100*agree/len(key):.1f} %)")

if __name__ == "__main__":
    if sys.argv[1] == "make": make(sys.argv[2], sys.argv[3], sys.argv[4:])
    else: score(sys.argv[2], sys.argv[3:])
