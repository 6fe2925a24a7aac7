"""The errors of the sensitivities: a frame without a gradient says why."""

from __future__ import annotations

from softsim.mechanics.errors import ParameterError


class GradientError(ParameterError):
    """No gradient can be given for this frame or this request (the message says why)."""


class NotConvergedError(GradientError):
    """The last frame did not converge (or none was solved): its state is no equilibrium, so the implicit
    function theorem does not apply."""


class NotDifferentiableError(GradientError):
    """The equilibrium sits on a point where the outputs are not differentiable: a contact or a bounded actuator
    on the edge of changing state, or a sliding friction contact. ``points`` lists them in words."""

    def __init__(self, points: list[str]) -> None:
        self.points = list(points)
        shown = "; ".join(self.points[:5]) + (f"; and {len(self.points) - 5} more" if len(self.points) > 5 else "")
        super().__init__(f"the equilibrium is a non-differentiable point: {shown}")

    def __reduce__(self):  # rebuilt from its points when it crosses a process boundary
        return type(self), (self.points,)


def solved_frame(sim):
    """The last frame's report of Simulation ``sim`` if it can have a gradient: a frame was solved, it
    converged and nothing was edited since; else the typed error saying why not."""
    report = sim.last_report
    if report is None:
        raise NotConvergedError("no frame has been solved yet: gradients are taken at a converged frame "
                                "(call step() first)")
    if not report.converged:
        reason = report.message or report.status
        raise NotConvergedError(f"frame {report.frame} did not converge ({report.status}: {reason}): it is no "
                                "equilibrium, so it has no gradient")
    if sim.edited:
        raise GradientError("a value changed after the last frame: solve a frame (step()) before asking for "
                            "gradients")
    return report
