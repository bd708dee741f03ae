"""``bench_signals.py --level 3``: level 3 (``ubpe.compress(level=3)``) as a ubpe row, and the two
compressors it is measured against, paq8px -8 and Sac, as peers beside the standard codecs.

The peers run through ``_level3_peers`` (how each is fed, the cache of their sizes keyed by the
bytes they were fed: ``results/level3-peers.json`` and ``results/level3-peers-sac.json``), Sac
at ``--best`` on the audio and ``--normal`` elsewhere (as ``bench_level3.py``). A peer whose
program is missing (``$UBPE_PAQ8PX`` / ``$UBPE_SAC``, else on PATH) is read from the cache, and
skipped with a message for a data set where the cache lacks one of its recordings; so is a
data set that a peer cannot take (Sac: values wider than 16 bits) and the lossy float-step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import _level3_peers as peers
from _measure import RESULTS

ROW = ("ubpe L3", {"level": 3})
PEERS = ("paq8px-8", "sac")
CACHE = RESULTS / "level3-peers.json"
CACHE_EXTRA = (RESULTS / "level3-peers-sac.json",)
SAC_BEST = {"audio-each"}  #: data sets on which Sac runs --best (else --normal)


class Peers:
    """paq8px and Sac for bench_signals: ``sizes(name, inputs, rate)`` -> {peer: codec row}."""

    def __init__(self, cached_only: bool = False, cache: Path = CACHE) -> None:
        self.cache = peers.Cache(cache, False, tuple(p for p in CACHE_EXTRA if p.exists()))
        self.exes = {"paq8px-8": peers.binary("paq8px"), "sac": peers.binary("sac")}
        if cached_only:
            self.exes = dict.fromkeys(self.exes)
        self.notes: list[str] = []
        for name, exe in self.exes.items():
            if exe is None:
                self.notes.append(f"note: {name} not run ({'--cached-peers' if cached_only else 'no binary: $UBPE_'}"
                                  f"{'' if cached_only else name.split('-')[0].upper() + ' unset and not on PATH'});"
                                  " its sizes come from the cache where it holds them")

    def sizes(self, name: str, inputs: list, rate: float) -> dict:
        """{peer: dict(bytes, compress_s, decompress_s)} over every input of one data set (sizes
        and times summed); a peer missing for any input is left out with a printed message."""
        out = {}
        for peer in PEERS:
            rows = []
            for x in inputs:
                x = np.asarray(x)
                if peer == "sac":
                    got = peers.run_sac(self.exes[peer], x, rate, self.cache, name in SAC_BEST)
                else:
                    got = peers.run_paq8px(self.exes[peer], x, rate, self.cache)
                if not got:
                    why = ("values wider than 16 bits" if peer == "sac" and peers.as_pcm16(x)[0] is None
                           else "not in the cache and its program is not here")
                    print(f"note: {peer} skipped on {name}: {why}")
                    rows = None
                    break
                rows.append(got)
            if rows:
                out[peer] = dict(bytes=sum(r["bytes"] for r in rows),
                                 compress_s=sum(r["compress_s"] for r in rows),
                                 decompress_s=sum(r["decompress_s"] for r in rows),
                                 profile=rows[0]["profile"])
        return out
