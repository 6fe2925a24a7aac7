"""Display fields: per-element quantities averaged to nodes, displacement magnitude."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def nodal_average_operator(tets: np.ndarray, volumes: np.ndarray, n_nodes: int) -> sp.csr_matrix:
    """Sparse (n_nodes, m) operator: the volume-weighted average of element values over the tets at each node.

    Nodes that belong to no tetrahedron get 0.
    """
    m = tets.shape[0]
    rows = tets.reshape(-1)
    cols = np.repeat(np.arange(m), 4)
    weights = np.repeat(np.asarray(volumes, dtype=np.float64), 4)
    A = sp.csr_matrix((weights, (rows, cols)), shape=(n_nodes, m))
    total = np.asarray(A.sum(axis=1)).ravel()
    scale = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
    return (sp.diags(scale) @ A).tocsr()


def displacement_magnitude(x: np.ndarray, X: np.ndarray) -> np.ndarray:
    """|x - X| per node, shape (n,)."""
    return np.linalg.norm(x - X, axis=1)
