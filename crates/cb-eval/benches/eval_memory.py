#!/usr/bin/env python3
"""Peak memory of `conflictbench eval kre` at two benchmark sizes six times apart.

Writes two KRE files in the released layout (a JSON array), each made of copies of
`../shared/data/kre/cose.json` (150 rows) with every question made distinct, at `--small`
and `6 x --small` copies (default 40 and 240: 6,000 and 36,000 rows); serves a stand-in
model on loopback (an OpenAI-compatible `/v1/chat/completions` that answers an option letter
drawn from a hash of the request, so the memory split, few-shot examples and every figure
have work, and that keeps nothing per request); runs the binary under GNU time on each file
and prints rows, calls, wall time, the peak resident set ("Maximum resident set size") and
the ratio of the two peaks.

    python3 crates/cb-eval/benches/eval_memory.py [--bin target/debug/conflictbench]
        [--small 40] [--settings zero_shot,mixed] [--seeds 1] [--keep DIR]

Needs GNU time (`apt-get install -y time`).
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


class StandIn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    calls = 0
    lock = threading.Lock()

    def log_message(self, *_):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        with StandIn.lock:
            StandIn.calls += 1
        h = hashlib.sha256(body).digest()
        # Mostly a letter among the first three options, sometimes no answer at all.
        answer = "I am not sure." if h[1] % 10 == 0 else "ABC"[h[0] % 3]
        words = len(body) // 4
        self._send(200, {
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": words, "completion_tokens": 1, "total_tokens": words + 1},
        })


def write_copies(src, copies, path):
    rows = json.loads(Path(src).read_text(encoding="utf-8"))
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        first = True
        for k in range(copies):
            for r in rows:
                r = dict(r)
                r["question"] = f"(set {k}) {r['question']}"
                f.write(("" if first else ",\n") + json.dumps(r, ensure_ascii=False))
                first = False
        f.write("]\n")
    return copies * len(rows)


def peak_kb(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) if m else None


def run(binary, data, out, url, args):
    cmd = ["/usr/bin/time", "-v", str(binary), "eval", "kre", "--data", str(data),
           "--out", str(out), "--base-url", url, "--model", "m", "--no-progress",
           "--seeds", str(args.seeds), "--settings", args.settings,
           "--concurrency", str(args.concurrency)]
    before = StandIn.calls
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.time() - t
    if p.returncode != 0:
        sys.exit(f"eval failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return StandIn.calls - before, wall, peak_kb(p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "target/debug/conflictbench"))
    ap.add_argument("--small", type=int, default=40, help="copies in the small file")
    ap.add_argument("--settings", default="zero_shot,mixed")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--keep", help="keep the files under this folder")
    args = ap.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("GNU time is missing: apt-get install -y time")
    src = REPO.parent / "shared/data/kre/cose.json"
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="eval-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    results = []
    for copies in (args.small, 6 * args.small):
        data = work / f"copies{copies}" / "cose.json"
        data.parent.mkdir(parents=True, exist_ok=True)
        rows = write_copies(src, copies, data)
        out = work / f"copies{copies}" / "eval"
        shutil.rmtree(out, ignore_errors=True)
        calls, wall, kb = run(args.bin, data, out, url, args)
        size = data.stat().st_size / 1e6
        print(f"rows {rows:>7} ({size:.1f} MB)  calls {calls:>7}  wall {wall:7.1f} s  "
              f"peak RSS {kb / 1024:7.1f} MB", flush=True)
        results.append(kb)
    print(f"peak ratio (x6 rows): {results[1] / results[0]:.2f}")
    server.shutdown()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
