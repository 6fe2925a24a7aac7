"""Shared parts of the constraint solvers: SOFA's common parameters, validation, the report and the pipeline.

Every solver solves, for the multipliers ``f`` (m,), the problem ``d = dfree + W f`` where each block of rows
obeys its resolution law (:mod:`mechanics.resolutions`). ``W`` (m, m) is the dense compliance in constraint
space (SOFA's built W), ``dfree`` (m,) the violation at the free configuration.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from softsim.mechanics.constraint_solvers.elimination import eliminate_equalities, solve_equalities
from softsim.mechanics.errors import ParameterError
from softsim.mechanics.resolutions import EQUALITY, Blocks
from softsim.mechanics.scene.schema import ConstraintSpec, check_parameters, declarations, defaults

logger = logging.getLogger(__name__)


@dataclass
class ConstraintReport:
    """Result of one constraint solve: SOFA's outputs, under snake_case names (SOFA's data fields
    currentIterations, currentError, graphErrors, currentNumConstraints, currentNumConstraintGroups and
    constraintForces are ``iterations``, ``error``, ``error_history``, ``num_constraints``,
    ``num_constraint_groups`` and ``constraint_forces``).

    force: (m,) multipliers lambda. violation: (m,) ``d = dfree + W f`` with the W given to ``solve`` (without
    regularization). iterations: sweeps/iterations done (exact count, see each solver for SOFA's
    convention). error: the solver's own error measure at the end (displacement units).
    error_history: (iterations,) error after each iteration (SOFA's computeGraphs; always filled here,
    it costs one float per iteration). time: wall time of the solve in seconds.
    constraint_forces: copy of force when computeConstraintForces is true, else None.
    """

    force: np.ndarray
    violation: np.ndarray
    iterations: int
    error: float
    converged: bool
    error_history: np.ndarray
    time: float
    num_constraints: int = 0
    num_constraint_groups: int = 0
    constraint_forces: np.ndarray | None = None
    solver: str = ""


def solver_keys(type_name: str) -> set[str]:
    """The ``[solver.constraint]`` keys a solver type uses (declared in :class:`ConstraintSpec`)."""
    return {d.key for d in declarations(ConstraintSpec)
            if d.key != "type" and (d.when is None or type_name in d.when.values)}


class ConstraintSolver:
    """Base class: parameters (SOFA names, validated), input checks, regularization and the report."""

    type_name = "ConstraintSolver"

    def __init__(self, **params) -> None:
        self._keys = solver_keys(self.type_name)
        self._values = defaults(ConstraintSpec, self._keys)
        self.set_parameters(**params)

    # ------------------------------------------------------------------ parameters
    def set_parameters(self, **params) -> None:
        """Validate and set parameters (the ``[solver.constraint]`` keys of this type, declared in
        :class:`mechanics.scene.schema.ConstraintSpec`); they take effect on the next solve.

        Raises ParameterError naming the key and its range; nothing is changed if any value is invalid."""
        checked = check_parameters(ConstraintSpec, self.type_name, params, allowed=self._keys)
        self._values.update(checked)

    @property
    def parameters(self) -> dict:
        return dict(self._values)

    def __getattr__(self, name: str):
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(name)

    def effective_tolerance(self, n_rows: int) -> float:
        """SOFA: ``tolerance * n`` when scaleTolerance and not allVerified, else ``tolerance``."""
        tol = self._values["tolerance"]
        if self._values["scaleTolerance"] and not self._values["allVerified"]:
            tol *= n_rows
        return tol

    # ------------------------------------------------------------------ pipeline
    def solve(
        self, W: np.ndarray, dfree: np.ndarray, blocks: Blocks, *, initial_force: np.ndarray | None = None
    ) -> ConstraintReport:
        """Solve for the multipliers; W (m, m), dfree (m,), blocks with m rows, initial_force (m,)
        warm start.
        """
        started = time.perf_counter()
        W = np.ascontiguousarray(W, dtype=np.float64)
        dfree = np.ascontiguousarray(dfree, dtype=np.float64).reshape(-1)
        m = dfree.size
        if W.shape != (m, m):
            raise ParameterError(f"W must have shape ({m}, {m}) to match dfree, got {W.shape}")
        if blocks.n_rows != m:
            raise ParameterError(f"blocks describe {blocks.n_rows} rows but dfree has {m}")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(dfree))):
            raise ParameterError("W and dfree must be finite")
        if m and np.any(np.diag(W) <= 0.0):
            raise ParameterError(
                "W must have a positive diagonal (every constraint row needs compliance > 0)"
            )
        if initial_force is None:
            f0 = np.zeros(m)
        else:
            f0 = np.array(initial_force, dtype=np.float64).reshape(-1)
            if f0.size != m or not np.all(np.isfinite(f0)):
                raise ParameterError(
                    f"initial_force must be {m} finite values, got shape {np.shape(initial_force)}"
                )
        if m == 0:
            return self._report(np.zeros(0), np.zeros(0), 0, 0.0, True, np.zeros(0), started, blocks)
        reg = self._values["regularizationTerm"]
        W_solve = W + reg * np.eye(m) if reg > np.finfo(float).eps else W
        force, iterations, error, converged, graph = self._iterate(W_solve, dfree, blocks, f0)
        if not converged:
            logger.warning(
                "%s did not converge: error %.3g after %d iterations", self.type_name, error, iterations
            )
        return self._report(force, dfree + W @ force, iterations, error, converged, graph, started, blocks)

    def _solve(self, W, dfree, blocks, f0):  # pragma: no cover - abstract
        raise NotImplementedError

    def _iterate(self, W, dfree, blocks, f0):
        """The solve after ``solve``'s checks: on the reduced problem with ``eliminateEqualities`` when one can
        be formed, else on the whole problem. Returns (force, iterations, error, converged, graph)."""
        result = self._solve_eliminated(W, dfree, blocks, f0) if self._values.get("eliminateEqualities") else None
        return self._solve(W, dfree, blocks, f0) if result is None else result

    def _solve_eliminated(self, W, dfree, blocks, f0):
        """``eliminateEqualities``: the equality rows solved exactly (Cholesky of their block of W), the
        iterations on the Schur complement of the others (:mod:`.elimination`); None when nothing can be
        eliminated (the whole problem is then iterated on)."""
        if np.all(blocks.kind == EQUALITY):
            force = solve_equalities(W, dfree, blocks)
            return None if force is None else (force, 1, 0.0, True, np.zeros(1))
        reduced = eliminate_equalities(W, dfree, blocks)
        if reduced is None:
            return None
        force_r, iterations, error, converged, graph = self._solve(reduced.W_r, reduced.dfree_r, reduced.blocks_r,
                                                                    f0[reduced.rows_r])
        return reduced.expand(force_r), iterations, error, converged, graph

    def _report(
        self, force, violation, iterations, error, converged, graph, started, blocks
    ) -> ConstraintReport:
        return ConstraintReport(
            force=force,
            violation=violation,
            iterations=int(iterations),
            error=float(error),
            converged=bool(converged),
            error_history=np.asarray(graph, dtype=np.float64),
            time=time.perf_counter() - started,
            num_constraints=blocks.n_rows,
            num_constraint_groups=blocks.n_blocks,
            constraint_forces=force.copy() if self._values["computeConstraintForces"] else None,
            solver=self.type_name,
        )

    def __repr__(self) -> str:
        return f"{self.type_name}(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"
