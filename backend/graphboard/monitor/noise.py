"""How far a monitored statistic of the target may sit from the golden's before the two runs
are said to part: the rounding the recorded dtypes and the printed digits explain.

Derivation (docs/monitor-trends.md has it in full). A statistic of a tensor of ``n`` elements,
each held in a dtype of unit roundoff ``u``, moves by rounding alone:
  * max, min: one element, rounded: at most ``u |x|``;
  * norm: every element moves by at most ``u`` relatively, so the norm does too, and the sum of
    ``n`` squares adds at most ``log2(n)`` roundings of its own (pairwise summation);
  * mean: each element moves by at most ``u |x_i|``, so the mean by at most ``u`` times the
    mean of ``|x|``, which the root mean square ``norm / sqrt(n)`` bounds; the sum adds
    ``log2(n)`` roundings of that size.
The statistic itself is computed at least in float32, so ``u`` is never below float32's. The
two runs round independently, so their difference may be the sum of both sides' bounds, plus
the CSV's printing (``ndigits`` decimals, half a unit of the last on each side).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FLOAT32_ROUNDOFF = 2.0**-24
ROUNDOFF = {  # unit roundoff by dtype name as the monitor writes it (torch's names)
    "float64": 2.0**-53,
    "float32": FLOAT32_ROUNDOFF,
    "float": FLOAT32_ROUNDOFF,
    "bfloat16": 2.0**-8,
    "float16": 2.0**-11,
    "half": 2.0**-11,
    "float8_e4m3fn": 2.0**-4,
    "float8_e5m2": 2.0**-3,
}
Floats = npt.NDArray[np.float64]


def roundoff(dtype: str | None) -> float:
    """The unit roundoff a statistic of this dtype carries: integers and float64 are held to
    float32's, the least precision the monitor computes a statistic in; an unknown dtype
    (a trend.db holds none) likewise."""
    name = (dtype or "").removeprefix("torch.")
    return max(ROUNDOFF.get(name, FLOAT32_ROUNDOFF), FLOAT32_ROUNDOFF)


def printing(decimals: int | None) -> float:
    """Half a unit of the last printed decimal (0 when the digits are not known)."""
    return 0.0 if decimals is None else 0.5 * 10.0**-decimals


def tolerance(
    statistic: str,
    target: Floats,
    golden: Floats,
    target_norm: Floats | None,
    golden_norm: Floats | None,
    numel: Floats,
    target_roundoff: Floats,
    golden_roundoff: Floats,
    printed: float,
) -> Floats:
    """The largest |target - golden| rounding explains, cell by cell (``numel`` and the
    roundoffs are per cell too)."""
    u = target_roundoff + golden_roundoff
    size = np.maximum(numel, 1.0)
    summed = 1.0 + np.log2(size)
    largest = np.maximum(np.abs(target), np.abs(golden))
    if statistic in ("max", "min"):
        scale = largest * u
    elif statistic == "mean" and target_norm is not None and golden_norm is not None:
        rms = np.maximum(np.abs(target_norm), np.abs(golden_norm)) / np.sqrt(size)
        scale = rms * u * summed
    else:  # norm; and a statistic without a bound of its own: its size, as the norm's
        scale = largest * u * summed
    return np.asarray(scale + 2.0 * printed, dtype=np.float64)
