"""One measuring child of the checkout-against-checkout benchmarks (bench_level1_checkout.py,
bench_level2_checkout.py, bench_frontend_kernels.py): the script run again with ``--child`` in a
subprocess whose ``PYTHONPATH`` puts one checkout's ``ubpe`` first, so that two trees are timed
alternately in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess


def child_result(python: str, script: str, tree: str, args: list[str], cwd: str | None = None) -> dict:
    """``python script args`` with ``tree``'s ubpe imported (run in ``cwd``, default ``tree``):
    the JSON object on its last line of output. Raises RuntimeError when the child imported ubpe
    from anywhere else (its ``"file"`` field, ``ubpe.__file__``, not under ``tree``)."""
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([python, script, *args], cwd=cwd or tree, env=env, capture_output=True, text=True,
                         check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    if not res["file"].startswith(tree):
        raise RuntimeError(f"{tree}: imported ubpe from {res['file']}")
    return res
