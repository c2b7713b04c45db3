#!/usr/bin/env python3
"""Checks of scripts/blind-sheet.py, run by hand: python3 scripts/test_blind_sheet.py

The ratings below are made up; their majorities and Fleiss' kappas were computed by hand:

misleading, 3 raters (counts not/somewhat/highly):
  I001 H H H (0,0,3) -> highly      P_i = (9-3)/6       = 1
  I002 H H S (0,1,2) -> highly      P_i = (1+4-3)/6     = 1/3
  I003 S S N (1,2,0) -> somewhat    P_i = (1+4-3)/6     = 1/3
  I004 N H S (1,1,1) -> no majority P_i = (1+1+1-3)/6   = 0
  p = (2/12, 4/12, 6/12); P-bar = (5/3)/4 = 5/12; P_e = (4+16+36)/144 = 7/18
  kappa = (5/12 - 7/18) / (1 - 7/18) = (1/36) / (11/18) = 1/22 = 0.0455
plausible, 3 raters (counts implausible/somewhat/plausible):
  I001 P P P (0,0,3) -> plausible   1
  I002 P P P (0,0,3) -> plausible   1
  I003 I I I (3,0,0) -> implausible 1
  I004 S S P (0,2,1) -> somewhat    1/3
  p = (3/12, 2/12, 7/12); P-bar = (10/3)/4 = 5/6; P_e = (9+4+49)/144 = 31/72
  kappa = (5/6 - 31/72) / (1 - 31/72) = 29/41 = 0.7073
Origins: I001, I002 ours/cose; I003 released/cose; I004 ours/eventkg/qa_a. Both majorities (highly and
plausible): ours cose 2/2, released cose 0/1, ours eventkg/qa_a 0/1.
"""
import importlib.util, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "blind-sheet.py")
spec = importlib.util.spec_from_file_location("blind_sheet", SCRIPT)
bs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bs)

KEY = {"I001": {"domain": "cose", "source": "ours", "id": "a", "answer": "x"},
       "I002": {"domain": "cose", "source": "ours", "id": "b", "answer": "x"},
       "I003": {"domain": "cose", "source": "released", "id": "cose#200", "answer": "x"},
       "I004": {"domain": "eventkg/qa_a", "source": "ours", "id": "c", "answer": "x"}}
M = {"I001": "HHH", "I002": "HHS", "I003": "SSN", "I004": "NHS"}
P = {"I001": "PPP", "I002": "PPP", "I003": "III", "I004": "SSP"}
ML = {"N": "not", "S": "somewhat", "H": "highly"}
PL = {"I": "implausible", "S": "somewhat", "P": "plausible"}


def rater(k):
    return {i: {"misleading": ML[M[i][k]], "plausible": PL[P[i][k]]} for i in KEY}


def run(*args, ok=True):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    assert (p.returncode == 0) == ok, (p.returncode, p.stdout, p.stderr)
    return p.stdout + p.stderr


def test_compute_by_hand(tmp):
    files = []
    for k in range(3):
        files.append(os.path.join(tmp, f"r{k}.json"))
        json.dump(rater(k), open(files[-1], "w"))
    res = bs.compute(KEY, bs.read_ratings(KEY, files))
    m, p = res["misleading"], res["plausible"]
    assert m["majority"] == {"I001": "highly", "I002": "highly", "I003": "somewhat", "I004": "none"}, m["majority"]
    assert p["majority"] == {"I001": "plausible", "I002": "plausible", "I003": "implausible", "I004": "somewhat"}
    assert abs(m["kappa"]["all"] - 1 / 22) < 1e-12, m["kappa"]
    assert abs(p["kappa"]["all"] - 29 / 41) < 1e-12, p["kappa"]
    assert m["groups"][("ours", "cose")] == {"not": 0, "somewhat": 0, "highly": 2, "none": 0}
    assert m["groups"][("ours", "eventkg/qa_a")]["none"] == 1
    assert p["groups"][("released", "cose")]["implausible"] == 1
    assert m["agree"]["all"] == 1 and p["agree"]["all"] == 3, (m["agree"], p["agree"])
    # the printed report, from key.json on disk
    json.dump(KEY, open(os.path.join(tmp, "key.json"), "w"))
    out = run("score", tmp, *files)
    assert "| ours | cose | 2 | 2/2 (100 %) | 0 | 0 | 0 |" in out, out
    assert "| released | cose | 1 | 0/1 (0 %) | 1 | 0 | 0 |" in out, out
    assert "Fleiss' kappa (misleading): all 0.045" in out and "Fleiss' kappa (plausible): all 0.707" in out, out
    assert "| ours | eventkg (all) | 1 |" in out, out
    assert "- ours cose: 2/2 (100 %)" in out and "- released cose: 0/1 (0 %)" in out, out
    rows = open(os.path.join(tmp, "scores.csv")).read().splitlines()
    assert rows[4] == "I004,ours,eventkg/qa_a,c,not highly somewhat,none,somewhat somewhat plausible,somewhat", rows


def test_raters_of_one_scale(tmp):
    # three raters of A.4's scale only (the bare-string form of issue 43) and three of plausibility only
    files = []
    for k in range(3):
        files.append(os.path.join(tmp, f"m{k}.json"))
        json.dump({i: ML[M[i][k]] for i in KEY}, open(files[-1], "w"))
        files.append(os.path.join(tmp, f"p{k}.json"))
        json.dump({i: {"plausible": PL[P[i][k]]} for i in KEY}, open(files[-1], "w"))
    res = bs.compute(KEY, bs.read_ratings(KEY, files))
    assert res["misleading"]["raters"] == 3 and res["plausible"]["raters"] == 3
    assert abs(res["plausible"]["kappa"]["all"] - 29 / 41) < 1e-12


def test_majority_is_more_than_half(tmp):
    # with four raters a 2-2 split has no majority; 3 of 4 has one
    levels = bs.SCALES["misleading"]
    assert bs.majority(["highly", "highly", "somewhat", "somewhat"], levels) == "none"
    assert bs.majority(["highly", "highly", "highly", "somewhat"], levels) == "highly"


def test_incomplete_ratings_refused(tmp):
    json.dump(KEY, open(os.path.join(tmp, "key.json"), "w"))
    bad = rater(0)
    bad["I003"]["plausible"] = "believable"
    f = os.path.join(tmp, "bad.json")
    json.dump(bad, open(f, "w"))
    out = run("score", tmp, f, ok=False)
    assert "bad.json: scale plausible: 1 items unrated or not one of" in out and "I003" in out, out


def test_make(tmp):
    kre = os.path.join(tmp, "cose.jsonl")
    with open(kre, "w") as f:
        for q in ("Where is ice kept?", "What do bees make?"):
            f.write(json.dumps({"id": "kre-cose/" + q[:5], "question": q, "choices": ["a", "b", "c", "d", "e"],
                                "negative_answer": "c", "negative_context": "ctx " + q}) + "\n")
    recall = {}
    for task, edit in (("qa_a", "answer"), ("qa_na", "word")):
        recall[task] = os.path.join(tmp, f"{task}.jsonl")
        json.dump({"id": f"recall-eventkg/e1/{edit}", "task": task, "question": "When did it begin?",
                   "answer": "1805", "edited_answer": "1812", "options": ["1812", "1805"],
                   "context": "original", "edited_context": f"edited {task}"}, open(recall[task], "w"))
    released = os.path.join(tmp, "rel.json")
    rows = [{"question": f"Q{i}", "choices": ["x", "y"], "negative_answer": "y", "negative_context": f"rc{i}"}
            for i in range(152)]
    rows[150]["question"] = "What do bees make?"  # asks a question of ours: never drawn
    json.dump(rows, open(released, "w"))
    out_dir = os.path.join(tmp, "sheet")
    run("make", out_dir, "7", f"ours:cose:{kre}", f"ours:eventkg:{recall['qa_a']}", f"ours:eventkg:{recall['qa_na']}",
        f"released:cose:{released}:1")
    key = json.load(open(os.path.join(out_dir, "key.json")))
    by_id = {k["id"]: k for k in key.values()}
    assert len(key) == 5 and "cose#151" in by_id, by_id
    assert by_id["recall-eventkg/e1/answer"] == {"domain": "eventkg/qa_a", "source": "ours",
                                                 "id": "recall-eventkg/e1/answer", "answer": "1812"}
    assert by_id["recall-eventkg/e1/word"]["answer"] == "1805" and by_id["recall-eventkg/e1/word"]["domain"] == "eventkg/qa_na"
    sheet = open(os.path.join(out_dir, "sheet.md")).read()
    assert "`misleading`" in sheet and "`plausible`" in sheet and "Context: edited qa_na" in sheet
    assert "kre-cose" not in sheet and "released" not in sheet and "recall-eventkg" not in sheet  # blind
    one = open(os.path.join(out_dir, "sheet-plausible.md")).read()
    assert "`misleading`" not in one and "`plausible`" in one
    assert json.load(open(os.path.join(out_dir, "ratings-template.json"))).keys() == key.keys()
    # ratings of another sheet (other rows or another seed: other item ids) are refused
    other = os.path.join(tmp, "other")
    run("make", other, "8", f"ours:cose:{kre}", f"released:cose:{released}:1")
    key2 = json.load(open(os.path.join(other, "key.json")))
    assert not set(key2) & set(key), (sorted(key), sorted(key2))
    f = os.path.join(tmp, "other-ratings.json")
    json.dump({i: {"misleading": "highly", "plausible": "plausible"} for i in key2}, open(f, "w"))
    out = run("score", out_dir, f, ok=False)
    assert "items not on the sheet" in out, out
    # asking for more released rows than are left past the first 150 is refused
    out = run("make", out_dir, "7", f"ours:cose:{kre}", f"released:cose:{released}:2", ok=False)
    assert "only 1 past the first 150" in out, out


if __name__ == "__main__":
    tests = [v for k, v in list(globals().items()) if k.startswith("test_")]
    for t in tests:
        with tempfile.TemporaryDirectory() as tmp:
            t(tmp)
        print("ok", t.__name__)
    print(f"{len(tests)} passed")
