"""Tetrahedral (P1, one Gauss point) elasticity: internal forces, energy and tangent stiffness.

Conventions (ARCHITECTURE.md): DOFs are node-major (dof = 3 i + k), f_int(x) = -dE/dx and
K(x) = -d f_int/dx. The tangent is a ``scipy.sparse.csr_matrix`` whose sparsity pattern (3x3 blocks for
every pair of nodes sharing a tetrahedron, sorted column indices) is built once; every evaluation rewrites
only its ``.data`` through a precomputed block scatter map, inside one fused numba loop over elements.
"""

import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from softsim.mechanics import _kernels
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.kinematics import edge_frames, polar_frames, rest_shape
from softsim.mechanics.materials import (
    check_corotational_tangent,
    check_model,
    element_parameters,
    stable_neohookean_parameters,
)
from softsim.mechanics.same_state import same_values

logger = logging.getLogger(__name__)

#: the second assembly thread of meshes of at least ``TetElasticity.PARALLEL_MIN_TETS`` elements (the numba kernel
#: releases the GIL)
_ASSEMBLY_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="softsim-assembly")
#: whether the assembly may use that second thread (:func:`set_assembly_threads`)
_two_threads = True


def set_assembly_threads(threads: int) -> None:
    """Let the element assembly use two threads (``threads >= 2``, the default) or one (a process that shares the
    machine's cores with others of its kind, such as a sweep's worker given one core)."""
    global _two_threads
    _two_threads = int(threads) >= 2


def _block_pattern(tets, n_nodes, node_map=None):
    """CSR pattern of the 3n x 3n tangent (or of its rows and columns of the kept nodes) and the scatter map.

    ``node_map (n,) int`` (optional) renumbers the nodes: ``node_map[i] >= 0`` is node i's index in the
    pattern, -1 drops its rows and columns (fixed nodes). Returns ``indptr (3k+1,)``, ``indices (nnz,)``
    (int32 when nnz fits, else int64), ``block_base (m, 16) int64`` and ``row_stride (n,) int64`` (indexed by
    the original node ids) such that entry (3a+i, 3b+k) of element e is stored at
    ``block_base[e, 4a+b] + i * row_stride[tets[e, a]] + k`` of ``data``; ``block_base`` is -1 for the
    blocks of a dropped node.
    """
    m = len(tets)
    if node_map is None:
        node_map = np.arange(n_nodes, dtype=np.int64)
    n_kept = int(node_map.max()) + 1 if len(node_map) else 0
    mapped = node_map[tets]
    rows = np.repeat(mapped, 4, axis=1)  # column 4a+b holds node a of the element
    cols = np.tile(mapped, (1, 4))  # column 4a+b holds node b
    kept = (rows >= 0) & (cols >= 0)
    pairs, pair_of_kept = np.unique(rows[kept] * n_kept + cols[kept], return_inverse=True)
    pair_row = pairs // n_kept
    pair_col = pairs % n_kept
    degree = np.bincount(pair_row, minlength=n_kept).astype(np.int64)
    node_ptr = np.zeros(n_kept + 1, dtype=np.int64)
    np.cumsum(degree, out=node_ptr[1:])
    nnz = 9 * int(node_ptr[-1])
    index_dtype = np.int32 if nnz < np.iinfo(np.int32).max else np.int64

    # dof row 3i+r starts at 9 node_ptr[i] + 3 r deg(i) and holds 3 deg(i) sorted columns
    indptr = np.empty(3 * n_kept + 1, dtype=np.int64)
    indptr[:-1] = (9 * node_ptr[:-1, None] + 3 * np.arange(3)[None, :] * degree[:, None]).ravel()
    indptr[-1] = nnz
    rank_in_row = np.arange(len(pairs)) - node_ptr[pair_row]  # position of the column node in its row
    pos = (9 * node_ptr[pair_row, None, None] + 3 * np.arange(3)[None, :, None] * degree[pair_row, None, None]
           + 3 * rank_in_row[:, None, None] + np.arange(3)[None, None, :])
    indices = np.empty(nnz, dtype=index_dtype)
    indices[pos.ravel()] = np.broadcast_to(3 * pair_col[:, None, None] + np.arange(3)[None, None, :],
                                           pos.shape).ravel()
    block_base = np.full((m, 16), -1, dtype=np.int64)
    kept_rows = rows[kept]
    block_base[kept] = 9 * node_ptr[kept_rows] + 3 * (pair_of_kept.reshape(-1) - node_ptr[kept_rows])
    row_stride = np.where(node_map >= 0, 3 * degree[np.maximum(node_map, 0)], 0).astype(np.int64)
    return indptr.astype(index_dtype), indices, block_base, row_stride


class TetElasticity:
    """Elastic internal forces and tangent of a linear tetrahedral mesh.

    Parameters
    ----------
    X : (n, 3) float64
        Rest positions [length].
    tets : (m, 4) int
        Node ids of each tetrahedron, positively oriented (det[X1-X0, X2-X0, X3-X0] > 0).
    model : str
        ``"linear"``, ``"corotational"``, ``"stvk"``, ``"neohookean"`` or ``"stable_neohookean"``
        (formulas in :mod:`mechanics.materials`).
    young, poisson : float or (m,) arrays
        Young's modulus E > 0 [stress] and Poisson's ratio nu in (-1, 0.5), per element if arrays.
    rotation_method : str
        Corotational element rotation R. SOFA TetrahedronFEMForceField's ``method`` names compute SOFA's
        formulas, each a current frame composed with the same frame at rest (Ds, Dm: current and rest edge
        matrices [x1-x0, x2-x0, x3-x0]):

        - ``"large"`` (SOFA's default): R = Q(x)^T Q(X), Q the Gram-Schmidt frame (rows) of the edges from
          node 0 to nodes 1 and 2;
        - ``"polar"``: R = polar(Ds) polar(Dm)^T, the polar factors of the current and rest edge matrices
          taken separately (a reflection for an inverted element);
        - ``"svd"``: as ``"polar"`` while det F >= 1e-6; below (inverted or too flat element) SOFA's
          SVD branch, the proper rotation U V^T of Ds^T Dm^-T composed with the rest frame.

        softsim's own, frame-invariant methods use the polar decomposition of F = Ds Dm^-1 itself:

        - ``"polarF"`` (default): R = polar(F), a reflection for an inverted element;
        - ``"svdF"``: the proper rotation U V^T of F's SVD (equal to ``"polarF"`` when det F > 0, robust to
          inversion).

        The SOFA methods depend on the node order and on the rest shape of each element (a homogeneous
        stretch rotates differently shaped elements differently, so they fail the patch test under a finite
        stretch), and their force is not the gradient of an energy; ``polarF`` and ``svdF`` give the
        same result for any node order and rest orientation, R^T F is symmetric so the force is the gradient
        of the corotated energy, and the exact tangent below exists for them. That is why ``polarF`` is the
        default; scenes transcribed from SOFA set the method of the SOFA scene. All five coincide for rigid
        motions. Ignored by the other models.
    spd_projection : bool
        Hyperelastic models (and the exact corotational tangent, below): clamp the negative eigenvalues of
        dP/dF (9x9) per element so that the tangent is positive semi-definite (not the exact derivative any
        more where it acts; default off, then the tangent is exact). Costs one 9x9 eigen-decomposition per
        element with an indefinite dP/dF. With ``corotational_tangent="exact"`` it clamps the negative
        (twist) eigenvalues of the analytic eigensystem of the corotated dP/dF at no extra cost; ignored by
        SOFA's corotational tangent, which is positive semi-definite already.
    corotational_tangent : str
        Corotational model only: ``"sofa"`` (default here; the scene's default is ``"exact"``: SOFA's
        R K0_e R^T, dR/dx neglected) or ``"exact"`` (the exact Jacobian of the force, so Newton converges
        quadratically: for ``polarF``/``svdF`` the Hessian of the corotated energy, for SOFA's ``large``,
        ``polar`` and ``svd`` the consistent Jacobian with the rotation's derivative, which is not symmetric).
        The forces are the same.

    Notes
    -----
    - corotational: f_e = -R K0_e (R^T x_e - X_e) and tangent R K0_e R^T. The tangent neglects dR/dx, so
      it is not the exact Jacobian of the force and Newton converges only linearly (as with SOFA), unless
      ``corotational_tangent="exact"``: then K_e = V dN^T (dP/dF) dN with the exact dP/dF of the corotated
      energy (McAdams et al. 2011; Smith et al. 2019's analytic eigensystem: scaling 2mu, 2mu, 2mu + 3lam,
      flips 2mu, twists 2mu + (2lam (tr S - 3) - 4mu)/(s_i + s_j)), indefinite when a twist eigenvalue is
      negative (large compression, inversion) unless ``spd_projection``.
      ``energy`` returns the corotated linear energy V Psi_lin(R^T F); for ``polarF`` and ``svdF`` on
      non-inverted elements the force is its exact negative gradient, for SOFA's methods it is not.
    - neohookean: undefined when det F <= 0; energy, forces and tangent entries of such elements are NaN
      (so a Newton solver detects divergence); no exception is raised.
    - stable_neohookean: defined for every F; its tangent is exact and may be indefinite under large
      compression (no SPD projection is applied).
    """

    def __init__(self, X, tets, *, model, young, poisson, rotation_method="polarF", spd_projection=False,
                 corotational_tangent="sofa"):
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != 3 or not np.all(np.isfinite(X)):
            raise ParameterError(f"X must be a finite (n, 3) array of rest positions, got shape {X.shape}")
        tets_arr = np.asarray(tets)
        if tets_arr.ndim != 2 or tets_arr.shape[1] != 4 or not np.issubdtype(tets_arr.dtype, np.integer):
            raise ParameterError(
                f"tets must be an (m, 4) integer array, got shape {tets_arr.shape} dtype {tets_arr.dtype}"
            )
        tets_arr = np.ascontiguousarray(tets_arr, dtype=np.int64)
        if tets_arr.size and (tets_arr.min() < 0 or tets_arr.max() >= len(X)):
            raise ParameterError(
                f"tets node ids must be in [0, {len(X) - 1}], got range [{tets_arr.min()}, {tets_arr.max()}]"
            )
        self.rest_positions = X
        self.tets = tets_arr
        self.n_nodes = len(X)
        self.n_dofs = 3 * self.n_nodes
        self.dm_inv, self.shape_gradients, self.volumes = rest_shape(X, tets_arr)
        indptr, indices, self._block_base, self._row_stride = _block_pattern(tets_arr, self.n_nodes)
        data = np.zeros(len(indices))
        self._K = sp.csr_matrix((data, indices, indptr), shape=(self.n_dofs, self.n_dofs), copy=False)
        self._second_buffers: tuple[np.ndarray, np.ndarray] | None = None
        self._free_scatter = None  # (fixed-set key, indptr, indices, (block_base, row_stride)) of K_free
        self._K.has_sorted_indices = True
        # rest frames R_0_1 (m, 3, 3) of SOFA's rotation methods, built when a method first needs them
        self._rest_frames: dict[str, np.ndarray] = {}
        self._rest_rotations = self.dm_inv  # the rotation methods of F read no rest frame (placeholder)
        self.model = None
        self.rotation_method = None
        self.spd_projection = False
        self.corotational_tangent = "sofa"
        logger.debug("TetElasticity: %d nodes, %d tets, nnz(K) = %d", self.n_nodes, len(tets_arr), len(data))
        self.set_material(model=model, young=young, poisson=poisson, rotation_method=rotation_method,
                          spd_projection=spd_projection, corotational_tangent=corotational_tangent)

    # ------------------------------------------------------------------ parameters
    @property
    def exact_tangent(self) -> bool:
        """True when :meth:`tangent` is the exact Jacobian of the force (every model but the corotational one
        with SOFA's tangent, which omits the derivative of the rotations, or with the SPD projection)."""
        return self.model != "corotational" or (self.corotational_tangent == "exact" and not self.spd_projection)

    @contextlib.contextmanager
    def definite_tangent(self):
        """Within the block, the tangent (every assembly call) is positive semi-definite: SOFA's R K0 R^T for the
        corotational model, dP/dF with its negative eigenvalues clamped per element for the hyperelastic ones
        (the linear model's is already). The forces are unchanged.

        Far from an equilibrium the exact tangent is often indefinite (a bent finger released, compressed
        elements): its Newton step is then no descent direction and the iterations wander. The constrained
        equilibrium takes its steps there with this tangent (:mod:`mechanics.equilibrium`)."""
        saved = (self.corotational_tangent, self.spd_projection)
        if self.model == "corotational":
            self.corotational_tangent = "sofa"
        elif self.model != "linear":
            self.spd_projection = True
        try:
            yield
        finally:
            self.corotational_tangent, self.spd_projection = saved

    @property
    def inversion_admissible(self) -> bool:
        """True when the model's forces are defined on an inverted element, so that an equilibrium with inverted
        elements is a solution of the model: the linear model, and the corotational one with SOFA's ``large``
        rotation (a frame of two edges, proper for any element) or an SVD rotation (``svd``, ``svdF``: a proper
        rotation by construction), as SOFA computes them. Not the hyperelastic laws (their energy is infinite at
        det F = 0) nor the polar rotations (an improper factor for det F < 0)."""
        return self.model == "linear" or (self.model == "corotational"
                                          and self.rotation_method in ("large", "svd", "svdF"))

    def set_material(self, *, model=None, young=None, poisson=None, rotation_method=None,
                     spd_projection=None, corotational_tangent=None):
        """Change the model and/or parameters live (the sparsity pattern is kept). ``None`` keeps a value.

        Raises ParameterError (and changes nothing) for an unknown name, a bad E or nu, or
        ``corotational_tangent="exact"`` with the corotational model and one of SOFA's rotation methods.
        """
        new_model = self.model if model is None else model
        new_rotation = self.rotation_method if rotation_method is None else rotation_method
        new_tangent = self.corotational_tangent if corotational_tangent is None else corotational_tangent
        check_model(new_model, new_rotation)
        check_corotational_tangent(new_tangent, new_model, new_rotation)
        if young is not None or poisson is not None:
            e = self.young if young is None else young
            nu = self.poisson if poisson is None else poisson
            self.young, self.poisson, self.mu, self.lam = element_parameters(e, nu, len(self.tets))
        self.model = new_model
        self.rotation_method = new_rotation
        self._rest_rotations = self._rest_frame(new_rotation)
        self.corotational_tangent = new_tangent
        if spd_projection is not None:
            self.spd_projection = bool(spd_projection)
        self._forces_memo = []  # the parameters changed: forget the last (x, f_int) pairs
        if self.model == "stable_neohookean":
            mu_p, lam_p, _ = stable_neohookean_parameters(self.mu, self.lam)
            self._kernel_mu, self._kernel_lam = np.ascontiguousarray(mu_p), np.ascontiguousarray(lam_p)
        else:
            self._kernel_mu, self._kernel_lam = self.mu, self.lam

    def _rest_frame(self, rotation_method):
        """Rest frames R_0_1 (m, 3, 3) of a SOFA rotation method (computed once); ``dm_inv`` (never read)
        for the others."""
        kind = {"large": "large", "polar": "polar", "svd": "polar"}.get(rotation_method)
        if kind is None:
            return self.dm_inv
        if kind not in self._rest_frames:
            nodes = self.rest_positions[self.tets]
            frames = edge_frames(nodes) if kind == "large" else polar_frames(nodes)
            self._rest_frames[kind] = np.ascontiguousarray(frames)
        return self._rest_frames[kind]

    def _positions(self, x):
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (self.n_nodes, 3):
            if x.shape == (self.n_dofs,):
                return x.reshape(self.n_nodes, 3)
            raise ParameterError(f"x must have shape ({self.n_nodes}, 3) or ({self.n_dofs},), got {x.shape}")
        return x

    def _run(self, x, want_f, want_K, data=None, scatter=None):
        """One fused pass; returns ``(psi (m,), f (n, 3) or empty)``; fills ``data`` (``self._K.data`` by
        default) through ``scatter = (block_base, row_stride)`` (the full tangent's map by default) if
        ``want_K``.

        Meshes of at least PARALLEL_MIN_TETS elements are split into two halves assembled in two threads (the
        numba kernel releases the GIL), each into its own force and K-value buffers, summed afterwards.
        """
        x = self._positions(x)
        m = len(self.tets)
        psi = np.empty(m)
        f = np.empty((self.n_nodes, 3)) if want_f else np.empty((0, 3))
        if data is None:
            data, scatter = self._K.data, (self._block_base, self._row_stride)
        if not want_K:
            data = np.empty(0)
        if m < self.PARALLEL_MIN_TETS or not (want_f or want_K) or not _two_threads:
            self._assemble_range(x, 0, m, want_f, want_K, psi, f, data, scatter)
            return psi, f
        half = m // 2
        if self._second_buffers is None:
            self._second_buffers = (np.empty((self.n_nodes, 3)), np.empty_like(self._K.data))
        f2 = self._second_buffers[0] if want_f else f
        data2 = self._second_buffers[1][: len(data)] if want_K else data
        second = _ASSEMBLY_POOL.submit(self._assemble_range, x, half, m, want_f, want_K, psi, f2, data2, scatter)
        self._assemble_range(x, 0, half, want_f, want_K, psi, f, data, scatter)
        second.result()
        if want_f:
            f += f2
        if want_K:
            data += data2
        return psi, f

    #: element count from which the assembly runs in two threads: from about 500 elements for an exact
    #: corotational tangent, from about 1000 for the cheaper passes, the force alone included (below that,
    #: handing half to the pool thread costs what it saves; benchmarks/RESULTS_equilibrium.md, ninth session)
    PARALLEL_MIN_TETS = 1000

    def _assemble_range(self, x, start, stop, want_f, want_K, psi, f, data, scatter) -> None:
        """The kernel on elements [start, stop): psi[start:stop], and f and data (zeroed first) in full."""
        part = slice(start, stop)
        block_base, row_stride = scatter
        _kernels.assemble(
            _kernels.MODEL_CODES[self.model], _kernels.ROTATION_CODES[self.rotation_method], x, self.tets[part],
            self.shape_gradients[part], self.volumes[part], self._kernel_mu[part], self._kernel_lam[part],
            self._rest_rotations[part], self.dm_inv[part], want_f, want_K, psi[part], f, data, block_base[part],
            row_stride, self.spd_projection, self.corotational_tangent == "exact",
        )

    # ------------------------------------------------------------------ evaluation
    def energy(self, x):
        """Total elastic energy sum_e V_e Psi(F_e) [energy] at positions x (n, 3). NaN if undefined."""
        psi, _ = self._run(x, False, False)
        return float(np.dot(self.volumes, psi))

    def strain_energy_density(self, x):
        """Energy density Psi per element (m,) [energy / rest volume]."""
        return self._run(x, False, False)[0]

    #: (x, f_int) pairs kept, the last used first. A slider frame evaluates the free configuration (the last
    #: frame's, unchanged), the last equilibrium, the predicted state and one or two Newton iterates: with five
    #: kept, the next frame's free configuration and start are still there (two kept: one force assembly more per
    #: frame)
    FORCES_MEMO_SIZE = 5

    def _memoised_forces(self, x):
        for index, (memo_x, memo_f) in enumerate(self._forces_memo):
            if same_values(memo_x, x):
                if index:  # the last used first
                    self._forces_memo.insert(0, self._forces_memo.pop(index))
                return memo_f.copy()
        return None

    def _remember_forces(self, x, f) -> None:
        """Keep ``(x, f)`` first; an older pair at the same positions is dropped (the tangent's assembly at a
        state whose forces were just evaluated would otherwise hold two places)."""
        kept = [(memo_x, memo_f) for memo_x, memo_f in self._forces_memo if not same_values(memo_x, x)]
        self._forces_memo = [(x.copy(), f.copy())] + kept[: self.FORCES_MEMO_SIZE - 1]

    def forces(self, x):
        """Internal force f_int = -dE/dx (n, 3) [force] (the SOFA force for the corotational model).

        The last two evaluated ``(x, f_int)`` pairs are kept: a call at exactly the same positions (a converged
        static frame re-checking its free configuration) returns a copy without a pass over the elements.
        """
        x = self._positions(x)
        f = self._memoised_forces(x)
        if f is None:
            f = self._run(x, True, False)[1]
            self._remember_forces(x, f)
        return f

    def tangent(self, x):
        """Tangent stiffness K = -d f_int/dx, csr (3n, 3n).

        The same matrix object is returned on every call and its ``.data`` is overwritten by the next
        evaluation: copy it to keep values, and do not change its pattern in place.
        """
        self._run(x, False, True)
        return self._K

    def forces_and_tangent(self, x):
        """``(f_int (n, 3), K)`` in one pass over the elements (K is the shared csr object)."""
        x = self._positions(x)
        f = self._run(x, True, True)[1]
        self._remember_forces(x, f)
        return f, self._K

    def forces_of(self, x, elements, mu, lam):
        """The internal force (n, 3) [force] of the elements ``elements`` (k,) alone, with the Lame parameters
        ``mu`` and ``lam`` (k,) [stress] in place of the body's (the model and rotation method are the body's).

        Every model's force is linear in (mu, lam) (and the stable neo-Hookean one in its reparametrised
        mu', lam', linear maps of them), so the difference of two calls is an exact partial derivative of the
        force with respect to the parameters (:mod:`mechanics.sensitivity`)."""
        x = self._positions(x)
        elements = np.asarray(elements, dtype=np.int64).reshape(-1)
        mu = np.ascontiguousarray(np.broadcast_to(np.asarray(mu, dtype=np.float64), elements.shape))
        lam = np.ascontiguousarray(np.broadcast_to(np.asarray(lam, dtype=np.float64), elements.shape))
        if self.model == "stable_neohookean":
            mu, lam, _ = stable_neohookean_parameters(mu, lam)
        f = np.zeros((self.n_nodes, 3))
        if elements.size == 0:
            return f
        _kernels.assemble(
            _kernels.MODEL_CODES[self.model], _kernels.ROTATION_CODES[self.rotation_method], x,
            np.ascontiguousarray(self.tets[elements]), np.ascontiguousarray(self.shape_gradients[elements]),
            np.ascontiguousarray(self.volumes[elements]), np.ascontiguousarray(mu), np.ascontiguousarray(lam),
            np.ascontiguousarray(self._rest_rotations[elements]), np.ascontiguousarray(self.dm_inv[elements]), True,
            False, np.empty(elements.size), f, np.empty(0), np.ascontiguousarray(self._block_base[elements]),
            self._row_stride, self.spd_projection, self.corotational_tangent == "exact",
        )
        return f

    # ------------------------------------------------------------------ tangent on the free DOFs
    def free_tangent_pattern(self, fixed_nodes) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` of ``K[free][:, free]`` (the DOFs of the nodes not in ``fixed_nodes``, in
        their original order) and the scatter map that :meth:`forces_and_free_tangent` writes through.

        Assembling straight into the free-DOF matrix saves gathering it from the full tangent on every
        Newton iteration. The map of the last fixed set asked for is kept (built again for another set).
        """
        fixed = np.unique(np.asarray(fixed_nodes, dtype=np.int64).reshape(-1))
        key = fixed.tobytes()
        if self._free_scatter is None or self._free_scatter[0] != key:
            node_map = np.zeros(self.n_nodes, dtype=np.int64)
            node_map[fixed] = -1
            free = node_map == 0
            node_map[free] = np.arange(int(free.sum()))
            indptr, indices, block_base, row_stride = _block_pattern(self.tets, self.n_nodes, node_map)
            self._free_scatter = (key, indptr, indices, (np.ascontiguousarray(block_base), row_stride))
        return self._free_scatter[1], self._free_scatter[2]

    def forces_and_free_tangent(self, x, data, *, want_forces=True):
        """Write the values of ``K[free][:, free]`` (pattern of :meth:`free_tangent_pattern`, called first)
        into ``data (nnz_free,)``; return f_int (n, 3), or None when ``want_forces`` is false."""
        if self._free_scatter is None or len(data) != len(self._free_scatter[2]):
            raise ParameterError("forces_and_free_tangent: call free_tangent_pattern first and pass a value "
                                 "array of its length")
        x = self._positions(x)
        f = self._run(x, want_forces, True, data, self._free_scatter[3])[1]
        if not want_forces:
            return None
        self._remember_forces(x, f)
        return f

    def cauchy_stress(self, x):
        """Cauchy stress per element (m, 3, 3) [stress] (small-strain stress for linear, rotated for
        corotational, P F^T / J for the hyperelastic models)."""
        x = self._positions(x)
        sigma = np.empty((len(self.tets), 3, 3))
        _kernels.cauchy_stress(
            _kernels.MODEL_CODES[self.model], _kernels.ROTATION_CODES[self.rotation_method], x, self.tets,
            self.shape_gradients, self._kernel_mu, self._kernel_lam, self._rest_rotations, self.dm_inv, sigma,
            np.empty(len(self.tets)),
        )
        return sigma

    def von_mises(self, x):
        """Von Mises equivalent of the Cauchy stress per element (m,) [stress]."""
        s = self.cauchy_stress(x)
        d = (s[:, 0, 0] - s[:, 1, 1]) ** 2 + (s[:, 1, 1] - s[:, 2, 2]) ** 2 + (s[:, 2, 2] - s[:, 0, 0]) ** 2
        shear = (0.25 * (s[:, 0, 1] + s[:, 1, 0]) ** 2 + 0.25 * (s[:, 1, 2] + s[:, 2, 1]) ** 2
                 + 0.25 * (s[:, 0, 2] + s[:, 2, 0]) ** 2)
        return np.sqrt(0.5 * d + 3.0 * shear)
