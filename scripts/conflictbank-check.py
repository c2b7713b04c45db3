#!/usr/bin/env python3
"""Runs ConflictBank's own inference.py and evaluate.py on what `conflictbench export
conflictbank` writes, and compares evaluate.py's figures with `conflictbench eval
conflictbank-predictions` on the same prediction files.

    scripts/conflictbank-check.py CONFLICTBANK_DIR [--rows N] [--binary PATH]

CONFLICTBANK_DIR is a checkout of zhaochen0110/conflictbank (its inference.py and
evaluate.py are run as they are, never copied). No GPU and no model: the modules
inference.py imports for the model (torch, transformers, vllm, tqdm) are replaced by small
stand-ins, a deterministic "model" that reads the prompt and gives the four letters'
log-probabilities (it prefers the option the last evidence names, else the fact's object, and
sometimes the uncertain option), and evaluate.py's table writers (pandas, openpyxl) are not
needed because its `process_json_file` is called directly, with the memorization ratio taken
as its `process_directory` takes it. NumPy must be installed (evaluate.py's rounding and sums).

Writes N synthetic ConflictBank-style rows (default 300), exports them, runs inference.py on
the export, scores every setting with both tools, prints the two tables and exits 0 when every
figure is equal, 1 otherwise, 2 on a usage error.
"""

import argparse
import hashlib
import importlib.util
import json
import math
import os
import re
import runpy
import subprocess
import sys
import tempfile
import types


def rows(n):
    """N rows of cb_model::conflictbank::CbRow, the true option at a moving letter."""
    out = []
    for i in range(n):
        obj, rep = f"Object {i}", f"Replaced {i}"
        options = [obj, rep, "Uncertain", f"Other {i}"]
        k = (i * 7) % 4
        options = options[k:] + options[:k]
        letter = lambda t: "ABCD"[options.index(t)]
        ev = lambda cause, extra: dict(
            {"cause": cause, "claim": f"Subject {i} has {rep}.",
             "text": f"A {cause} report says that Subject {i} has {rep}.", "style": "news"}, **extra)
        out.append({
            "id": f"f{i}",
            "fact": {"subject": f"Subject {i}", "subject_id": f"Q{i + 1}", "relation": "occupation",
                     "relation_id": "P106", "object": obj, "object_id": f"Q{i + 100000}"},
            "replaced_object": rep,
            "correct": {"claim": f"Subject {i} has {obj}.",
                        "text": f"An encyclopedia says that Subject {i} has {obj}.", "style": "wikipedia"},
            "conflicts": [ev("misinformation", {}), ev("temporal", {"time": "2031"}),
                          ev("semantic", {"description": "a namesake"})],
            "qa": {"question": f"What does Subject {i} have?", "options": options,
                   "true_label": letter(obj), "replaced_label": letter(rep),
                   "uncertain_label": letter("Uncertain")},
        })
    return out


def fake_logprobs(prompt):
    """The stand-in model: log-probabilities of A-D for a prompt, from its text alone."""
    options = dict(re.findall(r"^([ABCD])\. (.*)$", prompt, flags=re.M))
    evidence = re.findall(r"^Evidence[^:]*: (.*)$", prompt, flags=re.M)
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    noise = [((h >> (8 * j)) % 200) / 100.0 for j in range(4)]
    if evidence:
        named = [l for l, t in options.items() if t in evidence[-1]]
        # Some answers keep to memory in spite of the evidence.
        if (h >> 40) % 5 == 0:
            named = [l for l, t in options.items() if t.startswith("Object")]
        elif (h >> 44) % 7 == 0:
            named = [l for l, t in options.items() if t == "Uncertain"]
    else:
        named = [l for l, t in options.items() if t.startswith("Object")]
        if (h >> 40) % 6 == 0:
            named = [l for l, t in options.items() if t == "Uncertain"]
    pick = named[0] if named else "A"
    return {l: -3.0 + noise[j] + (3.5 if l == pick else 0.0) for j, l in enumerate("ABCD")}


def stand_ins():
    """Modules inference.py imports for the model, replaced."""
    import numpy as np

    class Tensor:
        def __init__(self, a):
            self.a = np.asarray(a, dtype=np.float32)

        def to(self, _dtype):
            return self

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.a

    def softmax(t, dim=0):
        e = np.exp(t.a - t.a.max())
        return Tensor(e / e.sum())

    torch = types.ModuleType("torch")
    torch.float32 = "float32"
    torch.tensor = Tensor
    torch.cuda = types.SimpleNamespace(device_count=lambda: 1)
    torch.nn = types.SimpleNamespace(functional=types.SimpleNamespace(softmax=softmax))

    class Tokenizer:
        def encode(self, text, add_special_tokens=False):
            return [ord(text[-1])]

    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda *a, **k: Tokenizer())

    class LLM:
        def __init__(self, **_):
            pass

        def generate(self, prompts, _params):
            outs = []
            for p in prompts:
                lp = {ord(l): types.SimpleNamespace(logprob=v) for l, v in fake_logprobs(p).items()}
                outs.append(types.SimpleNamespace(outputs=[types.SimpleNamespace(logprobs=[lp])]))
            return outs

    vllm = types.ModuleType("vllm")
    vllm.LLM = LLM
    vllm.SamplingParams = lambda **k: k
    tqdm = types.ModuleType("tqdm")
    tqdm.tqdm = lambda it, **k: it
    return {"torch": torch, "transformers": transformers, "vllm": vllm, "tqdm": tqdm}


def their_figures(cb_dir, pred_dir):
    """evaluate.py's process_json_file on every file, the ratio as process_directory takes it."""
    for name in ["pandas", "openpyxl", "openpyxl.styles"]:
        mod = types.ModuleType(name)
        mod.Workbook = mod.Alignment = object
        sys.modules.setdefault(name, mod)
    spec = importlib.util.spec_from_file_location("cb_evaluate", os.path.join(cb_dir, "evaluate.py"))
    ev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ev)
    out = {}
    for f in sorted(os.listdir(pred_dir)):
        if not f.endswith(".json"):
            continue
        ca, ra, ua, ent = ev.process_json_file(os.path.join(pred_dir, f), pred_dir)
        mr = ca / (ca + ra) if (ca + ra) != 0 else 0
        out[f[:-5]] = {"correct_accuracy": ca, "replaced_accuracy": ra, "uncertain_accuracy": ua,
                       "memorization_ratio": round(mr * 100, 2), "average_entropy": float(ent)}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("conflictbank_dir")
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--binary", default="target/debug/conflictbench")
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.conflictbank_dir, "inference.py")) or a.rows < 1:
        print("usage: scripts/conflictbank-check.py CONFLICTBANK_DIR [--rows N>=1]", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="cb-check-")
    dom = os.path.join(work, "build", "synthetic")
    os.makedirs(dom)
    with open(os.path.join(dom, "conflictbank.jsonl"), "w") as f:
        for r in rows(a.rows):
            f.write(json.dumps(r) + "\n")
    subprocess.run([a.binary, "export", "conflictbank", os.path.join(work, "build"),
                    os.path.join(work, "input")], check=True, stdout=subprocess.DEVNULL)
    sys.modules.update(stand_ins())
    sys.argv = ["inference.py", "--model_path", "stand-in", "--input_dir",
                os.path.join(work, "input", "synthetic"), "--out_dir", os.path.join(work, "output")]
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            runpy.run_path(os.path.join(a.conflictbank_dir, "inference.py"), run_name="__main__")
            theirs = their_figures(a.conflictbank_dir, os.path.join(work, "output", "stand-in"))
        finally:
            sys.stdout = stdout
    ours_file = os.path.join(work, "ours.json")
    subprocess.run([a.binary, "eval", "conflictbank-predictions", os.path.join(work, "output", "stand-in"),
                    "--json", ours_file], check=True, stdout=subprocess.DEVNULL)
    ours = json.load(open(ours_file))["settings"]
    differ = 0
    keys = ["correct_accuracy", "replaced_accuracy", "uncertain_accuracy", "memorization_ratio", "average_entropy"]
    print("setting | evaluate.py (CA RA UA MR H) | conflictbench")
    for s in sorted(theirs):
        t = [theirs[s][k] for k in keys]
        o = [ours[s][k] for k in keys]
        same = all(math.isclose(x, y, abs_tol=0) for x, y in zip(t, o))
        differ += not same
        print(f"{s} | {t} | {o}{'' if same else '   DIFFERENT'}")
    print(f"{len(theirs)} settings, {len(theirs) * 5} figures, {differ} settings differ; files in {work}")
    return 1 if differ or not theirs else 0


if __name__ == "__main__":
    sys.exit(main())
