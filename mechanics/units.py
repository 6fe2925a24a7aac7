"""Unit labels of the scene's unit systems: every number a user sees is shown with its unit.

A scene key declares the quantity it holds (``"length"``, ``"pressure"``, ...; see
:mod:`mechanics.scene.schema`); :func:`unit_label` names its unit in the scene's ``units``: SI, or
SoftRobots' mm-kg-s, where a force is kg mm/s^2 = mN and a pressure mN/mm^2 = kPa.
"""

from __future__ import annotations

import re

#: quantity -> (SI label, mm-kg-s label)
QUANTITIES = {
    "length": ("m", "mm"),
    "force": ("N", "mN"),
    "pressure": ("Pa", "kPa"),
    "volume": ("m^3", "mm^3"),
    "mass": ("kg", "kg"),
    "density": ("kg/m^3", "kg/mm^3"),
    "time": ("s", "s"),
    "frequency": ("1/s", "1/s"),
    "velocity": ("m/s", "mm/s"),
    "acceleration": ("m/s^2", "mm/s^2"),
    "compliance": ("m/N", "mm/mN"),
    "angle": ("deg", "deg"),
    "angular velocity": ("rad/s", "rad/s"),
    "moment of inertia": ("kg m^2", "kg mm^2"),
    "energy density": ("Pa", "kPa"),
}
SYSTEMS = ("SI", "mm-kg-s")


def unit_label(quantity: str | None, system: str) -> str:
    """The unit of ``quantity`` in ``system`` (``"pressure", "mm-kg-s"`` -> ``"kPa"``); "" for None."""
    if quantity is None:
        return ""
    return QUANTITIES[quantity][SYSTEMS.index(system)]



def with_unit(text: str, quantity: str | None, system: str) -> str:
    """``text`` followed by the bracketed unit, when the quantity has one: ``"force [mN]"``."""
    label = unit_label(quantity, system)
    return f"{text} [{label}]" if label else text


#: the quantity of each actuator, effector and contact output (``NAME.QUANTITY`` columns); effector positions
#: ``x``, ``y``, ``z``, ``x0``, ... are lengths
OUTPUT_QUANTITIES = {
    "cableLength": "length", "displacement": "length", "force": "force", "pressure": "pressure",
    "volumeGrowth": "volume", "cavityVolume": "volume", "initialCavityVolume": "volume", "distance": "length",
    "normalForce": "force", "maxViolation": "length", "vx": "velocity", "vy": "velocity", "vz": "velocity",
    "deviation": "length", "angle": "angle",
}


def output_quantity(quantity: str) -> str | None:
    """The quantity of an output (``"force"`` -> ``"force"``, ``"x1"`` -> ``"length"``); None: a count or flag."""
    if re.fullmatch(r"[xyz]\d*", quantity):
        return "length"
    return OUTPUT_QUANTITIES.get(quantity)
