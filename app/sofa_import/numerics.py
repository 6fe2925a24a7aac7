"""Stand-ins for splib3.numerics (Vec3, Quat, vec3, to_radians, getOrientedBoxFromTransform, ...).

Written from the behaviour of SofaDefrost/STLIB's ``splib3/numerics`` (LGPL-3.0): ``Vec3`` and ``Quat`` are
numpy arrays; quaternions are SOFA's ``(x, y, z, w)``; Euler angles ``'sxyz'`` are rotations about the fixed
x, then y, then z axes. Rotations are computed with :class:`scipy.spatial.transform.Rotation`.
"""

from __future__ import annotations

import math
from math import acos, asin, atan, atan2, cos, pi, sin, sqrt, tan  # noqa: F401 (re-exported like splib3's)

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["Vec3", "Quat", "RigidDof", "to_radians", "to_degrees", "getOrientedBoxFromTransform", "transformPositions",
           "TRS_to_matrix", "vec3", "sin", "cos", "pi", "sqrt", "RigidDofZero"]

RigidDofZero = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def _axes(axes: str) -> str:
    """splib3's axis sequence (``'sxyz'``: static, ``'rxyz'``: rotating) as scipy's (``'xyz'``, ``'XYZ'``)."""
    if len(axes) == 4 and axes[0] in "sr":
        return axes[1:] if axes[0] == "s" else axes[1:].upper()
    return axes


class Vec3(np.ndarray):
    """A 3-vector (numpy array) with splib3's methods."""

    def __new__(cls, *args):
        if len(args) == 0:
            values = [0.0, 0.0, 0.0]
        elif len(args) == 1:
            values = list(args[0]) if not np.isscalar(args[0]) else [args[0]] * 3
        else:
            values = list(args)
        return np.asarray(values, dtype=np.float64).view(cls)

    def toList(self) -> list[float]:  # noqa: N802
        return [float(self[0]), float(self[1]), float(self[2])]

    def getNorm(self) -> float:  # noqa: N802
        return float(np.linalg.norm(self))

    def normalize(self, *args) -> Vec3:
        self /= self.getNorm()
        return self

    def translate(self, *args) -> Vec3:
        self += np.asarray(args[0] if len(args) == 1 else args, dtype=np.float64)
        return self

    def scale(self, *args) -> Vec3:
        self *= np.asarray(args[0] if len(args) == 1 else args, dtype=np.float64)
        return self

    def rotateFromQuat(self, q) -> Vec3:  # noqa: N802
        self[:] = Rotation.from_quat(np.asarray(q, dtype=np.float64)).apply(np.asarray(self))
        return self

    def rotateFromEuler(self, v, axis: str = "sxyz") -> Vec3:  # noqa: N802
        self[:] = Rotation.from_euler(_axes(axis), v).apply(np.asarray(self))
        return self

    @staticmethod
    def dot(a, b) -> float:
        return float(np.dot(a, b))

    @staticmethod
    def cross(a, b) -> Vec3:
        return Vec3(np.cross(a, b))


class Quat(np.ndarray):
    """A quaternion ``(x, y, z, w)`` (numpy array) with splib3's methods."""

    def __new__(cls, *args):
        if len(args) == 0:
            values = [0.0, 0.0, 0.0, 1.0]
        elif len(args) == 1:
            values = list(args[0])
        else:
            values = list(args)
        return np.asarray(values, dtype=np.float64).view(cls)

    def toList(self) -> list[float]:  # noqa: N802
        return [float(v) for v in self]

    def getNorm(self) -> float:  # noqa: N802
        return float(np.linalg.norm(self))

    def normalize(self) -> Quat:
        self /= self.getNorm()
        return self

    def getMatrix(self) -> np.ndarray:  # noqa: N802
        return Rotation.from_quat(np.asarray(self)).as_matrix()

    def getConjugate(self) -> Quat:  # noqa: N802
        return Quat(-self[0], -self[1], -self[2], self[3])

    def getInverse(self) -> Quat:  # noqa: N802
        return Quat(self.getConjugate() / float(np.dot(self, self)))

    def getIm(self) -> np.ndarray:  # noqa: N802
        return np.asarray(self[:3])

    def getRe(self) -> float:  # noqa: N802
        return float(self[3])

    def getEulerAngles(self, axes: str = "sxyz") -> list[float]:  # noqa: N802
        return list(Rotation.from_quat(np.asarray(self)).as_euler(_axes(axes)))

    def rotateFromQuat(self, qb) -> Quat:  # noqa: N802
        self[:] = Quat.product(self, qb)
        return self

    def rotateFromEuler(self, v, axes: str = "sxyz") -> Quat:  # noqa: N802
        return self.rotateFromQuat(Quat.createFromEuler(v, axes))

    @staticmethod
    def product(qa, qb) -> Quat:
        a, b = np.asarray(qa, dtype=np.float64), np.asarray(qb, dtype=np.float64)
        return Quat(a[3] * b[0] + b[3] * a[0] + a[1] * b[2] - a[2] * b[1],
                    a[3] * b[1] + b[3] * a[1] + a[2] * b[0] - a[0] * b[2],
                    a[3] * b[2] + b[3] * a[2] + a[0] * b[1] - a[1] * b[0],
                    a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2])

    @staticmethod
    def createFromEuler(v, axes: str = "sxyz", inDegree: bool = False) -> Quat:  # noqa: N802, N803
        return Quat(Rotation.from_euler(_axes(axes), v, degrees=inDegree).as_quat())

    @staticmethod
    def createFromAxisAngle(axis, angle: float) -> Quat:  # noqa: N802
        axis = np.asarray(axis, dtype=np.float64)
        return Quat(Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle).as_quat())

    @staticmethod
    def createFromVectors(v1, v2) -> Quat:  # noqa: N802
        rotation, _ = Rotation.align_vectors([np.asarray(v2, dtype=float)], [np.asarray(v1, dtype=float)])
        return Quat(rotation.as_quat())


def to_radians(v):
    return [x * pi / 180.0 for x in v] if isinstance(v, list) else v * pi / 180.0


def to_degrees(v):
    return [x * 180.0 / pi for x in v] if isinstance(v, list) else v * 180.0 / pi


def TRS_to_matrix(translation, rotation=None, scale=None, eulerRotation=None) -> np.ndarray:  # noqa: N802, N803
    """The 4x4 matrix T R S (splib3's)."""
    if eulerRotation is not None:
        q = Quat.createFromEuler(eulerRotation, inDegree=True)
    elif rotation is not None:
        q = Quat(rotation)
    else:
        q = Quat()
    matrix = np.identity(4)
    matrix[:3, :3] = q.getMatrix() @ np.diag(scale if scale is not None else [1.0, 1.0, 1.0])
    matrix[:3, 3] = translation
    return matrix


def transformPositions(position, translation=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0, 1.0),  # noqa: N802
                       eulerRotation=None, scale=(1.0, 1.0, 1.0)) -> list[list[float]]:  # noqa: N803
    trs = TRS_to_matrix(translation=translation, rotation=rotation, eulerRotation=eulerRotation, scale=scale)
    return [(trs @ np.append(np.asarray(p, dtype=float), 1.0))[:3].tolist() for p in position]


def getOrientedBoxFromTransform(translation=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0, 1.0),  # noqa: N802
                                eulerRotation=None, scale=(1.0, 1.0, 1.0)) -> list:  # noqa: N803
    """SOFA BoxROI's ``orientedBox`` (three corners of the unit box's bottom face, transformed, then the depth)."""
    corners = [[-0.5, 0.0, -0.5], [-0.5, 0.0, 0.5], [0.5, 0.0, 0.5]]
    if eulerRotation is not None:
        rotation = eulerRotation
    return transformPositions(corners, translation=translation, rotation=rotation, eulerRotation=eulerRotation,
                              scale=scale) + [scale[1]]


class _Vec3Functions:
    """splib3.numerics.vec3's module-level functions."""

    @staticmethod
    def vadd(a, b):
        return [x + y for x, y in zip(a, b)]

    @staticmethod
    def vsub(a, b):
        return [x - y for x, y in zip(a, b)]

    @staticmethod
    def vmul(a, b):
        return [x * b for x in a] if np.isscalar(b) else [x * y for x, y in zip(a, b)]

    @staticmethod
    def vdot(a, b):
        return sum(x * y for x, y in zip(a, b))

    @staticmethod
    def vlength(a):
        return math.sqrt(sum(x * x for x in a))

    @staticmethod
    def vnorm(a):
        length = math.sqrt(sum(x * x for x in a))
        return [x / length for x in a]

    @staticmethod
    def vcross(a, b):
        return list(np.cross(a, b))


vec3 = _Vec3Functions()


class RigidDof:
    """splib3.numerics.RigidDof: a Rigid3 MechanicalObject's first frame as a position ``(3,)`` and a quaternion
    ``[qx, qy, qz, qw]``, read from and written to its ``position`` (or ``rest_position``) data."""

    def __init__(self, rigidobject) -> None:
        self.__dict__["rigidobject"] = rigidobject

    def _frames(self, field: str) -> list[list[float]]:
        numbers = np.asarray(self.rigidobject.getData(field).value, dtype=float).reshape(-1, 7)
        return numbers.tolist()

    def getPosition(self, index: int = 0, field: str = "position") -> np.ndarray:  # noqa: N802
        return np.asarray(self._frames(field)[index][:3])

    def setPosition(self, v, index: int = 0, field: str = "position") -> None:  # noqa: N802
        frames = self._frames(field)
        frames[index] = [float(x) for x in v] + frames[index][3:]
        self.rigidobject.getData(field).value = frames

    def getOrientation(self, field: str = "position") -> list[float]:  # noqa: N802
        return self._frames(field)[0][3:]

    def _axis(self, axis, field: str = "position") -> np.ndarray:
        return Rotation.from_quat(self.getOrientation(field)).apply(axis)

    @property
    def forward(self) -> np.ndarray:
        return self._axis([0.0, 0.0, 1.0])

    @property
    def left(self) -> np.ndarray:
        return self._axis([1.0, 0.0, 0.0])

    @property
    def up(self) -> np.ndarray:
        return self._axis([0.0, 1.0, 0.0])

    def translate(self, v, field: str = "position") -> None:
        self.setPosition(self.getPosition(field=field) + np.asarray(v, dtype=float), field=field)

    def __getattr__(self, key: str):
        if key in ("rest_position", "position"):
            return self.getPosition(field=key)
        if key in ("orientation", "rest_orientation"):
            return self.getOrientation(field=key.replace("orientation", "position"))
        return self.rigidobject.getData(key).value

    def __setattr__(self, key: str, value) -> None:
        if key in ("rest_position", "position"):
            self.setPosition(value, field=key)
        else:
            self.rigidobject.getData(key).value = list(value)
