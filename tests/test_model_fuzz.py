"""Structured fuzzing of model files: every field of the body, past the checksum.

Random byte flips of a model file almost never get past its SHA-256, so they leave the body
parser untested. Here each mutant is built field by field (alphabet kind and values, dtype, params,
n_units, every array field: truncated, extended, overwritten, words swapped, replaced by another
type; fields dropped or added) and packed as a body with a correct checksum. ``from_bytes`` may
raise only library errors; every model it accepts must decode, re-encode, re-serialise and
reload bit-exactly.
"""

import copy
import os
import warnings

import numpy as np
import pytest

import ubpe
from common import model_body, pack_model_file as pack
from ubpe import Alphabet, Tokenizer

#: Mutants per seed; the broad tier (UBPE_SLOW_TESTS=1) runs about 13 times more.
MUTANTS = int(os.environ.get("UBPE_MODEL_FUZZ", 20000 if os.environ.get("UBPE_SLOW_TESTS") == "1" else 1500))

DTYPES = ["|i1", "|u1", "<i2", ">i2", ">u4", "<i8", ">i8", "<u8", ">u8", "|b1", "<U1", "<U3", ">U2", "|O",
          "<f8", "|S3", "<M8[s]", "<m8", "|V4", "<c16", "<U", "x", "", "i1,i2", "(2,)i4", "U1000000000"]
ODD = [None, True, -1, 0, 1, 2**31 - 1, 2**31, 2**63 - 1, -(2**63), 2**64 - 1, 1.5, "a", b"", b"\0" * 8,
       [], {}, [1, 2], {"a": 1}]


def sources():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short corpora run out of pairs
        return [
            Tokenizer(4, 7, n_candidates=1).fit([0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2, 3, 3, 1, 0, 0, 1]),
            Tokenizer(None, 8, n_candidates=2, min_count=1).fit(np.array([1000, 2000, 3000, 1000, 2000] * 4)),
            Tokenizer(None, 8, n_candidates=2, min_count=1).fit("abracadabra abracadabra"),
            Tokenizer(None, 60).fit((np.arange(300) % 50).astype(">i4")),
            Tokenizer(None, 6, min_count=1).fit(np.array([0, 1, 1, 0, 1, 1, 0, 0, 0, 1] * 3, dtype=bool)),
            Tokenizer(None, 10, min_count=1).fit(np.array([2**64 - 1, 2**63, 5] * 6, dtype=np.uint64)),
            Tokenizer(None, 10, min_count=1).fit(np.array([-(2**63), 2**63 - 1, 0] * 6, dtype=">i8")),
            Tokenizer(Alphabet(["a", 1, b"b"]), 8, min_count=1).fit([["a", 1, b"b"] * 4]),
            Tokenizer(None, 20, mode="sequence").fit(np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5] * 8)),
            Tokenizer(None, 20).fit(np.cumsum(np.arange(200) % 7 - 3), predictor="delta1"),
        ]


class Mutator:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def raw(self, n):
        return self.rng.integers(0, 256, n, dtype=np.uint8).tobytes()

    def alphabet(self, a):
        r = int(self.rng.integers(7))
        if r == 0:
            return {"kind": "range", "size": self.pick([0, 1, 2, 3, 255, 2**24, 2**24 + 1, 2**31 - 1])}
        if r == 1:
            width = self.pick([1, 4, 8])
            return {"kind": "integers", "dtype": self.pick(["<i8", "<u8", ">i8", "<i4", "|u1", "<f8"]),
                    "values": self.raw(int(self.rng.integers(6)) * width)}
        if r == 2:  # small values, possibly unsorted or repeated
            return {"kind": "integers", "dtype": "<i8",
                    "values": self.rng.integers(-5, 5, int(self.rng.integers(6))).astype("<i8").tobytes()}
        if r == 3:
            return {"kind": "symbols", "values": [self.pick(ODD) for _ in range(int(self.rng.integers(5)))]}
        if r == 4:
            return {"kind": "symbols", "values": self.pick([["a", "a"], [1, "1"], ["", "a"], ["a\0", "b"]])}
        if r == 5 and isinstance(a, dict) and a:
            return dict(a, **{self.pick(sorted(a)): self.pick(ODD)})
        return self.pick(ODD)

    def array(self, raw):
        r = int(self.rng.integers(5))
        if r == 0 and raw:
            i = int(self.rng.integers(len(raw)))
            return raw[:i] + self.raw(1) + raw[i + 1:]
        if r == 1:
            return raw[: int(self.rng.integers(len(raw) + 1))]
        if r == 2:
            return raw + self.raw(self.pick([1, 4, 8, 16]))
        if r == 3 and len(raw) >= 8:
            words = [raw[i:i + 4] for i in range(0, len(raw) - len(raw) % 4, 4)]
            i, j = self.rng.integers(len(words), size=2)
            words[i], words[j] = words[j], words[i]
            return b"".join(words) + raw[len(words) * 4:]
        return self.pick(ODD)

    def fields(self, f):
        f = copy.deepcopy(f)
        for _ in range(int(self.rng.integers(1, 4))):
            key = self.pick(["alphabet", "dtype", "params", "n_units", "merges", "batches", "counts", "df",
                             "token_ids", "mode", "method", "front", "extra", "drop"])
            if key == "alphabet":
                f[key] = self.alphabet(f.get(key))
            elif key == "dtype":
                f[key] = self.pick(DTYPES) if self.rng.random() < 0.9 else self.pick(ODD)
            elif key == "params":
                p = dict(f[key]) if isinstance(f.get(key), dict) and f[key] else {"n_tokens": 1}
                p[self.pick(sorted(p))] = self.pick(ODD) if self.rng.random() < 0.5 else int(self.rng.integers(-2, 10**6))
                f[key] = p
            elif key == "n_units":
                f[key] = self.pick(ODD)
            elif key == "extra":
                f["zz"] = 1
            elif key == "drop":
                f.pop(self.pick(sorted(f)), None)
            elif key in ("mode", "method", "front"):  # the optional fields
                f[key] = self.pick(["classic", "sequence", "optimal", "bits", "replay", "delta1", "lpc",
                                    "lpc+adaptive", "none", "Delta1", *ODD])
            else:
                f[key] = self.array(f[key]) if isinstance(f.get(key), bytes) else self.pick(ODD)
        return f


def check_accepted(tok):
    values = tok.decode(np.arange(min(tok.vocab_size, 12)))
    assert values.dtype == tok.dtype
    again = tok.decode(tok.encode(values))
    assert again.dtype == tok.dtype
    if again.dtype == object:
        assert again.tolist() == values.tolist()
    else:
        assert np.array_equal(again, values)
    data = tok.to_bytes()
    again = Tokenizer.from_bytes(data)
    assert again.to_bytes() == data and again.digest == tok.digest


def test_packing_an_unmutated_model_reproduces_its_bytes():
    # the fuzz below builds bodies itself: it must build them as the writer does
    for tok in sources():
        assert pack(model_body(tok.to_bytes())) == tok.to_bytes()


@pytest.mark.parametrize("seed", [1, 2])
def test_structured_mutants_fail_only_with_library_errors_and_accepted_ones_work(seed):
    mutate = Mutator(20261123 + seed)
    bases = [model_body(t.to_bytes()) for t in sources()]
    accepted = refused = 0
    for i in range(MUTANTS):
        data = pack(mutate.fields(bases[i % len(bases)]))
        try:
            tok = Tokenizer.from_bytes(data)
        except (ubpe.CorruptDataError, ubpe.FormatVersionError):
            refused += 1
            continue
        accepted += 1
        check_accepted(tok)
    # both outcomes must be common, or the mutants exercise only one side of the parser
    assert accepted > MUTANTS // 30 and refused > MUTANTS // 2
