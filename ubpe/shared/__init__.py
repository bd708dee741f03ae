"""Shared models for small windows: what a window would otherwise pay for alone, fitted once.

A fleet of sensors sends short windows (a thousand values). Compressed alone, each window pays
for its front-end parameters, its coder's tables and, above all, an adaptive coder that starts
cold. A :class:`SharedModel`, fitted on a few windows (:func:`fit_shared`), carries all three:

* up to :data:`DEFAULT_VARIANTS` *variants*, chosen by the size they give on held-out training
  windows among: a fixed integer linear predictor (none, delta 1, delta 2, or LPC coefficients
  fitted on the training windows), with or without the "adaptive" stage's LMS cascade after it;
  residual tokens over a range (``[lo, lo + size)``, a margin of half the training residuals'
  span each side) or, *dense*, over the distinct training residuals (when they are fewer than
  half their span: values on a grid); and the "cms2" coder's binary code (mode, center, code
  lengths) fitted on them. Each window takes the variant that codes it smallest;
* a *split* ("mult", for an ADC's noisy low digits ``x = base * q + offset + d``) when it pays
  on the training windows: split variants predict ``q`` and code the digits ``d`` in a stream of
  their own with a code fitted on the training digits;
* the *history*: the training windows' last values (at most ``history``), run through the
  variant's chain before the window, so that the LMS weights are warm and the history's
  residual tokens, the *primer*, warm the context mixer: a window is coded as the continuation
  of the training data.

Priming needs no change to the coder: the "cms2" kernel codes ``primer + window`` in one
stream; the bytes it emits while coding the primer depend on the primer alone (a carry-less
arithmetic coder never revises a byte it wrote), so the container stores only ``skip`` (how many
leading bytes equal those of ``primer + zeros``, which the reader recomputes) and the bytes
after them. The reader codes ``primer + zeros(n)`` (cached per window length), joins the two,
decodes ``primer + window`` and checks the primer came back. A window unlike the training
data's end (a drifting recording) may be coded *cold*: without the primer, when that is smaller.
A window's container (version 5) may also carry its own linear predictor, its own code (coded
cold) and its first residual held apart (the jump from the history, which the LMS cascade
would feed on); its fixed fields are 6 bytes (:mod:`.v5`).

:func:`compress_window` writes the *window container* (docs/format.md, "Window containers"),
or the ordinary container of ``ubpe.compress`` when that is not larger (never larger than
compressing alone); :func:`decompress_window` reads it. ``ubpe.compress(x, tokenizer=model)``
and ``ubpe.decompress(data, tokenizer=model)`` call them for a :class:`SharedModel`.

The package: :mod:`.model` (the model, its file, the constants), :mod:`.chain` (prediction),
:mod:`.coder` (the primed coder), :mod:`.fit` (fitting), :mod:`.encode` and :mod:`.decode` (window
containers written and read), :mod:`.own` and :mod:`.v5` (a window's own predictor and code;
version 5's fields).
"""

from .decode import decompress_window, describe_window, is_window  # noqa: F401  (re-exported, as the others)
from .encode import compress_window
from .fit import fit_inputs, fit_shared  # noqa: F401
from .model import (DEFAULT_PRIMER, DEFAULT_TRAINING_WINDOWS, DEFAULT_VARIANTS, DTYPES, MAX_HISTORY, MAX_SIZE,  # noqa: F401
                    MAX_VARIANTS, MODEL_MAGIC, MODEL_VERSION, REF_BYTES, REF_BYTES_V2, REF_BYTES_V3, WINDOW_LEAD,  # noqa: F401
                    WINDOW_MAGIC, WINDOW_VERSION, SharedModel, Variant, is_shared_model_file)  # noqa: F401

__all__ = ["SharedModel", "fit_shared", "compress_window", "decompress_window", "WINDOW_MAGIC", "MODEL_MAGIC",
           "DEFAULT_PRIMER", "DEFAULT_TRAINING_WINDOWS"]
