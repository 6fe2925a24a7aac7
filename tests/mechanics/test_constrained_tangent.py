"""ConstrainedTangent.matrix: K_free plus the constraints' force-stiffness triplets on the free DOFs, against the
same sum made by scipy from the triplets (duplicates summed, fixed DOFs dropped), on a kept pattern."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from softsim.mechanics.constrained_tangent import ConstrainedTangent


def test_the_sum_is_scipys_sum_of_the_triplets_on_the_free_dofs():
    rng = np.random.default_rng(8)
    n_dofs = 30
    fixed = np.array([0, 1, 2, 13])
    dof_to_free = np.full(n_dofs, -1, dtype=np.int64)
    free = np.setdiff1d(np.arange(n_dofs), fixed)
    dof_to_free[free] = np.arange(free.size)
    pattern = sp.random(free.size, free.size, density=0.15, random_state=3, format="csr")
    pattern = (pattern + pattern.T + sp.identity(free.size)).tocsr()
    pattern.sort_indices()
    # two terms whose triplets repeat entries (a cable's segments share points), touch fixed DOFs and entries
    # outside K's pattern
    rows = [rng.integers(0, n_dofs, 40), rng.integers(0, n_dofs, 25)]
    cols = [rng.integers(0, n_dofs, 40), rng.integers(0, n_dofs, 25)]
    rows[0][:5], cols[0][:5] = 7, 9  # one entry five times
    tangent = ConstrainedTangent(dof_to_free)
    for round_ in range(5):  # the same index arrays: the pattern is kept, the values change
        if round_ == 3:  # new index arrays (contact rows moved): the pattern is built again
            rows = [rng.integers(0, n_dofs, 30), rows[1]]
            cols = [rng.integers(0, n_dofs, 30), cols[1]]
            rows[0][:5], cols[0][:5] = 7, 9
        K = pattern.copy()
        K.data = rng.normal(size=K.nnz)
        if round_ == 4:  # K with its columns unsorted within rows: built the general way
            order = np.concatenate([np.arange(a, b)[::-1] for a, b in zip(K.indptr[:-1], K.indptr[1:])])
            K = sp.csr_matrix((K.data[order], K.indices[order], K.indptr), shape=K.shape)
            assert not K.has_sorted_indices
        terms = [(r, c, rng.normal(size=r.size)) for r, c in zip(rows, cols)]
        total = tangent.matrix(K, terms)
        expected = K.toarray()
        for r, c, v in terms:
            full = sp.coo_matrix((v, (r, c)), shape=(n_dofs, n_dofs)).toarray()
            expected += full[np.ix_(free, free)]
        np.testing.assert_allclose(total.toarray(), expected, rtol=0.0, atol=1e-14)
        checked = sp.csr_matrix((total.data, total.indices, total.indptr), shape=total.shape)
        assert checked.has_canonical_format and total.has_canonical_format
    assert np.abs(expected[dof_to_free[7], dof_to_free[9]]) > 0.0
