"""Constraint resolutions: how each block of rows projects its multipliers (SOFA ``ConstraintResolution``).

Every constraint model describes its rows with a :class:`Blocks` table; every constraint solver applies the
resolutions through the two kernels below, so a resolution has a single definition:

- :func:`resolve_block` (numba) is one Gauss-Seidel step on one block, used inside the BlockGaussSeidel and
  NNCG sweeps. As in SOFA, the violation ``d`` it receives already contains the block's own current force.
- :func:`project_all` (numpy) applies every block at once from the same ``d`` (the Jacobi step of
  ImprovedJacobi), optionally with a step factor (spectral correction).

Kinds (``d`` is the violation ``dfree + W f`` of a row, ``W_ii`` its diagonal compliance):

``EQUALITY`` (0)
    SOFA's Bilateral resolution: ``f -= (d - target) / W_ii``; a 3-row block uses the inverse of its 3x3
    diagonal block (Bilateral3Dof): ``f_b -= W_bb^-1 (d_b - target)``. ``target`` applies to every row of the
    block.
``BOUNDED`` (1)
    ``f -= (d - target) / W_ii`` then clamp ``f`` to ``[lo, hi]``. Unilateral contact is BOUNDED(0, 0, +inf);
    SoftRobots displacement-driven actuators (cable ``displacement``, cavity ``volumeGrowth``) are
    BOUNDED(target = imposed value, lo = min force or -inf, hi = max force or +inf).
``FORCE`` (2)
    SoftRobots force-driven actuators (cable ``force``, cavity ``pressure``): ``f = target`` unless the
    violation would then leave the displacement range ``[lo, hi]``, in which case ``d`` is driven to the
    violated bound.
    The test uses the violation the row would have with ``f = target``: ``d_if_F = d + W_aa (target - f)``.
    SOFA tests ``W_aa target + d`` instead, which counts the actuator's own contribution twice once
    ``f = target`` (``d`` already contains ``W_aa f``); the pressure version also lets the max test overwrite
    the min correction. Both are deliberate departures: here the fixed point is exactly "f = target and
    lo <= d <= hi, or d = lo with f >= target, or d = hi with f <= target".
``FRICTION`` (3)
    SOFA's UnilateralWithFriction on rows (n, t, s): ``f_n -= (d_n - target)/W_nn``; if ``f_n < 0`` the three
    forces are zeroed. Otherwise the tangential violations are corrected for the normal change
    (``d_t += W_nt df_n``, ``d_s += W_ns df_n``), ``f_t,s -= 2 d_t,s / (W_tt + W_ss)`` (mean tangential
    compliance) and ``(f_t, f_s)`` is scaled radially onto the disk of radius ``mu f_n``. ``lo``/``hi`` are
    unused.

A fixed point of every resolution is a solution of the constraint problem, which is what
:func:`complementarity_residual` measures (in displacement units, independently of any solver).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np

from softsim.mechanics.errors import ParameterError

logger = logging.getLogger(__name__)

EQUALITY = 0
BOUNDED = 1
FORCE = 2
FRICTION = 3
KIND_NAMES = {EQUALITY: "EQUALITY", BOUNDED: "BOUNDED", FORCE: "FORCE", FRICTION: "FRICTION"}


#: _VALID_KIND[k] is True for the kind codes of KIND_NAMES (a table lookup, cheaper than np.isin per frame)
_VALID_KIND = np.zeros(256, dtype=bool)
_VALID_KIND[list(KIND_NAMES)] = True


#: Blocks._index of layouts of at most _INDEX_MEMO_BLOCKS blocks, by layout (sizes and kinds); at most
#: _INDEX_MEMO_SIZE layouts (then forgotten at once)
_INDEX_MEMO: dict = {}
_INDEX_MEMO_BLOCKS = 256
_INDEX_MEMO_SIZE = 64


def _per_block(value, n: int, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        return np.full(n, float(array))
    array = array.reshape(-1)
    if array.size != n:
        raise ParameterError(f"Blocks: {name} has {array.size} values, expected 1 or {n} (one per block)")
    return array.copy()


@dataclass(eq=False)
class Blocks:
    """Resolution table of a constraint problem, one entry per block of consecutive rows.

    Attributes (``b`` blocks):
        start: (b,) int64, first row of each block; blocks are contiguous and ordered (start[0] = 0).
        size: (b,) int64, rows of each block: 1, or 3 for a 3-row EQUALITY or a FRICTION contact.
        kind: (b,) int8, one of EQUALITY, BOUNDED, FORCE, FRICTION.
        target: (b,) float64, imposed violation (EQUALITY, BOUNDED, FRICTION normal) or imposed force (FORCE).
        lo, hi: (b,) float64, force bounds (BOUNDED) or violation bounds (FORCE); may be infinite.
        mu: (b,) float64, Coulomb coefficient (FRICTION), >= 0.
    """

    start: np.ndarray
    size: np.ndarray
    kind: np.ndarray
    target: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    mu: np.ndarray

    def __post_init__(self) -> None:
        self.size = np.ascontiguousarray(self.size, dtype=np.int64).reshape(-1)
        n = self.size.size
        self.start = np.ascontiguousarray(self.start, dtype=np.int64).reshape(-1)
        self.kind = np.ascontiguousarray(self.kind, dtype=np.int8).reshape(-1)
        self._set_values(self.target, self.lo, self.hi, self.mu)
        if self.start.size != n or self.kind.size != n:
            raise ParameterError(
                f"Blocks: start ({self.start.size}), size ({n}) and kind ({self.kind.size}) "
                "must have one entry per block"
            )
        if n == 0:
            return
        expected = np.concatenate(([0], np.cumsum(self.size)[:-1]))
        if not np.array_equal(self.start, expected):
            raise ParameterError("Blocks: start must be contiguous from 0 (start[k+1] = start[k] + size[k])")
        if not np.all(_VALID_KIND[self.kind.astype(np.int64) & 0xFF] & (self.kind >= 0)):
            raise ParameterError(
                f"Blocks: kind must be in {sorted(KIND_NAMES)} (EQUALITY, BOUNDED, FORCE, FRICTION)"
            )
        three = self.size == 3
        if not np.all((self.size == 1) | three):
            raise ParameterError("Blocks: size must be 1 or 3")
        if np.any(three & (self.kind != EQUALITY) & (self.kind != FRICTION)):
            raise ParameterError("Blocks: only EQUALITY and FRICTION blocks may have 3 rows")
        if np.any((self.kind == FRICTION) & ~three):
            raise ParameterError("Blocks: a FRICTION block has exactly 3 rows (n, t, s)")
        self._check_values()

    def _set_values(self, target, lo, hi, mu) -> None:
        """The per-block values (b,) from scalars or arrays, ``b`` = ``self.size.size``."""
        n = self.size.size
        self.target = _per_block(target, n, "target")
        self.lo = _per_block(lo, n, "lo")
        self.hi = _per_block(hi, n, "hi")
        self.mu = _per_block(mu, n, "mu")

    def _check_values(self) -> None:
        """Raise ParameterError unless lo <= hi (no NaN), the targets are finite and mu is finite and >= 0."""
        # array methods, not np.any / np.all: their wrappers cost more than the checks on a frame's few blocks
        if (np.isnan(self.lo) | np.isnan(self.hi)).any() or (self.lo > self.hi).any():
            raise ParameterError("Blocks: lo must be <= hi (no NaN)")
        if not np.isfinite(self.target).all():
            raise ParameterError("Blocks: target must be finite")
        if not (np.isfinite(self.mu) & (self.mu >= 0)).all():
            raise ParameterError("Blocks: mu must be finite and >= 0")

    # ------------------------------------------------------------------ sizes
    @property
    def n_rows(self) -> int:
        """Total number of scalar constraint rows."""
        return int(self.size.sum())

    @property
    def n_blocks(self) -> int:
        return int(self.size.size)

    def __len__(self) -> int:
        return self.n_blocks

    # ------------------------------------------------------------------ constructors
    @classmethod
    def _structured(cls, start, size, kind, target, lo, hi, mu) -> Blocks:
        """Blocks whose structure (start, size, kind: arrays of the right types) is valid by construction; only
        the values are checked. The constructors below and :meth:`concatenate` build every frame's rows (8 per
        step on the trunk): the full structural check of ``__post_init__`` cost more than the rows' Jacobians."""
        blocks = object.__new__(cls)
        blocks.start, blocks.size, blocks.kind = start, size, kind
        blocks._set_values(target, lo, hi, mu)
        blocks._check_values()
        return blocks

    @classmethod
    def _uniform(cls, n_blocks: int, block_size: int, kind: int, target, lo, hi, mu=0.0) -> Blocks:
        if int(n_blocks) != n_blocks or n_blocks < 0:
            raise ParameterError(f"Blocks: number of blocks must be an integer >= 0, got {n_blocks}")
        n_blocks = int(n_blocks)
        return cls._structured(
            np.arange(n_blocks, dtype=np.int64) * block_size,
            np.full(n_blocks, block_size, dtype=np.int64),
            np.full(n_blocks, kind, np.int8),
            target,
            lo,
            hi,
            mu,
        )

    @classmethod
    def empty(cls) -> Blocks:
        return cls._uniform(0, 1, EQUALITY, 0.0, -np.inf, np.inf)

    @classmethod
    def equality(cls, n_rows: int, target=0.0, *, block_size: int = 1) -> Blocks:
        """Bilateral rows: ``n_rows`` 1-row blocks, or ``n_rows / 3`` Bilateral3Dof blocks if
        block_size is 3.
        """
        if block_size not in (1, 3) or n_rows % block_size:
            raise ParameterError(f"Blocks.equality: block_size must be 1 or 3 and divide n_rows={n_rows}")
        return cls._uniform(n_rows // block_size, block_size, EQUALITY, target, -np.inf, np.inf)

    @classmethod
    def bounded(cls, n_rows: int, target=0.0, lo=-np.inf, hi=np.inf) -> Blocks:
        """1-row blocks ``f -= (d - target)/W_ii`` clamped to ``[lo, hi]`` (scalars or (n_rows,) arrays)."""
        return cls._uniform(n_rows, 1, BOUNDED, target, lo, hi)

    @classmethod
    def unilateral(cls, n_rows: int) -> Blocks:
        """Frictionless contact rows: d >= 0, f >= 0, f d = 0."""
        return cls._uniform(n_rows, 1, BOUNDED, 0.0, 0.0, np.inf)

    @classmethod
    def force(cls, n_rows: int, target=0.0, lo=-np.inf, hi=np.inf) -> Blocks:
        """Force-driven rows: f = target while the violation stays in ``[lo, hi]``."""
        return cls._uniform(n_rows, 1, FORCE, target, lo, hi)

    @classmethod
    def friction(cls, n_contacts: int, mu, target=0.0) -> Blocks:
        """Unilateral contacts with Coulomb friction, rows (n, t, s) per contact; ``mu`` scalar or
        (n_contacts,).
        """
        return cls._uniform(n_contacts, 3, FRICTION, target, 0.0, np.inf, mu)

    @classmethod
    def concatenate(cls, parts: list[Blocks]) -> Blocks:
        """Stack the blocks of several constraints; the row offsets follow the order of ``parts``. The parts'
        values were checked when they were made: one part is returned as it is, several are not checked again."""
        parts = list(parts)
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        size = np.concatenate([p.size for p in parts])
        start = np.zeros(size.size, dtype=np.int64)
        np.cumsum(size[:-1], out=start[1:])
        return cls._trusted(
            start,
            size,
            np.concatenate([p.kind for p in parts]),
            *(np.concatenate([getattr(p, name) for p in parts]) for name in ("target", "lo", "hi", "mu")),
        )

    @classmethod
    def _trusted(cls, start, size, kind, target, lo, hi, mu) -> Blocks:
        """Blocks from arrays (b,) of the right types that are valid already (parts of checked Blocks)."""
        blocks = object.__new__(cls)
        blocks.start, blocks.size, blocks.kind = start, size, kind
        blocks.target, blocks.lo, blocks.hi, blocks.mu = target, lo, hi, mu
        return blocks

    def part(self, first: int, stop: int) -> Blocks:
        """The blocks ``first`` to ``stop - 1`` as a table of their own (rows renumbered from 0)."""
        start = self.start[first:stop] - (self.start[first] if stop > first else 0)
        return self._trusted(start, self.size[first:stop].copy(), self.kind[first:stop].copy(),
                             *(getattr(self, name)[first:stop].copy() for name in ("target", "lo", "hi", "mu")))

    # ------------------------------------------------------------------ derived indices (cached)
    @cached_property
    def row_block(self) -> np.ndarray:
        """(n_rows,) int64: block id of each row."""
        return np.repeat(np.arange(self.n_blocks, dtype=np.int64), self.size)

    @cached_property
    def block_end(self) -> np.ndarray:
        """(b,) int64: one past the last row of each block."""
        return self.start + self.size

    @cached_property
    def _index(self) -> dict[str, np.ndarray]:
        """The blocks of each kind (shared by the tables of the same layout: a frame makes a new table per build of
        its rows, with the same kinds; read only)."""
        key = None
        if self.size.size <= _INDEX_MEMO_BLOCKS:
            key = (self.size.tobytes(), self.kind.tobytes())
            found = _INDEX_MEMO.get(key)
            if found is not None:
                return found
        index = self._kinds()
        if key is not None:
            if len(_INDEX_MEMO) >= _INDEX_MEMO_SIZE:
                _INDEX_MEMO.clear()
            _INDEX_MEMO[key] = index
        return index

    def _kinds(self) -> dict[str, np.ndarray]:
        one = self.size == 1
        return {
            "eq1": np.flatnonzero(one & (self.kind == EQUALITY)),
            "bnd": np.flatnonzero(self.kind == BOUNDED),
            "force": np.flatnonzero(self.kind == FORCE),
            "eq3": np.flatnonzero(~one & (self.kind == EQUALITY)),
            "fric": np.flatnonzero(self.kind == FRICTION),
        }

    @property
    def has_friction(self) -> bool:
        return self._index["fric"].size > 0

    def local_inverses(self, W: np.ndarray) -> np.ndarray:
        """(b, 3, 3) inverses of the diagonal 3x3 blocks of W for the 3-row EQUALITY blocks (zeros elsewhere).

        A singular block (SOFA asserts) falls back to its pseudo-inverse, with a warning."""
        inv = np.zeros((self.n_blocks, 3, 3))
        ids = self._index["eq3"]
        if ids.size:
            rows = self.start[ids][:, None] + np.arange(3)
            sub = W[rows[:, :, None], rows[:, None, :]]
            cond = np.linalg.cond(sub)
            bad = ~np.isfinite(cond) | (cond > 1e14)
            if np.any(bad):
                logger.warning("%d singular 3x3 bilateral block(s): using the pseudo-inverse", int(bad.sum()))
            inv[ids] = np.where(
                bad[:, None, None],
                np.linalg.pinv(sub),
                np.linalg.inv(np.where(bad[:, None, None], np.eye(3), sub)),
            )
        return inv

    def describe(self) -> str:
        counts = {KIND_NAMES[k]: int(np.sum(self.kind == k)) for k in KIND_NAMES}
        return (
            f"Blocks({self.n_blocks} blocks, {self.n_rows} rows, "
            + ", ".join(f"{k}={v}" for k, v in counts.items() if v)
            + ")"
        )

    __repr__ = describe


# ---------------------------------------------------------------------- Gauss-Seidel kernel (one block)
@numba.njit(cache=True, nogil=True)
def resolve_block(k, W, d_local, f, start, size, kind, target, lo, hi, mu, inv3):
    """One resolution step on block ``k``: update ``f[start[k]:start[k]+size[k]]`` in place.

    ``d_local`` (3,) holds the block's violations ``dfree + W f`` (current f included); it is overwritten."""
    j = start[k]
    kd = kind[k]
    if kd == EQUALITY:
        if size[k] == 1:
            f[j] -= (d_local[0] - target[k]) / W[j, j]
        else:
            r0 = d_local[0] - target[k]
            r1 = d_local[1] - target[k]
            r2 = d_local[2] - target[k]
            for l in range(3):
                f[j + l] -= inv3[k, l, 0] * r0 + inv3[k, l, 1] * r1 + inv3[k, l, 2] * r2
    elif kd == BOUNDED:
        value = f[j] - (d_local[0] - target[k]) / W[j, j]
        if value < lo[k]:
            value = lo[k]
        if value > hi[k]:
            value = hi[k]
        f[j] = value
    elif kd == FORCE:
        waa = W[j, j]
        d_if_target = d_local[0] + waa * (target[k] - f[j])
        if d_if_target < lo[k]:
            f[j] -= (d_local[0] - lo[k]) / waa
        elif d_if_target > hi[k]:
            f[j] -= (d_local[0] - hi[k]) / waa
        else:
            f[j] = target[k]
    else:
        fn_old = f[j]
        fn = fn_old - (d_local[0] - target[k]) / W[j, j]
        if fn < 0.0:
            f[j] = 0.0
            f[j + 1] = 0.0
            f[j + 2] = 0.0
            return
        dfn = fn - fn_old
        dt = d_local[1] + W[j + 1, j] * dfn
        ds = d_local[2] + W[j + 2, j] * dfn
        mean = 2.0 / (W[j + 1, j + 1] + W[j + 2, j + 2])
        ft = f[j + 1] - mean * dt
        fs = f[j + 2] - mean * ds
        radius = mu[k] * fn
        norm = np.sqrt(ft * ft + fs * fs)
        if norm > radius:
            scale = radius / norm if norm > 0.0 else 0.0
            ft *= scale
            fs *= scale
        f[j] = fn
        f[j + 1] = ft
        f[j + 2] = fs


# ---------------------------------------------------------------------- Jacobi step (all blocks, vectorised)
def project_all(
    blocks: Blocks,
    W: np.ndarray,
    w_diag: np.ndarray,
    inv3: np.ndarray,
    f: np.ndarray,
    d: np.ndarray,
    step: float = 1.0,
) -> np.ndarray:
    """Apply every block's resolution from the same violation ``d`` (m,); returns the new forces (m,).

    ``w_diag`` (m,) = diag(W), ``inv3`` from :meth:`Blocks.local_inverses`. With ``step = 1`` these are the
    formulas of resolve_block. ``step`` (ImprovedJacobi's rho) scales every correction
    (``f -= step (d - target)/W_ii``, the FORCE move towards a bound, both friction steps) while the tests
    (clamps, FORCE bound test, separation, cone) use the true ``d``: the fixed point stays the solution.
    SOFA instead hands ``rho d`` to the resolutions, whose fixed point is then ``d = target / rho`` for any
    row with a nonzero target (displacement-driven actuators, FORCE bounds)."""
    index = blocks._index
    out = f.copy()
    start = blocks.start
    ids = index["eq1"]
    if ids.size:
        r = start[ids]
        out[r] = f[r] - step * (d[r] - blocks.target[ids]) / w_diag[r]
    ids = index["bnd"]
    if ids.size:
        r = start[ids]
        out[r] = np.clip(
            f[r] - step * (d[r] - blocks.target[ids]) / w_diag[r], blocks.lo[ids], blocks.hi[ids]
        )
    ids = index["force"]
    if ids.size:
        r = start[ids]
        waa = w_diag[r]
        d_if_target = d[r] + waa * (blocks.target[ids] - f[r])
        below = d_if_target < blocks.lo[ids]
        above = ~below & (d_if_target > blocks.hi[ids])
        value = blocks.target[ids].copy()
        value[below] = f[r][below] - step * (d[r][below] - blocks.lo[ids][below]) / waa[below]
        value[above] = f[r][above] - step * (d[r][above] - blocks.hi[ids][above]) / waa[above]
        out[r] = value
    ids = index["eq3"]
    if ids.size:
        rows = start[ids][:, None] + np.arange(3)
        residual = d[rows] - blocks.target[ids][:, None]
        out[rows] = f[rows] - step * np.einsum("bij,bj->bi", inv3[ids], residual)
    ids = index["fric"]
    if ids.size:
        n = start[ids]
        t, s = n + 1, n + 2
        fn_old = f[n]
        fn = fn_old - step * (d[n] - blocks.target[ids]) / w_diag[n]
        dfn = fn - fn_old
        mean = step * 2.0 / (w_diag[t] + w_diag[s])
        ft = f[t] - mean * (d[t] + W[t, n] * dfn)
        fs = f[s] - mean * (d[s] + W[s, n] * dfn)
        radius = blocks.mu[ids] * fn
        norm = np.hypot(ft, fs)
        scale = np.where(norm > radius, np.divide(radius, norm, out=np.zeros_like(norm), where=norm > 0), 1.0)
        separated = fn < 0.0
        out[n] = np.where(separated, 0.0, fn)
        out[t] = np.where(separated, 0.0, ft * scale)
        out[s] = np.where(separated, 0.0, fs * scale)
    return out


def slack_at_bound(f: np.ndarray, gap: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For BOUNDED laws, with the multipliers ``f``, the violations ``gap = d - target`` and the force bounds
    ``lo``, ``hi`` (arrays of one shape): ``(held at lo, held at hi)``, bool arrays of that shape. A row is held at
    lo when its multiplier sits on lo and its law is slack (gap > 0: a cable that cannot push, shortened by the
    body past its value), at hi when it sits on hi with gap < 0. Its law then holds whatever its target within
    the slack."""
    return (f <= lo) & (gap > 0.0), (f >= hi) & (gap < 0.0)


def complementarity_residual(W: np.ndarray, dfree: np.ndarray, f: np.ndarray, blocks: Blocks) -> float:
    """Largest violation of the constraint laws by ``f``, in displacement units (0 at an exact solution).

    Row residuals: EQUALITY ``|d - target|``; BOUNDED and FRICTION normal
    ``W_ii |f - proj(f - (d-target)/W_ii)|`` (the natural-map residual: zero iff ``lo <= f <= hi`` and
    ``d - target`` has the complementary sign);
    FORCE ``W_aa |f - resolution(f)|``; FRICTION tangential ``(W_tt+W_ss)/2 |f_t - proj_disk(f_t - d_t/w)|``
    with the disk of radius ``mu f_n`` (zero iff sticking with d_t = 0 or sliding on the cone edge with
    d_t opposite to f_t). Uses the true W (no regularization)."""
    W = np.asarray(W, dtype=np.float64)
    f = np.asarray(f, dtype=np.float64)
    if blocks.n_rows == 0:
        return 0.0
    return float(row_residuals(np.diag(W).copy(), dfree + W @ f, f, blocks).max())


def row_residuals(w_diag: np.ndarray, d: np.ndarray, f: np.ndarray, blocks: Blocks) -> np.ndarray:
    """Per-row residuals ``(m,)`` of the constraint laws (see :func:`complementarity_residual`) for the
    violations ``d`` (m,) that the rows have *with* the forces ``f`` (m,) applied; ``w_diag`` (m,) > 0 is the
    diagonal of W. The residual is zero at a solution whatever positive ``w_diag`` is used, so the diagonal
    of a W computed at a nearby state serves as well (the frame step checks a new state with the last W)."""
    residual = np.zeros(blocks.n_rows)
    index = blocks._index
    start = blocks.start
    for key in ("eq1", "eq3"):
        ids = index[key]
        if ids.size:
            rows = (start[ids][:, None] + np.arange(blocks.size[ids[0]])).ravel()
            residual[rows] = np.abs(d[rows] - np.repeat(blocks.target[ids], blocks.size[ids[0]]))
    ids = index["bnd"]
    if ids.size:
        r = start[ids]
        projected = np.clip(f[r] - (d[r] - blocks.target[ids]) / w_diag[r], blocks.lo[ids], blocks.hi[ids])
        residual[r] = w_diag[r] * np.abs(f[r] - projected)
    ids = index["force"]
    if ids.size:
        r = start[ids]
        sub = Blocks.force(ids.size, blocks.target[ids], blocks.lo[ids], blocks.hi[ids])
        moved = project_all(sub, np.diag(w_diag[r]), w_diag[r], np.zeros((ids.size, 3, 3)), f[r], d[r])
        residual[r] = w_diag[r] * np.abs(f[r] - moved)
    ids = index["fric"]
    if ids.size:
        n = start[ids]
        t, s = n + 1, n + 2
        fn_proj = np.maximum(0.0, f[n] - (d[n] - blocks.target[ids]) / w_diag[n])
        residual[n] = w_diag[n] * np.abs(f[n] - fn_proj)
        mean = 0.5 * (w_diag[t] + w_diag[s])
        gt = f[t] - d[t] / mean
        gs = f[s] - d[s] / mean
        radius = blocks.mu[ids] * np.maximum(f[n], 0.0)
        norm = np.hypot(gt, gs)
        scale = np.where(norm > radius, np.divide(radius, norm, out=np.zeros_like(norm), where=norm > 0), 1.0)
        residual[t] = mean * np.hypot(f[t] - gt * scale, f[s] - gs * scale)
        residual[s] = residual[t]
    return residual
