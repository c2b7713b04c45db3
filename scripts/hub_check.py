#!/usr/bin/env python3
"""Loads conflictbench builds with the Hugging Face `datasets` library, offline.

For every domain folder (`<out>/<benchmark>/<domain>/`) and every benchmark folder
(`<out>/<benchmark>/`) under the folders given: the card's metadata is read by
`huggingface_hub`, then `load_dataset(folder)` (the default config) and
`load_dataset(folder, config)` for every config of the card; each must load exactly one
split, the card's, with as many rows as the manifest says.

Not part of CI (which stays Rust-only). To check the builds of the Rust test `hub`:

    CONFLICTBENCH_KEEP_OUT=/tmp/hub-out cargo test -p conflictbench --test hub
    python -m pip install datasets
    python scripts/hub_check.py /tmp/hub-out/*

Exit status 1 when anything fails to load or a count differs.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets  # noqa: E402
from huggingface_hub import DatasetCard  # noqa: E402


def expected_rows(folder: Path) -> dict:
    """Config name -> rows, from the manifest(s): the folder's own, or its domains'."""
    own = folder / "manifest.json"
    if own.is_file():
        files = json.loads(own.read_text())["data_files"]
        return {f["config"]: f["rows"] for f in files if f["rows"] > 0}
    rows = {}
    for domain in sorted(p for p in folder.iterdir() if (p / "manifest.json").is_file()):
        for config, n in expected_rows(domain).items():
            name = domain.name if config == domain.name else f"{domain.name}_{config}"
            rows[name] = n
    return rows


def check(folder: Path, cache: str) -> list:
    """Loads every config of `folder`; returns the failures."""
    failures = []
    card = DatasetCard.load(folder / "README.md").data.to_dict()
    for field in ["pretty_name", "license", "language", "task_categories", "task_ids",
                  "size_categories", "source_datasets", "tags", "configs"]:
        if not card.get(field):
            failures.append(f"{folder}: no {field} in the card")
    want = expected_rows(folder)
    configs = card.get("configs", [])
    names = [c["config_name"] for c in configs]
    if sorted(names) != sorted(want):
        failures.append(f"{folder}: configs {names} but the manifests have {sorted(want)}")
    default = next((c["config_name"] for c in configs if c.get("default")), None)
    for name in [None] + names:
        config = next(c for c in configs if c["config_name"] == (name or default))
        split = config["data_files"][0]["split"]
        label = name or f"(default: {default})"
        try:
            ds = datasets.load_dataset(str(folder), name, cache_dir=cache)
        except Exception as e:  # report every failure, not only the first
            failures.append(f"{folder} {label}: {type(e).__name__}: {e}")
            continue
        got = {s: d.num_rows for s, d in ds.items()}
        n = want.get(config["config_name"])
        ok = got == {split: n}
        print(f"{'ok  ' if ok else 'FAIL'} {folder} {label}: {got}, manifest {split}={n}, "
              f"{len(ds[split].column_names) if split in ds else 0} columns")
        if not ok:
            failures.append(f"{folder} {label}: loaded {got}, manifest says {split}={n}")
    return failures


def main() -> int:
    roots = [Path(a) for a in sys.argv[1:]]
    if not roots:
        print(__doc__)
        return 2
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    folders = []
    for root in roots:
        for bench in sorted(p for p in root.iterdir() if (p / "README.md").is_file()):
            folders.append(bench)
            folders += sorted(p for p in bench.iterdir() if (p / "manifest.json").is_file())
    failures = []
    with tempfile.TemporaryDirectory() as cache:
        for f in folders:
            failures += check(f, cache)
    print(f"datasets {datasets.__version__}: {len(folders)} folders, {len(failures)} failures")
    for f in failures:
        print("  " + f)
    return 1 if failures or not folders else 0


if __name__ == "__main__":
    sys.exit(main())
