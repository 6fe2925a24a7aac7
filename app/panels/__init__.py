"""The dockable panels of the main window: Parameters (every scene value), Actuators (sliders and readouts),
Plots (convergence and time series). Each panel follows a :class:`app.session.Session` through its signals.
"""

from __future__ import annotations

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QDockWidget, QMainWindow, QWidget
from softsim.app.panels.actuators import ActuatorsPanel
from softsim.app.panels.parameters import ParametersPanel
from softsim.app.panels.plots import PlotsPanel

__all__ = ["create_docks", "ParametersPanel", "ActuatorsPanel", "PlotsPanel", "DOCK_NAMES"]

#: Object names of the docks, in the order ``create_docks`` returns them.
DOCK_NAMES = ("parameters_dock", "actuators_dock", "plots_dock")


def create_docks(session, window: QWidget | None) -> list[QDockWidget]:
    """The Parameters, Actuators and Plots docks (object names ``DOCK_NAMES``), parented to ``window``.

    When ``window`` is a QMainWindow the docks are placed (Parameters left, Actuators and Plots right);
    otherwise the caller places them and must keep them alive. Each dock's ``widget()`` is its panel.
    Panels built while a scene is open show it at once; they rebuild on every ``session.scene_opened``.
    """
    panels = (
        ("Parameters", DOCK_NAMES[0], ParametersPanel(session)),
        ("Actuators", DOCK_NAMES[1], ActuatorsPanel(session)),
        ("Plots", DOCK_NAMES[2], PlotsPanel(session)),
    )
    docks = []
    areas = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea,
             Qt.DockWidgetArea.RightDockWidgetArea)
    for (title, object_name, panel), area in zip(panels, areas, strict=True):
        dock = QDockWidget(title, window)
        dock.setObjectName(object_name)
        dock.setWidget(panel)
        dock.setAllowedAreas(Qt.DockWidgetArea.AllDockWidgetAreas)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        if isinstance(window, QMainWindow):
            window.addDockWidget(area, dock)
        docks.append(dock)
    return docks
