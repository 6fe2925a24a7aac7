"""Constraint models: SoftRobots actuators, effectors, contacts, drag and attachments (see ``base.py``)."""

from softsim.mechanics.constraints.attachment import BilateralAttachment
from softsim.mechanics.constraints.base import Constraint, PointSet
from softsim.mechanics.constraints.body_contact import BodyContactConstraint, ContactSurface
from softsim.mechanics.constraints.cable import CableConstraint, cable_length_and_gradient
from softsim.mechanics.constraints.cavity import SurfacePressureConstraint, surface_volume, surface_volume_gradient
from softsim.mechanics.constraints.center_effector import CenterEffector
from softsim.mechanics.constraints.contact import (
    OBSTACLE_CLASSES,
    BoxObstacle,
    CapsuleObstacle,
    ContactConstraint,
    Obstacle,
    PlaneObstacle,
    SphereObstacle,
    friction_frames,
    obstacle_shift,
)
from softsim.mechanics.constraints.drag import DragConstraint
from softsim.mechanics.constraints.effector import PositionEffector
from softsim.mechanics.constraints.mapped import MappedConstraint
from softsim.mechanics.constraints.unilateral_plane import UnilateralPlaneConstraint

__all__ = [
    "BodyContactConstraint",
    "obstacle_shift",
    "ContactSurface",
    "OBSTACLE_CLASSES",
    "BilateralAttachment",
    "BoxObstacle",
    "CableConstraint",
    "CapsuleObstacle",
    "CenterEffector",
    "Constraint",
    "ContactConstraint",
    "DragConstraint",
    "Obstacle",
    "PlaneObstacle",
    "PointSet",
    "MappedConstraint",
    "PositionEffector",
    "SphereObstacle",
    "SurfacePressureConstraint",
    "UnilateralPlaneConstraint",
    "cable_length_and_gradient",
    "friction_frames",
    "surface_volume",
    "surface_volume_gradient",
]
