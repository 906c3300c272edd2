"""``morl-robot export RUN_DIR [--out policy.onnx]``: the newest readable checkpoint of a training
run as an ONNX policy (normaliser and action scaling in the graph, contract in the metadata);
prints where it went and what it is.  An ``--out`` that cannot be written (read-only folder, a
name too long, a file where a folder should be, disk full) or that is not a regular file is one
line naming it and the OS error, exit status 2; an existing file there is then left as it was."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from morl_robot.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a training run's newest checkpoint as an ONNX policy")
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="run directory of `morl-robot train --out DIR` (or a checkpoints folder or ckpt-*.pt file)")
    p.add_argument("--out", default=None, help="ONNX file to write (default RUN_DIR/policy.onnx)")
    p.add_argument("--json", action="store_true", help="print the written contract as JSON")
    p.add_argument("--force", action="store_true",
                   help="replace --out even if it holds a newer policy version of the run, or another run's policy")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from morl_robot.learning.run_lock import writing
    from morl_robot.serving.export import export_policy, load_run_policy
    from morl_robot.serving.runtime import OnnxPolicy

    run_dir = Path(args.run_dir)
    try:
        found = run_dir.exists()
    except OSError as exc:  # e.g. a name too long
        raise UsageError(f"RUN_DIR: '{run_dir}': {exc.strerror}") from None
    if not found:
        raise UsageError(f"RUN_DIR: '{run_dir}' does not exist")
    out = Path(args.out) if args.out else (run_dir if run_dir.is_dir() else run_dir.parent) / "policy.onnx"
    with writing(out):
        if out.is_dir():
            raise UsageError(f"--out: '{out}' is a directory; give a file name such as {out / 'policy.onnx'}")
        if out.exists() and not out.is_file():
            raise UsageError(f"--out: '{out}' exists and is not a regular file (a device, a pipe…); give a file name")
        exists = out.exists()
    t0 = time.perf_counter()
    path, policy, contract, normalizer = load_run_policy(run_dir)
    if exists and not args.force:
        _refuse_downgrade(out, contract, path)
    export_policy(policy, contract, out, normalizer=normalizer)  # a WriteError naming out if it cannot be written
    seconds = time.perf_counter() - t0
    OnnxPolicy.from_file(out, expected=contract)  # the file loads and runs as the server will load it
    with writing(out):
        size = out.stat().st_size
    if args.json:
        print(json.dumps({"path": str(out), "bytes": size, "seconds": round(seconds, 3),
                          "contract": contract.__dict__}, ensure_ascii=False))
    else:
        print(f"wrote {out} ({size / 1e3:.0f} kB, {seconds:.2f} s): {contract.summary()}")
    return 0


def _refuse_downgrade(out: Path, contract: Any, checkpoint: Path) -> None:
    """An existing policy file is replaced only by a policy of the same run that is at least as new:
    after a fallback from a corrupt newest checkpoint, exporting would otherwise overwrite the newest
    policy with an older one."""
    from morl_robot.serving.runtime import OnnxPolicy, PolicyLoadError

    try:
        existing = OnnxPolicy.from_file(out).contract
    except PolicyLoadError:
        return  # not a loadable policy: nothing of value to protect
    if existing.run_id and contract.run_id and existing.run_id != contract.run_id:
        raise UsageError(f"{out} holds a policy of another run ({existing.run_id}, version {existing.policy_version}); "
                         f"refusing to replace it with run {contract.run_id} (use --force or another --out)")
    if existing.policy_version > contract.policy_version:
        raise UsageError(f"{out} holds policy version {existing.policy_version}, newer than version "
                         f"{contract.policy_version} in {checkpoint} (the newest readable checkpoint); refusing to "
                         "replace a newer policy with an older one (use --force, or another --out)")
