"""A guard for same-bytes work on the exact-value contexts' coder (issue 29's encode floor,
benchmarks/results/level3-floor-2.md): ``level3.encode``'s payloads with ``xctx`` = 1 and 2 on
1, 2 and 4 channels of hourly readings, with and without the value model, must stay main's
(3bb1509) bytes and decode exactly. A kernel change that alters any of them changes the format."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from test_level3_v6 import hourly, params

from ubpe import level3

#: (case, bytes, the first 32 hex digits of the SHA-256 of ``level3.encode``'s payload) from main at
#: 3bb1509, before this change (/tmp/l3wx/golden.py, run in a detached worktree of main)
MAIN = (
    ("hourly2-x1", 1652, "b52612b1097affcd2f5b232de6545e17"),
    ("hourly2-x2", 1640, "b9abd6ba6a82975d59bee0cbcd194d05"),
    ("hourly1-x1-vmod", 965, "a9b89ead9abdaa57be3e25d5f71d2ed8"),
    ("hourly1-x2-vmod", 956, "d8b0c2986defe8799708205ad7cff238"),
    ("hourly4-x1", 3008, "804f008dc67aae14519620020d6fa9bc"),
    ("hourly4-x2", 3022, "e27cd8518571e7174afd28a025f666b6"),
)


def _case(name: str) -> tuple[np.ndarray, list[int]]:
    y = hourly(3000)
    xctx = 1 if "-x1" in name else 2
    change = {"vmod": 1} if name.endswith("vmod") else {}
    if name.startswith("hourly1"):
        x = y[:, :1].copy()
    elif name.startswith("hourly4"):
        x = np.ascontiguousarray(np.tile(y, (1, 2))) + np.arange(4, dtype=np.int16)
    else:
        x = y
    return x, params(x.shape[1], xctx=xctx, **change)


@pytest.mark.parametrize("name,size,digest", MAIN)
def test_payloads_are_mains(name, size, digest):
    """Both sets, 1, 2 and 4 channels, with the value model: main's bytes, decoded exactly."""
    x, prm = _case(name)
    data = level3.encode(x, params=prm, front=None)
    assert (len(data), hashlib.sha256(data).hexdigest()[:32]) == (size, digest)
    assert np.array_equal(level3.decode(data), x)
