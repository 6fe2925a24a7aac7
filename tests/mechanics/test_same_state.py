"""same_values against numpy's array_equal on the cases the memos meet."""

from __future__ import annotations

import numpy as np
import pytest

from softsim.mechanics.same_state import same_values


def _cases():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((50, 3))
    differ_first, differ_last, with_nan = a.copy(), a.copy(), a.copy()
    differ_first[0, 0] += 1e-15
    differ_last[-1, -1] = np.nextafter(differ_last[-1, -1], np.inf)
    with_nan[10, 1] = np.nan
    return [(a, a.copy()), (a, differ_first), (a, differ_last), (a, a[:49]), (a, a.reshape(-1)),
            (with_nan, with_nan.copy()), (with_nan, with_nan), (a, a), (a, np.asfortranarray(a)),
            (a.astype(np.float32), a.astype(np.float32)), (np.arange(6), np.arange(6)),
            (np.zeros((0, 3)), np.zeros((0, 3))), (-0.0 * a, 0.0 * a)]


@pytest.mark.parametrize("index", range(13))
def test_same_values_is_array_equal(index):
    a, b = _cases()[index]
    assert same_values(a, b) == np.array_equal(a, b)
