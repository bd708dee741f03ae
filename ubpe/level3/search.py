"""The level-3 encoder's parameter search over a whole recording (:mod:`ubpe.level3`, issue 29).

    greedy(size, start, evals, margin) -> (parameters by name, size)
    proxy_plan(frames, channels, settings) -> (proxy frames, evals, margin)
    budget_plan(frames, channels, settings, chains) -> proxy_plan's, the search's work bounded
    chain_part(frames, settings): the prefix's frames the chains with stages are compared on
    plan(y, settings, defaults) -> (start parameters, the move tried first)
    order_gain_db(y), hold_share(y), long_period(y, settings, span): the cheap statistics ``plan`` reads
    tonal(y, settings), tonal_stats(y), tonal_change(named, settings): the refined solve for tones
    dc_ratio(y), dc_change(named, y, settings): the least squares centred on the running mean
    dc_trial(named, y, settings): the same tried on a broadband, noise-like signal
    held_period(y, settings, span), held_lag(y, settings), held_cascade(named, lag, settings, peak),
    cascade_steps(named, settings): a held tone's period and the cascade fitted to it
    move_order(y, settings): the moves a search on the prefix tries first (``smooth_db`` its cue)
    code_classes_cue(values, bits): uneven residues mod 8 (version 9's code classes)

The search starts from ``plan``'s parameters: the defaults, with order 64 over a short window
where ``order_gain_db`` finds many resonances, and with ``Settings.level3_long_cascade`` (NLMS
stages of 512/256/32 taps, Sac's lengths, and its recent-past power ``powr = 1``) where
``long_period`` finds a sustained tone whose period is longer than the default first stage (256
taps): a stage must span the period to predict it, while percussive, noisy or short recordings
lose with long stages (their slower start), which is also why the prefix, mostly warm-up, cannot
tell the two cascades apart (tried as a move on it: the audio 0.018 % larger). Cue-decided, no
coding: on the 32 audio files it fires on klavichord-4 (-5.0 %) only (on cockchafer-gentleman-1
too below ``Settings.level3_period_frames`` = 8 192 frames: -0.15 % for 0.3 less speed), nowhere
else among the shared and held-out recordings searched here (results/level3-long-period.md).

A short recording is all warm-up: its parameters are measured on its beginning (the proxy: a
prefix, the whole recording when it is short; a sample from the middle would leave out the
warm-up where the parameters matter most) by coordinate descent over physically motivated moves
(``MOVES``): each round codes the proxy with every move applied to the best parameters so
far and keeps the smallest, until no move helps or the ``evals`` budget is spent. Nothing here
is part of the format: the parameters chosen are stored in the header and decoding stays one
pass. The budget is the planner's (:class:`ubpe.planner.settings.Settings`:
``level3_search_floor``, ``_whole``, ``_prefix``, ``_share``, ``_evals``, ``_margin``), bounded by
``budget_plan`` to ``level3_search_work`` codings of the recording with the front-end chains'
comparison (``_min_prefix``, ``level3_front_proxy_part``, ``level3_front_part_min``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

MAX_EVALS = 64  #: the most codings of the proxy a search spends (tiny recordings)


def _scaled_steps(cur: dict, factor: float) -> dict:
    return {k: min(4096, max(1, int(cur[k] * factor))) for k in ("mu1", "mu2", "mu3")}


#: The moves, in the order a partial round tries them (each with its reason from the physics
#: of signals, measured on the shared audio as what a round picks first most often):
#: faster NLMS steps for strongly tonal or periodic sources with a high signal-to-noise ratio
#: (plucked and bowed strings, voice); a high order over a short window for sources rich in
#: harmonics (brass, mallets, strings: the long least squares of order 64, solved every 64
#: frames, over a memory shorter than the default's, t1 = 13, yet longer than t1 = 12, as 64
#: coefficients need more frames to fit; the short least squares of order 32 too, for the
#: partials that change within its window, solved every 32 frames, not 2, as a tone's spectrum
#: changes slowly: on the 14 tonal audio files, coded whole with these parameters, 1.9 % smaller
#: than with order 64 alone for 5 % more CPU; solved every 32 and 16 frames: 2.3 %, 36 % more); plain least squares instead of least absolute errors (or back,
#: or nearer still) for Gaussian rather than impulsive innovations; a shorter long NLMS filter for a
#: source whose period or spectrum changes within its span; a longer or shorter memory of the
#: short least squares and of the long one for slowly or quickly changing spectra; a lower
#: order for few resonances; more or less regularization for ill-conditioned (narrow-band) or
#: well-conditioned (broadband) spectra; slower NLMS steps for noise-like sources; a longer
#: long NLMS filter for long periods; Sac's recent-past power normalization; a higher order of
#: the short least squares for more resonances followed quickly; block LPC
#: (forward-adaptive) in the short least squares' place for abrupt spectral changes; the final
#: least-squares mix per hold state for held or staircase values.
MOVES: tuple[tuple[str, Callable[[dict], dict]], ...] = (
    ("steps x2", lambda c: _scaled_steps(c, 2.0)),
    ("order 64 over a short window", lambda c: dict(p1=64, k1=64, t1=13, p2=32, k2=32, irls=0)),
    ("least squares <-> least absolute", lambda c: dict(irls=0) if c["irls"] else dict(irls=16, powr=19)),
    ("nearer least absolute", lambda c: dict(irls=24, powr=0)),
    ("long NLMS / 2", lambda c: dict(n1=c["n1"] // 2)),
    ("short window x2", lambda c: dict(t2=min(19, c["t2"] + 2))),
    ("long window / 2", lambda c: dict(t1=max(0, c["t1"] - 2))),
    ("long window x2", lambda c: dict(t1=min(19, c["t1"] + 2))),
    ("order / 2", lambda c: dict(p1=max(1, c["p1"] // 2), k1=max(1, c["k1"] // 2))),
    ("regularization / 16", lambda c: dict(reg=min(24, c["reg"] + 4))),
    ("short window / 2", lambda c: dict(t2=max(0, c["t2"] - 2))),
    ("steps / 2", lambda c: _scaled_steps(c, 0.5)),
    ("long NLMS x2", lambda c: dict(n1=min(2048, max(16, c["n1"] * 2)))),
    ("regularization x16", lambda c: dict(reg=max(6, c["reg"] - 4))),
    ("recent-past power", lambda c: dict(powr=19 if c["powr"] == 1 else 1)),
    ("short order x2", lambda c: dict(p2=min(32, 2 * c["p2"]))),
    ("block LPC", lambda c: dict(lpc=1 - c["lpc"])),
    ("least-squares mix", lambda c: dict(fmix=1 - c["fmix"])),
)


def greedy(size: Callable[[dict], float], start: dict, evals: int, margin: float = 0.0,
           first: str | None = None, start_size: float | None = None,
           order: tuple[str, ...] = ()) -> tuple[dict, float]:
    """Coordinate descent from ``start`` (parameters by name): ``size(params)`` of the start
    (``start_size`` when the caller has measured it: one call of ``size`` fewer),
    then a round of every move of MOVES (the move named ``first`` before the others, then those
    named in ``order`` in that order, then the rest in MOVES' order), then
    rounds of only the moves that helped in the round before, best first (a move that changes
    nothing, or gives parameters already measured, is skipped); each round's smallest is kept
    when it is below the best times (1 - margin); at most ``evals`` calls of ``size`` in all.
    Returns (the best parameters, their size)."""
    best = dict(start)
    best_size = size(best) if start_size is None else start_size
    used = 1
    seen = {tuple(sorted(best.items()))}
    rank = {name: i for i, name in enumerate(order)}
    moves = sorted(MOVES, key=lambda m: (m[0] != first, rank.get(m[0], len(rank))))
    while used < evals and moves:
        tried = []
        for name, move in moves:
            if used >= evals:
                break
            cand = dict(best, **move(best))
            key = tuple(sorted(cand.items()))
            if key in seen:
                continue
            seen.add(key)
            tried.append((size(cand), name, move, cand))
            used += 1
        if not tried:
            break
        tried.sort(key=lambda t: t[0])
        got, _, _, cand = tried[0]
        if got >= best_size * (1 - margin):
            break
        moves = [(name, move) for got_k, name, move, _ in tried if got_k < best_size]
        best, best_size = cand, got
    return best, best_size


def proxy_plan(frames: int, channels: int, settings) -> tuple[int, int, float]:
    """The search's proxy and budget for a recording of ``frames`` x ``channels`` values under
    ``settings`` (:class:`ubpe.planner.settings.Settings`): (the prefix's frames, at most
    ``frames``; the codings of it, max(``level3_search_evals``, ``level3_search_floor`` / its
    values), 1 to MAX_EVALS; the margin a candidate must clear, ``level3_search_margin``, 0 when
    the prefix is the whole recording and sizes are exact)."""
    share = math.ceil(settings.level3_search_share * frames)
    proxy = max(1, min(frames, max(settings.level3_search_prefix, share)))
    values = proxy * max(1, channels)
    evals = max(1, min(MAX_EVALS, max(settings.level3_search_evals, settings.level3_search_floor // values)))
    return proxy, evals, (0.0 if proxy == frames else settings.level3_search_margin)


def chain_part(frames: int, settings) -> int:
    """The frames of a search's prefix of ``frames`` frames on which the front-end chains with
    stages are compared with the chain without (``ubpe.level3.front._choose_front_proxy``): its first
    ``settings.level3_front_proxy_part``, but at least ``level3_front_part_min`` frames (on fewer,
    block LPC, which has no warm-up, looks better than it codes the recording), at most all."""
    if settings.level3_front_proxy_part >= 1:
        return frames
    return max(1, min(frames, max(int(frames * settings.level3_front_proxy_part), settings.level3_front_part_min)))


def budget_plan(frames: int, channels: int, settings, chains: int = 1,
                work_share: float | None = None) -> tuple[int, int, float]:
    """``proxy_plan``'s (prefix frames, codings, margin) with the work before the final coding
    bounded by ``settings.level3_search_work`` codings of the recording (0: unbounded, as
    ``proxy_plan``): the front-end ``chains`` on the prefix (the first, no stages, on all of it,
    each other on ``chain_part`` of it) and the codings of the search after the first. Over the
    bound: fewer codings first (down to ``level3_search_evals``), then a shorter prefix (down to
    ``level3_search_min_prefix`` frames), then fewer codings (down to one: the chains'
    comparison alone). A short recording's search then costs a share of its coding, as a long
    one's (its prefix a quarter of it) does; the margin is ``level3_search_margin`` when the
    prefix is shorter than the recording. ``work_share``: the bound in codings of the recording in
    place of ``level3_search_work`` (``ubpe.level3.cost.search_share``), or None."""
    proxy, evals, margin = proxy_plan(frames, channels, settings)
    work = (settings.level3_search_work if work_share is None else work_share) * frames
    if work <= 0:
        return proxy, evals, margin
    others = max(1, chains) - 1

    def cost(p: int, e: int) -> int:  # frames coded before the final coding
        return p * e + others * chain_part(p, settings)

    if cost(proxy, evals) <= work:
        return proxy, evals, margin
    least = min(evals, settings.level3_search_evals)
    fewer = max(least, min(evals, int((work - others * chain_part(proxy, settings)) / proxy)))
    if cost(proxy, fewer) <= work:
        return proxy, fewer, margin
    lo, hi = 1, proxy  # the longest prefix within the bound (cost grows with the prefix)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if cost(mid, least) <= work else (lo, mid - 1)
    shorter = lo
    floor = min(proxy, settings.level3_search_min_prefix)
    if shorter < floor:
        shorter = floor
        least = max(1, min(least, int((work - others * chain_part(floor, settings)) / floor)))
    return shorter, least, (0.0 if shorter == frames else settings.level3_search_margin)


#: The move "order 64 over a short window" goes first when doubling the order of a linear
#: predictor (Levinson-Durbin on the recording's autocorrelation) from 32 to 64 lowers its
#: error power by at least ``Settings.level3_search_order_db`` decibels: a source with many
#: resonances (the harmonics of a string, a pipe, a voice) that order 32 cannot all follow.
ORDER_MOVE = "order 64 over a short window"
#: The move "least-squares mix" (one mix per hold state) goes first when at least
#: ``Settings.level3_search_hold`` of the frames repeat the frame before (held, upsampled or
#: staircase values: an ADC read slower than it is sampled, an oximeter's integer percent).
HOLD_MOVE = "least-squares mix"


def hold_share(y) -> float:
    """The share of frames equal (every channel) to the frame before; 0 for fewer than 2.
    ``y``: (frames, channels) integers."""
    import numpy as np

    y = np.asarray(y)
    if y.shape[0] < 2:
        return 0.0
    return float(np.mean(np.all(y[1:] == y[:-1], axis=1)))


def plan(y, settings, defaults: dict) -> tuple[dict, str | None]:
    """Where a search of ``y`` ((frames, channels) integers) starts and which move it tries
    first: from ``defaults`` with ORDER_MOVE applied when ``order_gain_db`` reaches
    ``settings.level3_search_order_start`` (so many resonances that order 64 is taken without
    measuring the defaults), else from ``defaults`` with ``first_move``; in either case with
    ``settings.level3_long_cascade`` (longer NLMS stages) applied when ``long_period`` fires
    (a sustained tone whose period is longer than the first NLMS stage: its stages cannot
    span it, and the prefix the search codes misjudges the longer stages' slower start, so
    the cue decides them without a coding)."""
    gain = order_gain_db(y)
    long = dict(settings.level3_long_cascade) if long_period(y, settings, defaults["n1"]) else {}
    if gain >= settings.level3_search_order_start:
        return {**defaults, **dict(MOVES)[ORDER_MOVE](defaults), **long}, None
    if gain >= settings.level3_search_order_db:
        return {**defaults, **long}, ORDER_MOVE
    return {**defaults, **long}, (HOLD_MOVE if hold_share(y) >= settings.level3_search_hold else None)


#: ``search.dc_change`` is tried (one coding of the search's sample more) only where the search's
#: plan has at least this many codings: the shortest recordings' two codings would take half as
#: long again (percussion-12, 2 064 values: 0.223 -> 0.182 M values a CPU second, the same bytes).
DC_MIN_EVALS = 3


def spare_codings(start: dict, defaults: dict, settings) -> int:
    """The codings of the proxy a search from ``start`` spends fewer than its budget:
    ``settings.level3_search_order_spare`` when ``start`` is ``defaults`` with ORDER_MOVE applied
    (``plan``'s start for many resonances: that move taken unmeasured in place of the first
    measured; the moves after it rarely help a tonal source and each codes order 64), or
    ``defaults`` (or that start) with ``settings.level3_long_cascade`` (``long_period`` fired:
    each coding runs 800 taps of NLMS stages instead of 296; klavichord-4 the same bytes with
    one coding fewer, encode 0.18 -> 0.20 M values/s), else 0."""
    order = dict(defaults, **dict(MOVES)[ORDER_MOVE](defaults))
    long = dict(settings.level3_long_cascade)
    starts = (order, dict(order, **long), dict(defaults, **long))
    return settings.level3_search_order_spare if start in starts else 0


#: The longest period (frames) ``long_period`` looks for: twice the long cascade's first stage.
PERIOD_MOST = 1024


def long_period(y, settings, span: int) -> bool:
    """Whether ``y`` ((frames, channels) integers) is a sustained tone whose period is longer
    than ``span`` frames (the first NLMS stage's taps): the strongest peak of the values'
    autocorrelation at lags 32 to ``PERIOD_MOST`` lies beyond ``span`` and reaches
    ``settings.level3_period_raw`` of the power, and so does the strongest peak of the
    autocorrelation of their order-32 linear-prediction residual (what the NLMS stages see
    after the least squares; the harmonics a short filter predicts are gone from it, the
    period stays), reaching ``settings.level3_period_residual``. Autocorrelations of each
    channel's first at most 2**16 frames minus their mean (float64, one FFT; biased: the sums
    over the frames, divided by lag 0's), the residual's from the values' and the error filter's
    (Levinson-Durbin; no second FFT), each averaged over the channels (a constant channel left
    out); False for fewer than ``max(settings.level3_period_frames, 4 PERIOD_MOST)`` frames (the
    longer stages' slower start costs more than they gain), a constant recording, or
    ``settings.level3_period_raw`` above 1 (off). About 2.5 ms on 37 000 frames.
    A plucked string's or a reed's low notes fire it (klavichord-4's period 343 frames);
    percussion, noise and oversampled biosignals (whose autocorrelation at 32 lags is near
    its lag 0: the peak is at 32) do not. A cue of the encoder's: it decides no bit."""
    import numpy as np

    if settings.level3_period_raw > 1:
        return False
    y = np.asarray(y, np.float64)[:1 << 16]
    n = y.shape[0]
    if n < max(settings.level3_period_frames, 4 * PERIOD_MOST):
        return False
    order = 32
    # (the residual's autocorrelation to PERIOD_MOST reads the values' to PERIOD_MOST + order)
    acfs = [r for r in _channel_acfs(y, PERIOD_MOST + order) if r[0] > 0]
    if not acfs:
        return False
    raw = sum(r[:PERIOD_MOST + 1] / r[0] for r in acfs) / len(acfs)
    lr = 32 + int(np.argmax(raw[32:]))
    if lr <= span or raw[lr] < settings.level3_period_raw:
        return False  # (most recordings: no residual computed)
    res = np.zeros(PERIOD_MOST + 1)
    for r in acfs:
        a, _ = _levinson(r, order, r[0] * (1 + 1e-9))  # the order-32 predictor's error filter
        # the residual's autocorrelation from the values': r_e(k) = sum_ij a_i a_j r(k + i - j)
        both = np.concatenate([r[order:0:-1], r])  # lags -order .. most
        q = np.convolve(both, np.correlate(a, a, "full"), "valid")  # lags 0 .. PERIOD_MOST
        res += q / max(q[0], 1e-300)
    res /= len(acfs)
    le = 32 + int(np.argmax(res[32:]))
    return bool(lr > span and le > span and raw[lr] >= settings.level3_period_raw
                and res[le] >= settings.level3_period_residual)


def held_period(y, settings, span: int) -> bool:
    """Whether the held part of ``y`` ((frames, channels) integers, a sustained tone's: its second
    half) has a period that a first NLMS stage of ``span`` taps spans fewer than
    ``settings.level3_held_spans`` times: the strongest peak of the autocorrelation of that half's
    order-32 linear-prediction residual (the error filter fitted to the whole recording's first
    at most 2**16 frames, as ``tonal_stats``; the half's first at most 2**16 frames) at lags 32 to ``PERIOD_MOST`` lies beyond ``span`` /
    ``level3_held_spans`` and reaches ``settings.level3_period_residual``; each channel's, averaged
    (a constant channel left out; the residual filtered, its autocorrelation one FFT). False for
    fewer than ``max(settings.level3_period_frames, 4 PERIOD_MOST)`` frames (as ``long_period``: on
    a short recording the longer stage's slower start costs more than the held part gains, and
    the search's prefix, the warm-up, matters more). A cue of the
    encoder's (it decides where ``level3_held_n1`` is tried, no bit): on the 32 audio files it fires
    on pipe (162 frames), trumpet-1 (122), violoncello-7 (182), xylofon (191), electric-piano-3
    (122), cockchafer-gentleman-1, pisk-down and glass-water-1 (320-452)."""
    if settings.level3_held_spans <= 0:
        return False
    le, peak = held_lag(y, settings)
    return bool(le * settings.level3_held_spans > span and peak >= settings.level3_period_residual)


def held_lag(y, settings) -> tuple[int, float]:
    """(lag, peak) of the held part of ``y`` ((frames, channels) integers: its second half): the
    lag in frames, 32 to ``PERIOD_MOST``, of the strongest peak of the autocorrelation of that half's
    order-32 linear-prediction residual and that peak (normalized by lag 0, averaged over the
    channels), as ``held_period`` reads them; (0, 0.0) for fewer than
    ``max(settings.level3_period_frames, 4 PERIOD_MOST)`` frames or no channel left. A sustained
    tone's period (its excitation's, once the harmonics are predicted)."""
    import numpy as np

    y = np.asarray(y, np.float64)
    n = y.shape[0]
    if n < max(settings.level3_period_frames, 4 * PERIOD_MOST):
        return 0, 0.0
    order = 32
    start = n // 2
    half = y[start:][:1 << 16]
    res = np.zeros(PERIOD_MOST + 1)
    used = 0
    for c, r in enumerate(_channel_acfs(y[:1 << 16], order)):
        if r[0] <= 0:
            continue
        a, _ = _levinson(r / r[0], order, 1.0 + 1e-9)
        # the residual itself, filtered (its autocorrelation from the values' would be lost in their
        # edge terms: a tone's residual is 30 dB below its values)
        e = np.convolve(y[start - order:start + half.shape[0], c], a, "valid")
        e = e - e.mean()
        f = np.fft.rfft(e, 1 << (e.shape[0] + PERIOD_MOST).bit_length())
        q = np.fft.irfft(f.real ** 2 + f.imag ** 2)[:PERIOD_MOST + 1]
        if q[0] <= 0:
            continue
        res += q / q[0]
        used += 1
    if not used:
        return 0, 0.0
    res /= used
    le = 32 + int(np.argmax(res[32:]))
    return le, float(res[le])


def held_cascade(named: dict, lag: int, settings, peak: float = 0.0) -> dict | None:
    """``named`` (parameters by name, a sustained tone's as the search chose them) with its NLMS
    cascade fitted to the held part's period ``lag`` (frames, ``held_lag``): the second stage
    ``settings.level3_cascade_spans`` periods long (a stage predicts a period only where it spans
    it; Sac's search grew its third stage from 32 to 183 taps on trumpet-1, whose period is 122),
    the short least squares' memory ``t2`` + ``level3_cascade_t2`` (a held part's spectrum is
    steady) and, with ``level3_cascade_bias``, the bias-correction stage on (``bias`` = 1, Sac's last
    stage: a real instrument's held part drifts; a synthetic pulse train's does not, and there it
    costs 1-2 %); None where ``level3_cascade_spans`` is 0 (never), the held part's residual
    ``peak`` (``held_lag``) is above ``level3_cascade_peak`` (an excitation that repeats exactly, a
    synthetic or electronic tone's, 0.84-0.98: the first stage, spanning it, predicts it once
    converged and a second one only adds its misadjustment; the shared and held-out instruments'
    0.26-0.60, their pitch drifts), the stage would exceed
    the kernel's bound (256 taps) or the first stage, or it is not longer than ``named``'s. What
    ``encoder._search_whole`` codes once on the search's prefix and keeps when smaller by the
    margin (results/level3-tone.md)."""
    if settings.level3_cascade_spans <= 0 or lag <= 0 or peak > settings.level3_cascade_peak:
        return None
    n2 = int(round(settings.level3_cascade_spans * lag))
    if n2 > 256 or n2 > named.get("n1", 256) or n2 <= named.get("n2", 32):
        return None
    out = dict(named, n2=n2, t2=min(27, named.get("t2", 10) + settings.level3_cascade_t2))
    if settings.level3_cascade_bias:
        out["bias"] = 1
    return out


def cascade_steps(named: dict, settings) -> dict | None:
    """``named`` (parameters by name, with ``held_cascade``'s stages) with its NLMS steps moved from
    the first stage to the last: ``mu1`` times ``settings.level3_cascade_mu1``, ``mu3`` times
    ``level3_cascade_mu3`` (each 1 to 4096); None where either factor is 0 (never) or nothing
    changes. Once the second stage spans the period, the first stage's fast step (the search's
    "steps x2", taken to chase the period) adds misadjustment more than it follows, and the last,
    short stage, fed a residual free of the period, follows what remains faster. Judged where the
    stages have converged, on the held part's sample (``encoder._held_choice``): the prefix, the
    onset, cannot tell (results/level3-tone.md)."""
    if settings.level3_cascade_mu1 <= 0 or settings.level3_cascade_mu3 <= 0:
        return None
    mu1 = min(4096, max(1, int(named.get("mu1", 800) * settings.level3_cascade_mu1)))
    mu3 = min(4096, max(1, int(named.get("mu3", 200) * settings.level3_cascade_mu3)))
    out = dict(named, mu1=mu1, mu3=mu3)
    return None if out == named else out


def first_move(y, settings) -> str | None:
    """The move a search of ``y`` ((frames, channels) integers) tries first: ORDER_MOVE when
    ``order_gain_db`` reaches ``settings.level3_search_order_db``, else HOLD_MOVE when
    ``hold_share`` reaches ``settings.level3_search_hold``, else None (MOVES' order)."""
    if order_gain_db(y) >= settings.level3_search_order_db:
        return ORDER_MOVE
    if hold_share(y) >= settings.level3_search_hold:
        return HOLD_MOVE
    return None


def smooth_db(y) -> float:
    """The decibels by which the values' power exceeds their first difference's (each channel's
    values minus their mean, float64; the mean over the channels; 0 for fewer than 3 frames or
    a constant recording). ``y``: (frames, channels) integers. Oversampled, low-pass signals
    (biosignals, slow seismometers) score high, audio low; a cue that orders the search's
    moves, it decides no bit."""
    import numpy as np

    y = np.asarray(y, np.float64)
    if y.shape[0] < 3:
        return 0.0
    gains = []
    for c in range(y.shape[1]):
        v = y[:, c] - y[:, c].mean()
        # (sums of squares, not ``v @ v``: a BLAS product of a long vector wakes BLAS's threads,
        # whose spinning the process's CPU time then counts: level 3's encode 30 % slower)
        p, d = float(np.square(v).sum()), float(np.square(np.diff(v)).sum())
        gains.append(0.0 if p <= 0 else 10.0 * math.log10(p / max(d, 1e-9)))
    return float(sum(gains) / len(gains))


def move_order(y, settings) -> tuple[str, ...]:
    """The moves (names of MOVES) a search of ``y`` ((frames, channels) integers) on its prefix
    tries first, in order (``greedy``'s ``order``): ``settings.level3_search_smooth_moves`` when
    ``smooth_db`` reaches ``settings.level3_search_smooth_db``, else
    ``settings.level3_search_proxy_moves``."""
    if smooth_db(y) >= settings.level3_search_smooth_db:
        return tuple(settings.level3_search_smooth_moves)
    return tuple(settings.level3_search_proxy_moves)


def order_gain_db(y, order: int = 32) -> float:
    """The decibels by which a linear predictor of order 2 ``order`` has a smaller error power
    than one of order ``order`` (Levinson-Durbin on the autocorrelation of each channel's values
    minus their mean, float64; the mean over the channels; 0 for a constant or too short
    recording). ``y``: (frames, channels) integers. A cheap statistic (an FFT of the recording):
    it only orders the search's moves, it decides no bit."""
    import numpy as np

    y = np.asarray(y, np.float64)
    n = y.shape[0]
    if n <= 4 * order:
        return 0.0
    gains = []
    for r in _channel_acfs(y, 2 * order):
        r = r / n
        if r[0] <= 0:
            gains.append(0.0)
            continue
        _, at = _levinson(r, 2 * order, r[0] * (1 + 1e-9))
        gains.append(10.0 * math.log10(at[order] / at[2 * order]))
    return float(sum(gains) / len(gains))


def tonal(y, settings) -> bool:
    """Whether ``y`` ((frames, channels) integers) is a sustained tone, whose searched parameters
    ``tonal_change`` refines: ``settings.level3_version`` at least 7, at least
    ``settings.level3_tonal_frames`` frames, and of ``tonal_stats`` the residual peak at least
    ``settings.level3_tonal_peak``, the swing at least ``settings.level3_tonal_swing`` and the gain
    at least ``settings.level3_tonal_gain`` decibels (a tone is predictable; above 1: never). ``y``
    is what the coder models: the front-end chain's output. On the 32 audio files it fires on 20
    (not on percussion, the short ones, prompt, canary-long, cymbaly-1); among the held-out
    recordings of at most ``level3_search_whole`` values (whose search reads it) on one, a chime of
    unseen2, not on a 0.1 Hz seismometer whose chain output's residual peaks at 0.13 (gain 2.5 dB)
    nor on a hi-hat (0.12, 3 dB). A cue of the encoder's: it decides no bit."""
    if settings.level3_version < 7 or settings.level3_tonal_peak > 1:
        return False
    if y.shape[0] < settings.level3_tonal_frames:
        return False
    gain, swing, peak = tonal_stats(y)
    return (peak >= settings.level3_tonal_peak and swing >= settings.level3_tonal_swing
            and gain >= settings.level3_tonal_gain)


def tonal_change(named: dict, settings) -> dict:
    """``named`` (parameters by name, as the search chose them) for a sustained tone: the long
    least squares' solve refined (``olsr`` = ``settings.level3_tonal_olsr``, version 7) and its
    ridge ``2**-settings.level3_tonal_reg`` times as large (``reg`` up, at most 24). A tone's
    covariance has pivots 2**-20 of its diagonal and smaller: the 30-bit solve jitters from one
    solve to the next and the ridge (reg 16) hides it at the price of a worse fit; once refined, a
    smaller ridge pays. Applied after the search (no coding): a search started from it on the
    prefix went elsewhere (prompt +2.9 %, results/level3-tonal.md)."""
    return dict(named, olsr=settings.level3_tonal_olsr, reg=min(24, named["reg"] + settings.level3_tonal_reg))


def tonal_trial(named: dict, settings, gain: float = 0.0) -> dict:
    """What the encoder codes once more for a sustained tone whose search kept the default NLMS
    power (``encoder._search_whole``): ``named`` with Sac's recent-past power (``powr`` =
    ``settings.level3_tonal_powr``) and, when ``settings.level3_tonal_t1`` > 0 and the tone's
    order-32 prediction gain ``gain`` (decibels, ``tonal_stats``) is below
    ``settings.level3_tonal_trial_gain``, the long least squares' forgetting period ``t1`` = that
    code (15: halved every 384 frames, about Sac's lambda 0.998, where the default 17 halves every
    768) and their ridge ``2**-settings.level3_tonal_trial_reg`` times as large (``reg`` up, at most
    24; ``tonal_change`` adds its own after). One vector, kept or refused as a whole. A held
    instrument's pitch and level drift (vibrato, a decay of 30 dB over pipe's second half) faster
    than the default memory follows; a tone whose prediction gains more than the ceiling is
    nearly noise-free (synthetic pulse trains through resonances, 38 dB: the smaller ridge cost them
    1.6-3.5 % and the prefix took it), where the power alone is tried, as before
    (results/level3-sac-gap-5.md)."""
    alt = dict(named, powr=settings.level3_tonal_powr)
    if settings.level3_tonal_t1 > 0 and gain < settings.level3_tonal_trial_gain:
        alt["t1"] = settings.level3_tonal_t1
        alt["reg"] = min(24, named["reg"] + settings.level3_tonal_trial_reg)
    return alt


def dc_ratio(y, most: int = 1 << 16) -> float:
    """How far the coder's working zero lies from the signal's mean, in the signal's typical
    deviation: sum over the channels of |mean - (min + max) / 2| over the sum of the median
    |y - mean| (0 when every channel is constant or ``y`` is empty). ``y``: (frames, channels)
    integers, what the coder models; the min, max and mean over every frame, the median over at
    most ``most`` frames evenly strided. The kernel's working values are the symbols minus the
    middle of their channel's range; the least squares have no intercept, so a skewed range (a
    one-sided transient, a biosignal's peaks on one side of its baseline) leaves a constant in
    every input and target that swells the normal equations' diagonal (their ridge is relative to
    it) and takes part of the solve's 30 bits: ``dcm`` (version 8) fits the values minus their
    running mean instead."""
    import numpy as np

    if y.size == 0:
        return 0.0
    y = np.asarray(y)
    step = max(1, y.shape[0] // most)
    off = dev = 0.0
    for c in range(y.shape[1]):
        col = y[:, c]
        lo, hi = int(col.min()), int(col.max())
        if lo == hi:
            continue
        m = float(col.mean(dtype=np.float64))
        off += abs(m - (lo + hi) / 2)
        dev += float(np.median(np.abs(col[::step].astype(np.float64) - m)))
    return off / dev if dev > 0 else 0.0


def dc_change(named: dict, y, settings) -> dict:
    """``named`` (parameters by name, as the search chose them) with the least squares on the
    values minus their running mean (``dcm`` = ``settings.level3_dc_rate``, version 8) where
    ``dc_ratio(y)`` is at least ``settings.level3_dc_ratio`` (``settings.level3_version`` at least
    8; the ratio above 1e6: never). The cue says where to try it (the encoder then codes its
    sample once with it and keeps it when smaller): on the 32 audio files (each coded whole with
    the parameters the search chose) centring gains up to 1.9 % where the ratio is high (prompt
    4.2, guitar-13 4.3) and costs up to 1 % where it is below 0.5 (trumpet-12 0.35, gummy-cat-2
    0.26); where the values are coarse (a 10-bit PPG, residuals of a unit) it can cost 1 % at any
    ratio (results/level3-sac-gap-2.md)."""
    if settings.level3_version < 8 or settings.level3_dc_ratio > 1e6:
        return named
    if dc_ratio(y) < settings.level3_dc_ratio:
        return named
    return dict(named, dcm=settings.level3_dc_rate)


def dc_trial(named: dict, y, settings) -> dict | None:
    """``named`` with the least squares on the values minus their running mean (``dcm`` =
    ``settings.level3_dc_rate``, version 8) for a broadband, noise-like signal: its order-32
    prediction gain (``tonal_stats``' first) below ``settings.level3_dc_trial_db``; else None
    (also where ``named`` has ``dcm`` already, ``settings.level3_version`` is below 8, or
    ``settings.level3_dc_ratio`` is above 1e6: the running mean never). Such a signal's
    predictor sums far from 1, so an offset between the working zero and the mean is not
    cancelled by the predictor but passes into every prediction, on the error's scale, however
    small it is against the signal's deviation (``dc_ratio``'s scale): a surface EMG (12-bit
    codes, 6.5 units off the middle of its range, ``dc_ratio`` 0.04, gain 9.5 dB) codes 0.34 %
    smaller centred. The cue says where to try it (the search codes its sample once with it,
    where ``dc_change`` has not, and keeps it when smaller by the margin); it codes nothing
    itself (results/level3-heldout-peers.md)."""
    if settings.level3_version < 8 or settings.level3_dc_ratio > 1e6 or settings.level3_dc_trial_db <= 0 \
            or named.get("dcm"):  # (level3_dc_ratio above 1e6: the running mean never, as dc_change)
        return None
    if tonal_stats(y)[0] >= settings.level3_dc_trial_db:
        return None
    return dict(named, dcm=settings.level3_dc_rate)


def tonal_stats(y, order: int = 32, most: int = PERIOD_MOST) -> tuple[float, float, float]:
    """(gain, swing, residual peak) of ``y`` ((frames, channels) integers), each the mean over the
    channels (a constant channel left out; (0, 0, 0) for fewer than 4 ``order`` frames or none
    left): ``gain`` the order-``order`` linear predictor's gain (decibels: the values' power over
    the error's, Levinson-Durbin on the autocorrelation); ``swing`` the autocorrelation's largest
    rise at lags 1 to ``most`` above its smallest value at any shorter lag (normalized by lag 0:
    0 to 2; a sustained tone's oscillates, swing near 2; noise, a random walk and a smooth
    biosignal's decay, swing near 0; a struck or plucked note's decays as it rings); ``residual
    peak`` the strongest normalized autocorrelation of the prediction error at lags 2 to
    ``most`` (what a tone's period leaves once its harmonics are predicted). Each channel's
    first at most 2**16 frames minus their mean, float64, one FFT (as ``long_period``)."""
    import numpy as np

    y = np.asarray(y, np.float64)[:1 << 16]
    n = y.shape[0]
    if n <= 4 * order:
        return 0.0, 0.0, 0.0
    top = min(most, n // 2)
    gains, swings, peaks = [], [], []
    for r in _channel_acfs(y, top + order):
        if r[0] <= 0:
            continue
        r = r / r[0]
        a, errs = _levinson(r, order, 1.0 + 1e-9)
        gains.append(10.0 * math.log10(1.0 / errs[order]))
        raw = r[:top + 1]
        swings.append(float(np.max(raw[1:] - np.minimum.accumulate(raw)[:-1])))
        both = np.concatenate([r[order:0:-1], r])  # lags -order .. span
        q = np.convolve(both, np.correlate(a, a, "full"), "valid")[:top + 1]  # the error's, lags 0 .. top
        peaks.append(float(np.max(q[2:]) / max(q[0], 1e-300)) if top >= 2 else 0.0)
    if not gains:
        return 0.0, 0.0, 0.0
    return float(np.mean(gains)), float(np.mean(swings)), float(np.mean(peaks))


#: ``_channel_acfs``' last few results: (dtype, shape, FFT size, CRC-32 of the values) -> (a copy
#: of the values, compared before use, and each channel's full inverse FFT) (the cues of one ``encode`` read the same recording's autocorrelation up to
#: four times, at one FFT size: ``order_gain_db``, ``long_period``, ``first_move``, ``tonal_stats``)
_ACFS: dict = {}
_ACFS_MOST = 4  #: entries kept (a recording and its front-end chains' outputs)
_ACFS_VALUES = 1 << 19  #: kept only where the FFT size times the channels is at most this (4 MiB of FFTs an entry)


def _channel_acfs(y, lags: int) -> list:
    """Each channel's autocorrelation at lags 0 to ``lags`` (float64 sums over the frames of its
    values minus their mean; ``y`` (frames, channels) float64): one FFT of a power of two at
    least ``frames + lags`` long, so nothing wraps below lag ``lags + 1``. The cues' one
    autocorrelation (``long_period``, ``order_gain_db``, ``tonal_stats``). The FFTs of the last
    ``_ACFS_MOST`` inputs (by their values, not their identity) are kept: the same arrays, bit for
    bit, as computed again (new arrays returned each call)."""
    import zlib

    import numpy as np

    size = 1 << (y.shape[0] + lags).bit_length()
    values = np.ascontiguousarray(y)
    key = (values.dtype.str, y.shape, size, zlib.crc32(values))
    kept = _ACFS.get(key)
    if kept is not None and np.array_equal(kept[0], values):  # (the values compared: no collision)
        full = kept[1]
    else:
        full = []
        for c in range(y.shape[1]):
            f = np.fft.rfft(y[:, c] - y[:, c].mean(), size)
            full.append(np.fft.irfft(f.real ** 2 + f.imag ** 2))
        if size * y.shape[1] <= _ACFS_VALUES:  # (a small input's: the memory kept is bounded)
            if len(_ACFS) >= _ACFS_MOST:
                _ACFS.clear()
            _ACFS[key] = (values.copy(), full)
    return [r[:lags + 1].copy() for r in full]


def _levinson(r, order: int, err: float) -> tuple:
    """Levinson-Durbin on the autocorrelation ``r`` (lags 0 to at least ``order``; lag 0 is not
    read: its place is ``err``, the error power at order 0, which a caller raises by a white-noise
    floor to keep the recursion stable): (the error filter, ``order + 1`` coefficients from 1, and
    the error power after each order, a list indexed 0 to ``order``). Each step's error factor is
    at least 1e-12."""
    import numpy as np

    a = np.zeros(order + 1)
    a[0] = 1.0
    errs = [err]
    for i in range(1, order + 1):
        k = -(r[i] + a[1:i] @ r[i - 1:0:-1]) / err
        a[1:i] += k * a[i - 1:0:-1]  # (the product a new array: no aliasing)
        a[i] = k
        err *= max(1e-12, 1.0 - k * k)
        errs.append(err)
    return a, errs


CUE_MIN_FRAMES = 4096  #: ``code_classes_cue`` reads channels of at least this many frames
CUE_MIN_IQR = 32  #: ... whose quartiles lie at least this many codes apart


def code_classes_cue(values: np.ndarray, bits: float) -> bool:
    """Whether some channel of ``values`` ((frames, C) integers: the values the kernel sees) has
    its residues mod 8 uneven by at least ``bits`` bits a value (their divergence from the
    uniform, ``sum p log2(8 p)``), with at least ``CUE_MIN_FRAMES`` frames and quartiles at least
    ``CUE_MIN_IQR`` codes apart (a smooth density that wide gives residues even to within
    ``exp(-2 pi**2 (IQR / 1.35)**2 / 64)``): an ADC whose code widths follow a pattern over the
    low bits (differential nonlinearity), which version 9's code classes model. O(frames C)."""
    n = values.shape[0]
    if n < CUE_MIN_FRAMES or bits <= 0:
        return False
    for c in range(values.shape[1]):
        v = values[:, c]
        q1, q3 = np.percentile(v, [25, 75])
        if q3 - q1 < CUE_MIN_IQR:
            continue
        p = np.bincount((v & 7).astype(np.int64), minlength=8) / n
        nz = p > 0
        if float((p[nz] * np.log2(8 * p[nz])).sum()) >= bits:
            return True
    return False
