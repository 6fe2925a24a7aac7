"""Constraint models: SoftRobots actuators, effectors, contacts, drag and attachments (see ``base.py``)."""

from mechanics.constraints.attachment import BilateralAttachment
from mechanics.constraints.base import Constraint, PointSet
from mechanics.constraints.cable import CableConstraint, cable_length_and_gradient
from mechanics.constraints.cavity import SurfacePressureConstraint, surface_volume, surface_volume_gradient
from mechanics.constraints.contact import (
    BoxObstacle,
    CapsuleObstacle,
    ContactConstraint,
    Obstacle,
    PlaneObstacle,
    SphereObstacle,
    friction_frames,
)
from mechanics.constraints.drag import DragConstraint
from mechanics.constraints.effector import PositionEffector

__all__ = [
    "BilateralAttachment",
    "BoxObstacle",
    "CableConstraint",
    "CapsuleObstacle",
    "Constraint",
    "ContactConstraint",
    "DragConstraint",
    "Obstacle",
    "PlaneObstacle",
    "PointSet",
    "PositionEffector",
    "SphereObstacle",
    "SurfacePressureConstraint",
    "cable_length_and_gradient",
    "friction_frames",
    "surface_volume",
    "surface_volume_gradient",
]
