#!/usr/bin/env python3
"""Ask the reader's question two ways on released KRE rows, for readers answering by hand.
usage: reader-variants.py make OUT SEED PROMPT_FILE KRE_INSTRUCTION_FILE RELEASED.json:N...
       reader-variants.py score OUT
`make` writes OUT/P/questions.md (the system line of PROMPT_FILE, this project's reader question) and
OUT/K/questions.md (a KRE evaluation instruction without hint), the same items in the same order: for N
seeded rows of each released file (past its first 150, the shared sample), the negative context and the
golden context, each with the row's question and choices. A reader that sees only one folder writes
OUT/<P|K>/answers.json ({"Q001": "A", ...}); `score` counts, per variant and file, how often the negative
context led to the negative answer and the golden context to the golden one."""
import json, os, random, string, sys

def make(out, seed, prompt_file, kre_file, specs):
    rng = random.Random(int(seed))
    p_sys = open(prompt_file).read().split("=== user ===")[0].replace("=== system ===", "").strip()
    k_sys = open(kre_file).read().strip().replace('\\"', '"')
    items = []
    for spec in specs:
        path, n = spec.rsplit(":", 1)
        name = os.path.basename(path).split(".")[0]
        rows = json.load(open(path))
        for i in rng.sample(range(150, len(rows)), int(n)):
            r = rows[i]
            golden = r.get("golden_context", r.get(" golden_context"))  # the release spells the key with a space
            for kind, ctx in (("negative", r["negative_context"]), ("golden", golden)):
                items.append(dict(file=name, row=i, kind=kind, context=ctx, question=r["question"], choices=r["choices"],
                                  golden=r["answer"], negative=string.ascii_uppercase[r["choices"].index(r["negative_answer"])]))
    rng.shuffle(items)
    key = {}
    for variant, system in (("P", p_sys), ("K", k_sys)):
        os.makedirs(os.path.join(out, variant), exist_ok=True)
        with open(os.path.join(out, variant, "questions.md"), "w") as f:
            f.write(f"# Instructions (apply to every question below)\n\n{system}\n\n")
            for k, it in enumerate(items, 1):
                qid = f"Q{k:03d}"
                key[qid] = {x: it[x] for x in ("file", "row", "kind", "golden", "negative")}
                opts = "\n".join(f"{string.ascii_uppercase[j]}: {c}" for j, c in enumerate(it["choices"]))
                f.write(f"## {qid}\nPassage:\n<<<\n{it['context']}\n>>>\n\nQuestion: {it['question']}\n{opts}\n\n")
    json.dump(key, open(os.path.join(out, "key.json"), "w"), indent=1)
    print(f"{len(items)} questions in {out}/P and {out}/K")

def score(out):
    key = json.load(open(os.path.join(out, "key.json")))
    print("| instruction | file | negative context -> negative answer | golden context -> golden answer | None |")
    print("|---|---|---|---|---|")
    for v in ("P", "K"):
        a = json.load(open(os.path.join(out, v, "answers.json")))
        for name in sorted({k["file"] for k in key.values()}):
            neg = [q for q, k in key.items() if k["file"] == name and k["kind"] == "negative"]
            gold = [q for q, k in key.items() if k["file"] == name and k["kind"] == "golden"]
            n = sum(a.get(q) == key[q]["negative"] for q in neg)
            g = sum(a.get(q) == key[q]["golden"] for q in gold)
            none = sum(a.get(q) in (None, "None") for q in neg + gold)
            print(f"| {v} | {name} | {n}/{len(neg)} | {g}/{len(gold)} | {none} |")

if __name__ == "__main__":
    if sys.argv[1] == "make": make(*sys.argv[2:6], sys.argv[6:])
    else: score(sys.argv[2])
