"""Whether ``compress(level=3)`` builds level 2's container beside the level-3 coder's.

Level 3 keeps the smaller of the two containers. Level 2's (the planner's search and its
coding) costs 15-35 % of the level-3 coder's time on recordings of 65 536 values or more, but
30-70 % on short ones (its planner's fixed cost), where it rarely wins: it is built there only
for the inputs the settings name (``Settings.level3_level2_*``, measured in
benchmarks/results/level3-skip.md).
"""

from __future__ import annotations

from .settings import Settings

__all__ = ["level2_wanted"]


def level2_wanted(values: int, channels: int, level3_bytes: int, s: Settings) -> bool:
    """Whether level 2's container is built for ``values`` values (> 0) of ``channels``
    channels whose level-3 container is ``level3_bytes`` long: more than one channel (the
    skip was measured on one-channel recordings only; a 9-channel int8 walk of 2 052 values
    codes 19 % smaller at level 2), at most ``level3_level2_small`` or at least
    ``level3_level2_values`` values, or at most ``level3_level2_bits`` bits a value in the
    level-3 container."""
    if channels > 1 or values <= s.level3_level2_small or values >= s.level3_level2_values:
        return True
    return 8 * level3_bytes <= s.level3_level2_bits * values
