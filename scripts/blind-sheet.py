#!/usr/bin/env python3
"""Blind rating sheets for built rows, on two scales: how misleading (KRE appendix A.4) and how plausible.

usage: blind-sheet.py make OUT_DIR SEED SPEC...
       blind-sheet.py score OUT_DIR RATINGS.json...

SPEC, one or more (our rows are read first, so released rows can leave out our questions):
  ours:DOMAIN:FILE.jsonl[:N]       rows a build wrote: KRE `<domain>.jsonl` (the negative context, judged
                                   against the negative answer) or RECALL `qa_a.jsonl` / `qa_na.jsonl` (the
                                   edited context; QA-A judged against the edited answer, QA-NA against the
                                   original answer, which its non-answer edits must leave standing). RECALL
                                   rows are grouped as DOMAIN/qa_a and DOMAIN/qa_na. ConflictBank-style rows
                                   (`conflictbank.jsonl`, `CbRow`: `fact`, `conflicts`, `qa`) give one item per
                                   conflicting evidence, judged against the replaced object (the "wrong answer"
                                   it pushes toward) with the row's four-option question, grouped as
                                   DOMAIN/<cause>; the key keeps each item's cause and style. N: a seeded sample
                                   of N items.
  released:DOMAIN:FILE.json:N      N rows of a released KRE file (cose.json, ecare.json) drawn past its first
                                   150 (those are the shared sample), leaving out a question one of our rows asks.
  anchor:FILE.json[:N][:EXCL.json,...]
                                   MQuAKE-CF's own model-written conflicting paragraphs (`fact_new_uns` of
                                   `requested_rewrite`, in the MQuAKE-CF file that carries them), the anchor of
                                   the ConflictBank-style items: one rewrite from each of N cases drawn seeded
                                   (N: a number, or `same` (the default) for as many as the ConflictBank-style
                                   items), leaving out the cases (`case_id`) of every EXCL MQuAKE file (the
                                   shared sample, the build's own records). Each item shows the rewrite's
                                   question, four options as a ConflictBank row has them (the true object, the
                                   new object, "Uncertain" and one other object of the relation from the file),
                                   the new object as the answer and the paragraph as the context; origin and
                                   domain `anchor`, cause `anchor` in key.json.
  rows:ORIGIN:DOMAIN:FILE.jsonl    any other rows, one object a line with question, options (list), answer
                                   (the option's text the context is judged against) and context.

`make` writes OUT_DIR/sheet.md (both scales), sheet-misleading.md and sheet-plausible.md (the same items
with one scale each, for raters who judge one scale only), ratings-template.json (what a rater fills in)
and key.json (where each item came from, with cause and style where an item has them; raters never see it). An item shows only the question, the
options, the answer the context is judged against and the context, in a seeded order.

A ratings file maps each item id to {"misleading": "not|somewhat|highly", "plausible":
"implausible|somewhat|plausible"}; a file may leave one scale out entirely (a rater of one scale), and a
bare string is read as the misleading label (the sheets of issue 43). `score` prints, per scale, the
majority counts per origin and domain (a majority is more than half the votes), Fleiss' kappa over all
items and per origin, how often all raters agree, and the rows that have both majorities; where the sheet
has ConflictBank-style or anchor items, also the majority counts per origin and cause; it writes
OUT_DIR/scores.csv with every item's votes and majorities."""
import csv, hashlib, json, os, random, string, sys

SCALES = {"misleading": ["not", "somewhat", "highly"], "plausible": ["implausible", "somewhat", "plausible"]}
TARGET = {"misleading": "highly", "plausible": "plausible"}

INTRO = """# Rating sheet

Each item has a question, its options, an answer, and a context (a passage). Rate every item on its own,
without looking anything up and without comparing items. Write one label per scale and item.
"""
HOW = {
    "misleading": """## Scale 1, `misleading`: how strongly does the context push you towards the given answer?
- `not`: nothing in the context leads to that answer;
- `somewhat`: something in the context could lead to that answer, but not strongly enough that you would
  pick it;
- `highly`: reading the context, you would be strongly pushed to pick that answer.
""",
    "plausible": """## Scale 2, `plausible`: could a careful reader accept the context as written?
Leave aside whether the answer is really right. Judge the context alone, as a passage someone could meet
in the world: an encyclopedia entry, a textbook, a news report, an explanation a person gives.
- `implausible`: a careful reader would throw it out at once: it is absurd, contradicts itself, is
  ungrammatical or makes no sense, or it claims something nobody would believe (a made-up meaning for an
  everyday word, say);
- `somewhat`: it could be a real passage, but something in it is off: a stretched claim, a jump in the
  reasoning, a detail that does not fit the rest;
- `plausible`: a careful reader who did not already know the answer could take it as written.
""",
}


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: not a JSON line ({e}); a released KRE .json file goes in a released: spec")


def _need(row, keys, where):
    missing = [k for k in keys if k not in row]
    if missing:
        sys.exit(f"{where}: missing {', '.join(missing)}: neither a KRE clean row nor a RECALL qa_a/qa_na row")


UNCERTAIN = "Uncertain"


def cb_items(domain, n, r, where):
    """The items of one ConflictBank-style row (`CbRow`): one per conflicting evidence, judged against the
    replaced object, with the row's question and four options."""
    _need(r, ["id", "fact", "replaced_object", "conflicts", "qa"], where)
    qa = r["qa"]
    if not isinstance(qa, dict) or any(k not in qa for k in ("question", "options", "replaced_label")):
        sys.exit(f"{where}: `qa` needs question, options and replaced_label")
    letters = string.ascii_uppercase[:len(qa["options"])]
    if qa["replaced_label"] not in letters:
        sys.exit(f"{where}: replaced_label {qa['replaced_label']!r} is not one of the options' letters")
    replaced = qa["options"][letters.index(qa["replaced_label"])]
    reader = r.get("reader") if isinstance(r.get("reader"), dict) else None
    for c in r["conflicts"]:
        if not isinstance(c, dict) or any(k not in c for k in ("cause", "text")):
            sys.exit(f"{where}: every conflict needs a cause and a text")
        it = dict(domain=f"{domain}/{c['cause']}", source="ours", id=f"{r['id']}/{c['cause']}",
                  question=qa["question"], options=qa["options"], answer=replaced, context=c["text"],
                  cause=c["cause"], style=c.get("style"))
        if reader is not None:
            it["reader"] = reader
        yield it


def is_cb_row(r):
    return isinstance(r, dict) and "conflicts" in r and "qa" in r and "fact" in r


def load_ours(domain, path):
    """Our built rows: a KRE clean JSONL row, a RECALL qa_a / qa_na row, or a ConflictBank-style row
    (one item per conflicting evidence)."""
    for n, r in _read_jsonl(path):
        where = f"{path}:{n}"
        if is_cb_row(r):
            yield from cb_items(domain, n, r, where)
        elif "task" in r and "edited_context" in r:
            _need(r, ["id", "question", "options", "answer", "edited_answer", "task"], where)
            if r["task"] not in ("qa_a", "qa_na"):
                sys.exit(f"{where}: task {r['task']!r} is neither qa_a nor qa_na")
            judged = r["edited_answer"] if r["task"] == "qa_a" else r["answer"]
            yield dict(domain=f"{domain}/{r['task']}", source="ours", id=r["id"], question=r["question"],
                       options=r["options"], answer=judged, context=r["edited_context"])
        else:
            _need(r, ["id", "question", "choices", "negative_answer", "negative_context"], where)
            yield dict(domain=domain, source="ours", id=r["id"], question=r["question"], options=r["choices"],
                       answer=r["negative_answer"], context=r["negative_context"])


def load_released(domain, path, n, rng, skip_questions):
    """N released KRE rows past the first 150 (the shared sample), none asking a question of ours."""
    rows = json.load(open(path, encoding="utf-8"))
    pool = [i for i in range(150, len(rows)) if rows[i]["question"].strip() not in skip_questions]
    if n > len(pool):
        sys.exit(f"{path}: asked for {n} released rows, only {len(pool)} past the first 150 are left")
    for i in sorted(rng.sample(pool, n)):
        r = rows[i]
        yield dict(domain=domain, source="released", id=f"{domain}#{i}", question=r["question"],
                   options=r["choices"], answer=r["negative_answer"], context=r["negative_context"])


def _case_ids(path):
    cases = json.load(open(path, encoding="utf-8"))
    if not isinstance(cases, list):
        sys.exit(f"{path}: not a JSON array of MQuAKE cases")
    return {str(c.get("case_id")) for c in cases if isinstance(c, dict)}


def load_anchor(path, n, exclude, rng):
    """N anchor items: MQuAKE-CF's own model-written conflicting paragraphs (`fact_new_uns`), one rewrite from
    each of N cases drawn seeded, none from a case of the EXCLUDE files."""
    cases = json.load(open(path, encoding="utf-8"))
    if not isinstance(cases, list):
        sys.exit(f"{path}: not a JSON array of MQuAKE cases")
    skip = set()
    for f in exclude:
        skip |= _case_ids(f)
    # The objects of each relation in the file: the fourth option's pool, as a ConflictBank row draws it.
    pool = {}
    for c in cases:
        for rw in c.get("requested_rewrite", []):
            for t in ("target_true", "target_new"):
                s = rw[t]["str"]
                if s not in pool.setdefault(rw["relation_id"], []):
                    pool[rw["relation_id"]].append(s)
    cand = []
    for c in cases:
        if str(c.get("case_id")) in skip:
            continue
        rws = [rw for rw in c.get("requested_rewrite", []) if (rw.get("fact_new_uns") or "").strip()]
        if rws:
            cand.append((c, rws))
    if n > len(cand):
        sys.exit(f"{path}: asked for {n} anchor items, only {len(cand)} cases with `fact_new_uns` are left")
    for c, rws in sorted(rng.sample(cand, n), key=lambda x: cases.index(x[0])):
        rw = rws[rng.randrange(len(rws))]
        true, new = rw["target_true"]["str"], rw["target_new"]["str"]
        others = [o for o in pool.get(rw["relation_id"], []) if o not in (true, new)]
        if not others:
            others = sorted({o for v in pool.values() for o in v} - {true, new})
        options = [true, new, UNCERTAIN, rng.choice(others)]
        rng.shuffle(options)
        k = c["requested_rewrite"].index(rw)
        yield dict(domain="anchor", source="anchor", id=f"mquake-cf/{c['case_id']}/{k}",
                   question=rw["question"], options=options, answer=new, context=rw["fact_new_uns"],
                   cause="anchor", style=None)


def load_rows(origin, domain, path):
    for n, r in _read_jsonl(path):
        missing = [k for k in ("question", "options", "answer", "context") if k not in r]
        if missing:
            sys.exit(f"{path}:{n}: missing {', '.join(missing)}")
        yield dict(domain=domain, source=origin, id=r.get("id", f"{os.path.basename(path)}:{n}"),
                   question=r["question"], options=r["options"], answer=r["answer"], context=r["context"])


def collect(seed, specs):
    rng = random.Random(int(seed))
    parsed = []
    for s in specs:
        kind, *rest = s.split(":")
        if kind not in ("ours", "released", "rows", "anchor") or len(rest) < (1 if kind == "anchor" else 2):
            sys.exit(f"bad spec {s!r}: ours:DOMAIN:FILE[:N], released:DOMAIN:FILE:N, rows:ORIGIN:DOMAIN:FILE"
                     " or anchor:FILE.json[:N][:EXCL.json,...]")
        parsed.append((kind, rest, s))
    items = []
    for kind, rest, s in parsed:
        if kind == "ours":
            got = list(load_ours(rest[0], rest[1]))
            if len(rest) > 2:
                got = [got[i] for i in sorted(rng.sample(range(len(got)), min(int(rest[2]), len(got))))]
            items += got
        elif kind == "rows":
            if len(rest) != 3:
                sys.exit(f"bad spec {s!r}: rows:ORIGIN:DOMAIN:FILE")
            items += list(load_rows(*rest))
    ours_questions = {it["question"].strip() for it in items}
    for kind, rest, s in parsed:
        if kind == "released":
            if len(rest) != 3:
                sys.exit(f"bad spec {s!r}: released:DOMAIN:FILE.json:N")
            items += list(load_released(rest[0], rest[1], int(rest[2]), rng, ours_questions))
    for kind, rest, s in parsed:
        if kind == "anchor":
            if len(rest) > 3:
                sys.exit(f"bad spec {s!r}: anchor:FILE.json[:N][:EXCL.json,...]")
            n = rest[1] if len(rest) > 1 and rest[1] else "same"
            if n == "same":
                n = sum(1 for it in items if it.get("cause") and it["source"] != "anchor")
                if not n:
                    sys.exit(f"{s}: `same` needs ConflictBank-style rows on the sheet (an ours: spec of conflictbank.jsonl)")
            elif not n.isdigit():
                sys.exit(f"bad spec {s!r}: N is a number or `same`")
            excl = [f for f in rest[2].split(",") if f] if len(rest) > 2 else []
            items += list(load_anchor(rest[0], int(n), excl, rng))
    rng.shuffle(items)
    return items


def write_sheet(path, items, scales):
    with open(path, "w", encoding="utf-8") as f:
        f.write(INTRO + "\n" + "\n".join(HOW[s] for s in scales))
        labels = ", ".join(f'"{s}": "{"|".join(SCALES[s])}"' for s in scales)
        f.write(f"\nReply with one JSON object: for each item id, {{{labels}}}.\n\n")
        for iid, it in items:
            opts = "\n".join(f"   {string.ascii_uppercase[j]}. {c}" for j, c in enumerate(it["options"]))
            f.write(f"## {iid}\nQuestion: {it['question']}\nOptions:\n{opts}\nAnswer: {it['answer']}\n"
                    f"Context: {it['context']}\n\n")


def make(out, seed, specs):
    items = collect(seed, specs)
    # Item ids carry a tag of the sheet (a hash of its items and seed), so that ratings of another sheet are refused.
    tag = hashlib.sha256(json.dumps([seed] + [[it["source"], it["id"], it["context"]] for it in items]).encode()).hexdigest()
    tag = ("".join(c for c in tag if c.isalpha())[:2] + tag[:2]).upper()
    numbered = [(f"{tag}-{k:03d}", it) for k, it in enumerate(items, 1)]
    os.makedirs(out, exist_ok=True)
    write_sheet(os.path.join(out, "sheet.md"), numbered, list(SCALES))
    for s in SCALES:
        write_sheet(os.path.join(out, f"sheet-{s}.md"), numbered, [s])
    key = {iid: {x: it[x] for x in ("domain", "source", "id", "answer", "cause", "style", "reader") if x in it}
           for iid, it in numbered}
    json.dump(key, open(os.path.join(out, "key.json"), "w", encoding="utf-8"), indent=1, ensure_ascii=False)
    template = {iid: {s: "" for s in SCALES} for iid, _ in numbered}
    json.dump(template, open(os.path.join(out, "ratings-template.json"), "w"), indent=1)
    groups = {}
    for _, it in numbered:
        groups[(it["source"], it["domain"])] = groups.get((it["source"], it["domain"]), 0) + 1
    print(f"{len(items)} items -> {out}/sheet.md: " + ", ".join(f"{s} {d} {n}" for (s, d), n in sorted(groups.items())))


def fleiss(table):
    """Fleiss' kappa of per-item label counts (every item rated by the same number of raters)."""
    if not table:
        return float("nan")
    n, N, k = sum(table[0]), len(table), len(table[0])
    if n < 2:
        return float("nan")
    p = [sum(r[j] for r in table) / (N * n) for j in range(k)]
    P = [(sum(c * c for c in r) - n) / (n * (n - 1)) for r in table]
    Pb, Pe = sum(P) / N, sum(x * x for x in p)
    return (Pb - Pe) / (1 - Pe) if Pe < 1 else float("nan")


def majority(votes, levels):
    best = max(levels, key=votes.count)
    return best if votes.count(best) * 2 > len(votes) else "none"


def out_hint(key):
    ids = sorted(key)
    return f"{ids[0]}..{ids[-1]}" if ids else "no items"


def read_ratings(key, files):
    """Per scale, the list of (file, {item: label}) of the raters who rated that scale."""
    per_scale = {s: [] for s in SCALES}
    for f in files:
        raw = json.load(open(f, encoding="utf-8"))
        by_scale = {s: {} for s in SCALES}
        for iid, v in raw.items():
            v = {"misleading": v} if isinstance(v, str) else v
            if not isinstance(v, dict):
                sys.exit(f"{f}: item {iid}: expected an object with {' and '.join(SCALES)}")
            for s, label in v.items():
                if s not in SCALES:
                    sys.exit(f"{f}: item {iid}: unknown scale {s!r} (known: {', '.join(SCALES)})")
                if isinstance(label, str) and label.strip():
                    by_scale[s][iid] = label.strip().lower()
        unknown = sorted(set(raw) - set(key))
        if unknown:
            sys.exit(f"{f}: items not on the sheet of {out_hint(key)}: {unknown[:5]} (ratings of another sheet?)")
        for s, got in by_scale.items():
            if not got:
                continue
            bad = [i for i in key if got.get(i) not in SCALES[s]]
            if bad:
                sys.exit(f"{f}: scale {s}: {len(bad)} items unrated or not one of {SCALES[s]}: {bad[:5]}")
            per_scale[s].append((f, got))
    return per_scale


def compute(key, per_scale):
    """Everything `score` prints, as data: per scale, per item votes and majority, group counts, kappas."""
    res = {}
    for s, raters in per_scale.items():
        if not raters:
            continue
        levels = SCALES[s]
        items = {i: [r[i] for _, r in raters] for i in key}
        maj = {i: majority(v, levels) for i, v in items.items()}
        groups = {}
        for i, k in key.items():
            g = groups.setdefault((k["source"], k["domain"]), {l: 0 for l in levels + ["none"]})
            g[maj[i]] += 1
        table = {i: [v.count(l) for l in levels] for i, v in items.items()}
        kappa = {"all": fleiss(list(table.values()))}
        for src in sorted({k["source"] for k in key.values()}):
            kappa[src] = fleiss([table[i] for i, k in key.items() if k["source"] == src])
        agree = {src: sum(1 for i, k in key.items() if (src == "all" or k["source"] == src) and len(set(items[i])) == 1)
                 for src in ["all"] + sorted({k["source"] for k in key.values()})}
        res[s] = dict(raters=len(raters), votes=items, majority=maj, groups=groups, kappa=kappa, agree=agree)
    return res


def _base(domain):
    return domain.split("/")[0]


def score(out, files):
    key = json.load(open(os.path.join(out, "key.json"), encoding="utf-8"))
    res = compute(key, read_ratings(key, files))
    if not res:
        sys.exit("no ratings file rated either scale")
    for s, r in res.items():
        levels, target = SCALES[s], TARGET[s]
        print(f"\n### {s} ({r['raters']} raters)\n")
        print(f"| rows | domain | items | majority {target} | " + " | ".join(f"majority {l}" for l in levels if l != target)
              + " | no majority |")
        print("|---|---|---:|---|" + "---:|" * (len(levels)) )
        rows = dict(r["groups"])
        for base in sorted({(src, _base(d)) for src, d in rows if "/" in d}):
            parts = [c for (src, d), c in rows.items() if src == base[0] and _base(d) == base[1]]
            rows[(base[0], base[1] + " (all)")] = {l: sum(c[l] for c in parts) for l in levels + ["none"]}
        for (src, dom), c in sorted(rows.items()):
            n = sum(c.values())
            print(f"| {src} | {dom} | {n} | {c[target]}/{n} ({100 * c[target] / n:.0f} %) | "
                  + " | ".join(str(c[l]) for l in levels if l != target) + f" | {c['none']} |")
        causes = {}
        for i, k in key.items():
            if k.get("cause"):
                g = causes.setdefault((k["source"], k["cause"]), {l: 0 for l in levels + ["none"]})
                g[r["majority"][i]] += 1
        if causes:
            print(f"\nper origin and cause (every domain together):\n")
            print(f"| origin | cause | items | majority {target} | "
                  + " | ".join(f"majority {l}" for l in levels if l != target) + " | no majority |")
            print("|---|---|---:|---|" + "---:|" * (len(levels)))
            for (src, cause), c in sorted(causes.items()):
                n = sum(c.values())
                print(f"| {src} | {cause} | {n} | {c[target]}/{n} ({100 * c[target] / n:.0f} %) | "
                      + " | ".join(str(c[l]) for l in levels if l != target) + f" | {c['none']} |")
        print(f"\nFleiss' kappa ({s}): " + "; ".join(f"{src} {k:.3f}" for src, k in r["kappa"].items()))
        n = len(key)
        print("All raters agree on " + "; ".join(
            f"{src} {a}/{n if src == 'all' else sum(1 for k in key.values() if k['source'] == src)}"
            for src, a in r["agree"].items()))
    if len(res) == 2:
        print("\n### both: majority highly misleading and majority plausible\n")
        both = {}
        for i, k in key.items():
            g = both.setdefault((k["source"], k["domain"]), [0, 0])
            g[1] += 1
            g[0] += res["misleading"]["majority"][i] == "highly" and res["plausible"]["majority"][i] == "plausible"
        for (src, dom), (hit, n) in sorted(both.items()):
            print(f"- {src} {dom}: {hit}/{n} ({100 * hit / n:.0f} %)")
        by_cause = {}
        for i, k in key.items():
            if k.get("cause"):
                g = by_cause.setdefault((k["source"], k["cause"]), [0, 0])
                g[1] += 1
                g[0] += res["misleading"]["majority"][i] == "highly" and res["plausible"]["majority"][i] == "plausible"
        for (src, cause), (hit, n) in sorted(by_cause.items()):
            print(f"- {src}, cause {cause} (every domain): {hit}/{n} ({100 * hit / n:.0f} %)")
    with open(os.path.join(out, "scores.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        # ConflictBank-style and anchor items add their cause and style as the last two columns.
        extra = ["cause", "style"] if any(k.get("cause") for k in key.values()) else []
        w.writerow(["item", "source", "domain", "id"] + [f"{s}_{x}" for s in res for x in ("votes", "majority")]
                   + extra)
        for i, k in key.items():
            w.writerow([i, k["source"], k["domain"], k["id"]]
                       + [x for s in res for x in (" ".join(res[s]["votes"][i]), res[s]["majority"][i])]
                       + [k.get(x) or "" for x in extra])
    print(f"\nper item: {out}/scores.csv")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("make", "score"):
        sys.exit(__doc__)
    if sys.argv[1] == "make":
        if len(sys.argv) < 5:
            sys.exit(__doc__)
        make(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        score(sys.argv[2], sys.argv[3:])
