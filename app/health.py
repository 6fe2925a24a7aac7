"""What is wrong with a frame, in words the window shows in its warning banner and status.

A frame is trustworthy when it ran, its nonlinear solve and its constraint solve converged, and every actuator
reached the value asked of it. :func:`frame_problems` lists what is not so, each with by how much.
"""

from __future__ import annotations

from dataclasses import dataclass

from softsim.mechanics.constraints.cable import cable_is_slack
from softsim.mechanics.equilibrium import percent
from softsim.mechanics.scene import actuators
from softsim.mechanics.units import output_quantity, unit_label

__all__ = ["Problem", "frame_problems"]


@dataclass(frozen=True)
class Problem:
    """``kind``: "failed" (the frame failed: the last good state is shown), "not_converged" (a solve stopped
    outside its tolerances), "actuator_limited" (an actuator short of its value) or "untrustworthy" (the frame
    converged, but its report notes why its state is not to be trusted: elements inverted, contact rows holding
    nodes away from the other body); ``text``: one line naming what and by how much."""

    kind: str
    text: str

    @property
    def level(self) -> str:
        """"error" for a failed frame, else "warning"."""
        return "error" if self.kind == "failed" else "warning"


def _unit(quantity: str, units: str | None) -> str:
    return "" if units is None else " " + unit_label(quantity, units)


def _nonlinear(report) -> Problem | None:
    if report.dynamic is not None:
        solve, name = report.dynamic, "the implicit time step"
    elif report.equilibrium is not None:
        solve, name = report.equilibrium, "the constrained equilibrium"
    else:
        solve, name = report.newton, "Newton"
    if solve is None or solve.converged:
        return None
    reason = getattr(solve, "reason", "") or getattr(solve, "message", "")
    return Problem("not_converged", f"{name} did not converge in {solve.iterations} iteration(s)"
                              + (f": {reason}" if reason else ""))


def _constraint(report, units: str | None) -> Problem | None:
    constraint = report.constraint
    if constraint is None or constraint.converged:
        return None
    solver = constraint.solver or "the constraint solver"
    return Problem("not_converged", f"{solver} did not converge: error {constraint.error:.3g}"
                              f"{_unit('length', units)} after {constraint.iterations} iteration(s)")


def _slack(kind: str, item, outputs: dict[str, float]) -> bool:
    """A cable told to shorten less than the body makes it (e.g. a passive cable at 0 while another bends the
    body) goes slack: it cannot push, its force stays at its lower bound. That is what a cable does, not a
    shortfall."""
    if kind != "cable" or item.valueType != "displacement":
        return False
    achieved, force = outputs.get(f"{item.name}.displacement"), outputs.get(f"{item.name}.force")
    if achieved is None or force is None:
        return False
    return cable_is_slack(achieved, float(item.value), force, item.minForce)


def _round_off(item, achieved: float, outputs: dict[str, float]) -> bool:
    """A shortfall within 1e-6 of the actuator's own scale (its cable's length, its cavity's volume, its
    target) is the solver's accuracy, not a limit: a cable at 0 that reads 7.7e-09 mm is at its target."""
    scale = {"displacement": outputs.get(f"{item.name}.cableLength", 0.0),
             "volumeGrowth": outputs.get(f"{item.name}.initialCavityVolume", 0.0)}.get(item.valueType, 0.0)
    target = float(item.value)
    return abs(achieved - target) <= 1e-6 * max(abs(scale), abs(target), abs(achieved))


#: per (actuator kind, value type): the rate limit key and the range bounds' keys
_RATE_KEYS = {("cable", "displacement"): ("maxDispVariation", None, None),
              ("cavity", "pressure"): ("maxPressureVariation", "minPressure", "maxPressure"),
              ("cavity", "volumeGrowth"): ("maxVolumeGrowthVariation", "minVolumeGrowth", "maxVolumeGrowth")}


def _ramping(kind: str, item, units: str | None) -> str | None:
    """"it ramps at most 5 kPa per frame (maxPressureVariation)" when a rate limit is set and the target lies
    within the actuator's range bounds (so the rate, not a bound, holds it this frame), else None."""
    rate_key, low_key, high_key = _RATE_KEYS.get((kind, item.valueType), (None, None, None))
    rate = getattr(item, rate_key, None) if rate_key else None
    if rate is None:
        return None
    target = float(item.value)
    low = getattr(item, low_key, None) if low_key else None
    high = getattr(item, high_key, None) if high_key else None
    if kind == "cable":
        low = None if item.maxNegativeDisp is None else -float(item.maxNegativeDisp)
        high = item.maxPositiveDisp
    if (low is not None and target < low) or (high is not None and target > high):
        return None
    unit = _unit(output_quantity(item.valueType), units)
    return f"it ramps at most {float(rate):.4g}{unit} per frame ({rate_key})"


def _cause(name: str, report, frame, kind: str = "", item=None, units: str | None = None) -> str:
    """Why an actuator is short of its target, the most direct cause first: a bound of its own holds it (the
    report's ``limited``; its rate limit when the target is within its range), the frame did not converge
    (with how much of the change it reached), contact holds the body (the frame has contact points), else none
    known."""
    if name in (getattr(report, "limited", None) or []):
        ramping = _ramping(kind, item, units) if item is not None else None
        return ramping or "a limit of the actuator stops it"
    if report is not None and not report.converged:
        equilibrium = getattr(report, "equilibrium", None)
        reached = getattr(equilibrium, "reached", None)
        if reached is not None and reached < 1.0:
            return f"the frame did not converge: it reached {percent(reached)} % of the requested change"
        return "the frame did not converge"
    contacts = len(getattr(frame, "contact_points", ()))
    if contacts:
        return f"contact stops it: {contacts} contact point{'s' if contacts != 1 else ''}"
    return "no limit of its own holds it"


def _actuators(frame, spec, units: str | None) -> list[Problem]:
    """Every actuator short of its target (beyond round-off; a slack cable is not), with the cause."""
    outputs, report = frame.outputs, frame.report
    problems = []
    for actuator in actuators(spec):
        kind, item = actuator.kind, actuator.item
        if _slack(kind, item, outputs):
            continue
        achieved = outputs.get(f"{item.name}.{item.valueType}")
        flagged = bool(outputs.get(f"{item.name}.limited"))
        if achieved is None and not flagged:
            continue
        if achieved is not None and _round_off(item, achieved, outputs):
            continue
        unit = _unit(output_quantity(item.valueType), units)
        text = f"{kind} '{item.name}' is short of its target: {item.valueType} "
        text += (f"{achieved:.4g}{unit} of {float(item.value):.4g}{unit}" if achieved is not None
                 else f"not {float(item.value):.4g}{unit}")
        cause = _cause(item.name, report, frame, kind, item, units)
        problems.append(Problem("actuator_limited", f"{text} ({cause})"))
    return problems


def _inverse(report, units: str | None) -> list[Problem]:
    """The inverse model's problems: unconverged linearisations, and a goal not reached with the limits that
    stop the actuators."""
    inverse, problems = report.inverse, []
    if not inverse.converged:
        problems.append(Problem("not_converged", inverse.message))
    if not inverse.reached:
        limits = ", ".join(f"{name} {key}" for name, key in inverse.limiting) or "no actuator limit"
        problems.append(Problem("actuator_limited", f"goal not reached: an effector is "
                                f"{inverse.goal_distance:.4g}{_unit('length', units)} from its goal; at their "
                                f"limits: {limits}"))
    return problems


def frame_problems(frame, spec) -> list[Problem]:
    """The problems of a frame (a DisplayFrame) of the scene ``spec`` (its GUI copy); [] when it is sound.
    A frame without a report (the rest state, a reset) has none."""
    report = frame.report
    if report is None:
        return []
    units = spec.scene.units if spec is not None else None
    if not report.ran:
        return [Problem("failed", f"frame {report.frame} failed: {report.message}")]
    problems = [p for p in (_nonlinear(report), _constraint(report, units)) if p is not None]
    if report.inverse is None and report.converged and report.message:  # a converged forward frame's message
        problems.append(Problem("untrustworthy", report.message))  # holds only such notes (frame_report)
    if report.inverse is not None:
        problems += _inverse(report, units)
    elif spec is not None:
        problems += _actuators(frame, spec, units)
    return problems
