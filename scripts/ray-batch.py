#!/usr/bin/env python3
"""Answers the waiting input files of a `conflictbench build --batch-dir DIR` folder with Ray Data.

    scripts/ray-batch.py DIR --base-url URL [--concurrency N]     # any OpenAI-compatible server
    scripts/ray-batch.py DIR --model-source MODEL [--replicas N]   # vLLM engines on Ray's GPUs

An input file `DIR/requests-NNNNN.jsonl` waits while `DIR/requests-NNNNN.output.jsonl` does not
exist. Each waiting file's requests go through one Ray Data pipeline; each output file is
written whole (a hidden temporary name first, renamed once complete), one line per request in
the input's order, in the format of vLLM's `run_batch` that the build imports (the one
`conflictbench batches run-dir` writes):

    {"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}

A request the server refused carries its status, no body and the server's error in `error`;
one that got no answer (connection, timeout, transient statuses after --max-retries) carries
no response and an `executor_error`. The build asks those again. Files that already have an
output file are skipped; `--model NAME` answers only the files whose requests name that model,
`--file NAME` only the named input files (one SLURM array task a file).

Transports:
- `--base-url`: Ray Data's `map_batches`, each batch's requests sent with aiohttp, the request
  body sent as the build wrote it (compact JSON, keys in their order: the same bytes as in the
  build's files), carried through Ray as a string. `ray.data.llm`'s HTTP request processor is not
  used for this path: its rows travel as Arrow records, so a field one request of a block lacks
  reaches the server as `null` in the others (and an integer beside such a gap as a float:
  `"max_tokens": 5.0`), and two requests' JSON schemas become one holding the properties of both
  (the other's as `null`: not a valid schema); it keeps
  only `response.json()` (no status code: a refusal looks like an answer, a non-JSON error body
  fails the whole dataset), and a request still failing after its retries fails the dataset.
- `--model-source`: `ray.data.llm`'s vLLM engine processor (needs GPUs and `ray[llm]`). The
  answer is recorded under the model the request names (vLLM's `--served-model-name`), or
  `--served-model-name`; `finish_reason` is "length" when the answer used all of `max_tokens`.

The statuses retried, what counts as a refused `response_format`, which requests the endpoint
left unanswered and the output line's ids are read from `executor-rules.json` beside this script
(the file the build's transports compile in): keep the two together.

Every argument and every waiting input file is checked before Ray starts. An input file none of
whose requests got an answer from the endpoint (no response, a transient status after the
retries, credentials or model refused) is not written: run the script again once the endpoint
answers. A file with some answers is written; the build asks its unanswered requests again.

Exit codes: 0 every request of every selected file answered (or none waited), 1 requests left
unanswered by the endpoint (how many, and which endpoint, on stderr) or a file that could not be
answered (its output file is not written, run again), 2 bad arguments, a missing package or a
malformed input file (named with its line).
"""

import argparse
import asyncio
import json
import math
import os
import re
import sys
import time

INPUT = re.compile(r"^requests-(\d+)\.jsonl$")
RULES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "executor-rules.json")


def load_rules(path=RULES_FILE):
    """The rules shared with the build (retries, refusals, unanswered, output ids); without
    them the script cannot run (exit 2)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(
            f"ray-batch: cannot read {path} ({e}): keep the repository's "
            "scripts/executor-rules.json beside this script",
            file=sys.stderr,
        )
        sys.exit(2)


RULES = load_rules()


def retried(status):
    """Whether a status is worth another attempt (the shared rule)."""
    r = RULES["retry"]
    return status >= r["from_status"] or status in r["statuses"]


def endpoint_failed(status, text):
    """Whether an answer with this status (0: none) and body was left unanswered by the
    endpoint; a refused `response_format` is an answer."""
    if status == 0:
        return True
    failed = retried(status) or status in RULES["endpoint_failure"]["statuses"]
    return failed and not refuses_form(status, text)


class InputError(Exception):
    """A malformed input file: the message names the file and line."""


def say(msg):
    print(f"ray-batch: {msg}", file=sys.stderr, flush=True)


def output_path(path):
    """`requests-00007.jsonl` -> `requests-00007.output.jsonl`, as the build expects."""
    return path[: -len(".jsonl")] + ".output.jsonl"


def waiting_files(folder, names):
    """The input files of `folder` without an output file, in name order (or the `names`)."""
    found = sorted(n for n in os.listdir(folder) if INPUT.match(n))
    if names:
        unknown = [n for n in names if n not in found]
        if unknown:
            raise InputError(f"{folder}: no input file named {', '.join(unknown)}")
        found = [n for n in found if n in names]
    paths = [os.path.join(folder, n) for n in found]
    return [p for p in paths if not os.path.exists(output_path(p))]


def read_requests(path):
    """The requests of an input file, checked: [(custom_id, body text, body)], in order."""
    out, model, seen = [], None, set()
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            where = f"{path}:{n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{where}: not UTF-8 text (is this a batch input file?)") from None
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError as e:
                raise InputError(f"{where}: not JSON ({e})") from None
            if not isinstance(req, dict):
                raise InputError(f"{where}: not a JSON object")
            cid, body = req.get("custom_id"), req.get("body")
            if not isinstance(cid, str) or not cid:
                raise InputError(f"{where}: no custom_id")
            if cid in seen:
                raise InputError(f"{where}: custom_id {cid} appears twice")
            seen.add(cid)
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise InputError(f"{where}: the body is not a chat completion request")
            if not isinstance(body.get("model"), str):
                raise InputError(f"{where}: the body names no model")
            if model is None:
                model = body["model"]
            elif body["model"] != model:
                raise InputError(
                    f"{where}: asks model {body['model']}, the file's first request {model}"
                )
            # Compact, keys in order, UTF-8 as is: the bytes the build wrote; it travels
            # through Ray as a string, so Arrow never sees its fields.
            out.append((cid, json.dumps(body, ensure_ascii=False, separators=(",", ":")), body))
    return out, model


def result_line(file_id, n, cid, status, text):
    """One output line: `status` 200 with the answer's JSON text, another status with the
    server's error text, or 0 (no answer) with the executor's message."""
    fmt = RULES["output_line"]
    rid = fmt["id"].replace("{file}", file_id).replace("{n}", str(n))
    request_id = fmt["request_id"].replace("{id}", rid)
    if status == 200:
        body, error = json.loads(text), None
    elif status:
        try:
            body, error = None, json.loads(text)
        except ValueError:
            body, error = None, text
    else:
        body, error = None, {"code": fmt["no_answer_code"], "message": text}
    response = dict(zip(fmt["response_keys"], (status, request_id, body))) if status else None
    line = dict(zip(fmt["keys"], (rid, cid, response, error)))
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def write_whole(path, lines):
    """Writes the file under a hidden name in the same folder, then renames it."""
    folder, name = os.path.split(path)
    part = os.path.join(folder, f".{name}.{os.getpid()}.part")
    with open(part, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)


# ---- HTTP: Ray Data's map_batches, aiohttp inside each batch ---------------------------------


def refuses_form(status, text):
    """A refusal of the `response_format` form: an answer the build steps down on."""
    r = RULES["form_refusal"]
    return status not in r["never"] and r["mentions"] in text.lower()


async def _ask(session, url, body, opts):
    """One request, retried on transient failures: (status, text); status 0 = no answer."""
    import aiohttp

    headers = {"Content-Type": "application/json"}
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    attempt, last = 0, ""
    while True:
        wait = None
        try:
            async with session.post(url, data=body.encode("utf-8"), headers=headers) as resp:
                text = await resp.text()
                if resp.status == 200:
                    try:
                        json.loads(text)
                        return 200, text
                    except ValueError:
                        last = f"HTTP 200 with a body that is not JSON: {text[:200]!r}"
                elif retried(resp.status) and not refuses_form(resp.status, text):
                    last = f"HTTP {resp.status}: {text[:200]}"
                    after = resp.headers.get("Retry-After", "")
                    wait = float(after) if after.replace(".", "", 1).isdigit() else None
                else:
                    return resp.status, text
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if attempt >= opts["max_retries"]:
            return 0, f"no answer after {attempt + 1} attempts: {last}"
        attempt += 1
        await asyncio.sleep(wait if wait is not None else min(30.0, 0.5 * 2**attempt))


async def _ask_all(bodies, opts):
    import aiohttp

    url = opts["base_url"].rstrip("/") + "/chat/completions"
    gate = asyncio.Semaphore(opts["concurrency"])
    timeout = aiohttp.ClientTimeout(total=opts["timeout"])

    async def one(session, body):
        async with gate:
            return await _ask(session, url, body, opts)

    async with aiohttp.ClientSession(timeout=timeout) as session:
        return await asyncio.gather(*(one(session, b) for b in bodies))


def http_batch(batch, opts):
    """A Ray Data batch (columns file, line, custom_id, body) -> the same rows with status
    and text."""
    import numpy as np

    answers = asyncio.run(_ask_all([str(b) for b in batch["body"]], opts))
    return {
        "file": batch["file"],
        "line": batch["line"],
        "custom_id": batch["custom_id"],
        "status": np.array([s for s, _ in answers], dtype=np.int64),
        "text": np.array([t for _, t in answers], dtype=object),
    }


def http_pipeline(ds, args):
    opts = {
        "base_url": args.base_url,
        "concurrency": args.concurrency,
        "max_retries": args.max_retries,
        "timeout": args.timeout,
    }
    return ds.map_batches(
        http_batch,
        fn_kwargs={"opts": opts},
        batch_size=args.batch_size,
        concurrency=args.tasks,
        num_cpus=args.task_cpus,
    )


# ---- vLLM: ray.data.llm's engine processor --------------------------------------------------


def sampling_params(body, with_seed):
    """vLLM sampling parameters from a request body. Every row gets the same keys (rows travel
    as Arrow records, where a missing key becomes null in the others)."""
    fmt = body.get("response_format") or {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
    elif fmt.get("type") == "json_object":
        schema = fmt.get("schema")
    params = {
        "temperature": float(body.get("temperature", 1.0)),
        "top_p": float(body.get("top_p", 1.0)),
        "max_tokens": int(body.get("max_tokens", 1024)),
        # None, or one constraint with the other key null; the schema as text (vLLM takes a
        # JSON schema string, and a string survives Arrow where two schemas would be merged).
        "structured_outputs": None,
    }
    if fmt.get("type") in ("json_schema", "json_object"):
        params["structured_outputs"] = {
            "json": json.dumps(schema) if schema is not None else None,
            "json_object": True if schema is None else None,
        }
    if with_seed:
        params["seed"] = int(body["seed"])
    return params


def vllm_pipeline(ds, args, with_seed):
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    config = vLLMEngineProcessorConfig(
        model_source=args.model_source,
        engine_kwargs=json.loads(args.engine_kwargs),
        concurrency=args.replicas,
        batch_size=args.batch_size,
        should_continue_on_error=True,
    )
    served = args.served_model_name

    def pre(row):
        body = json.loads(row["body"])
        return {
            "file": row["file"],
            "line": row["line"],
            "custom_id": row["custom_id"],
            "model": served or body["model"],
            "max_tokens": int(body.get("max_tokens", 1024)),
            "messages": body["messages"],
            "sampling_params": sampling_params(body, with_seed),
        }

    def post(row):
        limit = int(row["max_tokens"])
        used, prompt = int(row["num_generated_tokens"]), int(row["num_input_tokens"])
        answer = {
            "id": f"{row['custom_id']}",
            "object": "chat.completion",
            "model": row["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": row["generated_text"]},
                    "finish_reason": "length" if used >= limit else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": used,
                "total_tokens": prompt + used,
            },
        }
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        keep = {k: row[k] for k in ("file", "line", "custom_id")}
        return {**keep, "status": 200, "text": text}

    processor = build_processor(config, preprocess=pre, postprocess=post)
    return processor(ds)


# ---- the folder -----------------------------------------------------------------------------


def select(args):
    """The files to answer: [(path, requests)]."""
    chosen = []
    for path in waiting_files(args.dir, args.file):
        requests, model = read_requests(path)
        if not requests:
            raise InputError(f"{path}: no requests")
        if args.model and model != args.model:
            say(f"{os.path.basename(path)}: model {model}, not {args.model}: left for another run")
            continue
        chosen.append((path, requests))
    return chosen


def dataset_of(files):
    import ray.data

    rows = [
        {"file": i, "line": n, "custom_id": cid, "body": text}
        for i, (_, requests) in enumerate(files)
        for n, (cid, text, _) in enumerate(requests)
    ]
    # A block per handful of rows, so that batches spread over the workers.
    return ray.data.from_items(rows, override_num_blocks=max(1, min(len(rows), 200)))


def collect(results, files):
    """Writes each file whole as soon as all its rows are back (unless the endpoint answered
    none of them); returns per-file (errors, unanswered) counts."""
    pending = {i: {} for i in range(len(files))}
    counts = [[0, 0] for _ in files]
    for row in results.iter_rows():
        i, n = int(row["file"]), int(row["line"])
        failure = row.get("__inference_error__") or ""
        if failure:
            status, text = 0, f"vLLM: {failure}"
        else:
            status, text = int(row["status"]), str(row["text"])
        counts[i][0] += status != 200
        counts[i][1] += status != 200 and endpoint_failed(status, text)
        got = pending[i]
        got[n] = result_line(stem(files[i][0]), n + 1, files[i][1][n][0], status, text)
        if len(got) == len(files[i][1]):
            finish_file(files[i][0], [got[k] for k in range(len(got))], counts[i])
            del pending[i]
    if pending:
        missing = ", ".join(os.path.basename(files[i][0]) for i in pending)
        raise RuntimeError(f"the pipeline ended without every answer of {missing}")
    return counts


def finish_file(path, lines, counts):
    """Writes the output file of `path`, unless none of its requests got an answer."""
    errors, unanswered = counts
    if unanswered == len(lines):
        say(f"{path}: none of {len(lines)} requests answered: no output file written")
        return
    out = output_path(path)
    write_whole(out, lines)
    say(f"wrote {out}: {len(lines)} lines, {errors} of them errors")


def stem(path):
    return os.path.basename(path)[: -len(".jsonl")]


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="ray-batch.py",
        description="Answer the waiting input files of a conflictbench --batch-dir folder "
        "with Ray Data.",
    )
    arg = p.add_argument
    arg("dir", help="the --batch-dir folder")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--base-url", help="an OpenAI-compatible server: http://HOST:PORT/v1")
    how.add_argument("--model-source", help="vLLM engines on Ray's GPUs: a HF model id or path")
    arg("--model", help="answer only the files whose requests name this model")
    arg("--file", action="append", help="only this input file (repeatable): requests-00003.jsonl")
    arg("--address", help="a Ray cluster to join (default: RAY_ADDRESS, else a local Ray)")
    arg("--num-cpus", type=int, help="CPUs of a local Ray (default: all)")
    arg("--batch-size", type=int, default=16, help="requests in a Ray Data batch (16)")
    arg("--concurrency", type=int, default=4, help="HTTP: requests in flight a batch (4)")
    arg("--tasks", type=int, help="HTTP: most batches at once (default: as CPUs allow)")
    arg("--task-cpus", type=float, default=0.25, help="HTTP: CPUs a batch task takes (0.25)")
    arg("--max-retries", type=int, default=5, help="HTTP: retries of a transient failure (5)")
    arg("--timeout", type=float, default=600.0, help="HTTP: seconds for one request (600)")
    arg("--replicas", type=int, default=1, help="vLLM: engine replicas (1)")
    arg("--engine-kwargs", default="{}", help="vLLM: engine arguments as a JSON object")
    arg("--served-model-name", help="vLLM: the model the answers name (default: the request's)")
    args = p.parse_args(argv)
    problem = check_args(args)
    if problem:
        p.error(problem)
    return args


def check_args(args):
    """What is wrong with the arguments (one sentence naming the flag), or None."""
    for name in ("batch_size", "concurrency", "replicas", "tasks", "num_cpus"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return f"--{name.replace('_', '-')} {value}: must be at least 1"
    if args.max_retries < 0:
        return f"--max-retries {args.max_retries}: must be 0 or more"
    for name in ("timeout", "task_cpus"):
        value = getattr(args, name)
        if not math.isfinite(value) or value <= 0:
            return f"--{name.replace('_', '-')} {value}: must be a positive number of " + (
                "seconds" if name == "timeout" else "CPUs"
            )
    if args.base_url is not None:
        problem = check_base_url(args.base_url)
        if problem:
            return problem
    if not os.path.isdir(args.dir):
        return f"{args.dir} is not a folder"
    try:
        kwargs = json.loads(args.engine_kwargs)
    except ValueError as e:
        return f"--engine-kwargs is not JSON: {e}"
    if not isinstance(kwargs, dict):
        return f"--engine-kwargs {args.engine_kwargs}: must be a JSON object of engine arguments"
    return None


def check_base_url(url):
    """A base URL must be an absolute http(s) URL with a host, as the build requires."""
    from urllib.parse import urlsplit

    hint = "write it as http://HOST:PORT/v1 (a local server) or https://... (a hosted API)"
    if "://" not in url:
        return f"--base-url {url!r} has no scheme: {hint}"
    try:
        parts = urlsplit(url.strip())
        parts.port  # a port that is not a number raises here
    except ValueError as e:
        return f"--base-url {url!r} is not a URL ({e}): {hint}"
    if parts.scheme not in ("http", "https"):
        return f"--base-url {url!r}: the scheme must be http:// or https://, not {parts.scheme}:"
    if not parts.hostname:
        return f"--base-url {url!r} has no host"
    return None


def missing_packages(args):
    """Imports what the chosen path needs before Ray starts; the error names the extra."""
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401

        if args.base_url:
            import aiohttp  # noqa: F401
        else:
            import ray.data.llm  # noqa: F401
            import vllm  # noqa: F401  (ray.data.llm imports it only when the engine starts)
    except ImportError as e:
        need = "'ray[data]' aiohttp" if args.base_url else "'ray[llm]'"
        path = "the HTTP path" if args.base_url else "the vLLM path (--model-source)"
        return f"{path} needs {need} in {sys.executable} ({e}): pip install {need}"
    return None


def main(argv):
    args = parse_args(argv)
    try:
        files = select(args)
    except (InputError, OSError, UnicodeDecodeError) as e:
        say(str(e))
        return 2
    if not files:
        which = f" for model {args.model}" if args.model else ""
        say(f"no input file waits in {args.dir}{which}")
        return 0
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report leaves the machine
    missing = missing_packages(args)
    if missing:
        say(missing)
        return 2
    import ray
    import ray.data
    started = time.monotonic()
    ray.init(
        address=args.address,
        num_cpus=args.num_cpus,
        include_dashboard=False,
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    total = sum(len(r) for _, r in files)
    how = f"HTTP {args.base_url}" if args.base_url else f"vLLM {args.model_source}"
    say(f"Ray {ray.__version__}: {total} requests in {len(files)} files through {how}")
    try:
        ds = dataset_of(files)
        if args.base_url:
            results = http_pipeline(ds, args)
        else:
            with_seed = all("seed" in body for _, r in files for _, _, body in r)
            results = vllm_pipeline(ds, args, with_seed)
        counts = collect(results, files)
    except ImportError as e:
        say(f"the vLLM path needs ray[llm] (vllm, transformers) beside Ray: {e}")
        return 2
    except Exception as e:  # the pipeline's own failure: nothing half written, run again
        say(f"stopped: {type(e).__name__}: {e}")
        return 1
    finally:
        ray.shutdown()
    errors, unanswered = sum(c[0] for c in counts), sum(c[1] for c in counts)
    say(
        f"answered {len(files)} files, {total} requests ({errors} errors) "
        f"in {time.monotonic() - started:.1f} s"
    )
    if unanswered:
        unwritten = sum(c[1] == len(r) for c, (_, r) in zip(counts, files))
        say(
            f"{unanswered} of {total} requests got no answer from {how} (no response, a transient "
            f"error after {args.max_retries} retries, or credentials or model refused); "
            f"{len(files) - unwritten} files written (the build asks their unanswered requests "
            f"again), {unwritten} with no answer at all left waiting for another run"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
