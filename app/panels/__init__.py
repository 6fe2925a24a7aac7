"""The dockable panels of the main window: Actuators (sliders and readouts), Parameters (every scene value), Scene
(the component tree), History (undo and redo), Plots (convergence and time series) and Sensitivity (the chosen
output's normalised sensitivities). Each panel follows a
:class:`app.session.Session` through its signals.
"""

from __future__ import annotations

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QUndoStack
from PyQt6.QtWidgets import QDockWidget, QMainWindow, QUndoView, QWidget

from softsim.app.panels.actuators import ActuatorsPanel
from softsim.app.panels.parameters import ParametersPanel
from softsim.app.panels.plots import PlotsPanel
from softsim.app.panels.scene_tree import SceneTreePanel
from softsim.app.panels.sensitivity import SensitivityPanel

__all__ = ["create_docks", "ParametersPanel", "ActuatorsPanel", "PlotsPanel", "SceneTreePanel", "SensitivityPanel",
           "DOCK_NAMES", "DOCK_WIDTH_SHARE"]

#: Object names of the docks, in the order ``create_docks`` returns them.
DOCK_NAMES = ("parameters_dock", "actuators_dock", "plots_dock", "scene_dock", "history_dock", "sensitivity_dock")
#: The share of the window's width the dock column takes when the window opens (the 3D view gets the rest).
DOCK_WIDTH_SHARE = 0.3


def create_docks(session, window: QWidget | None, *, history: QUndoStack | None = None,
                 highlight=None, edit=None, sensitivity: bool = False) -> list[QDockWidget]:
    """The docks (object names ``DOCK_NAMES``; History only with a ``history`` stack, Sensitivity only with
    ``sensitivity``), parented to ``window``.

    When ``window`` is a QMainWindow the docks are placed in one column on the right, DOCK_WIDTH_SHARE of the
    window wide: Actuators, Parameters, Scene and History as tabs above, Plots below; otherwise the caller
    places them and must keep them alive. Each dock's ``widget()`` is its panel. ``highlight(kind, name)`` and
    ``edit(prefix)`` are given to the Scene panel. Panels built while a scene is open show it at once; they
    rebuild on every ``session.scene_opened``.
    """
    panels = [
        ("Parameters", DOCK_NAMES[0], ParametersPanel(session)),
        ("Actuators", DOCK_NAMES[1], ActuatorsPanel(session)),
        ("Plots", DOCK_NAMES[2], PlotsPanel(session)),
        ("Scene", DOCK_NAMES[3], SceneTreePanel(session, highlight=highlight, edit=edit)),
    ]
    if history is not None:
        view = QUndoView(history)
        view.setObjectName("history_view")
        view.setEmptyLabel("(scene as opened)")
        panels.append(("History", DOCK_NAMES[4], view))
    if sensitivity:
        panels.append(("Sensitivity", DOCK_NAMES[5], SensitivityPanel(session)))
    docks = []
    for title, object_name, panel in panels:
        dock = QDockWidget(title, window)
        dock.setObjectName(object_name)
        dock.setWidget(panel)
        dock.setAllowedAreas(Qt.DockWidgetArea.AllDockWidgetAreas)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        docks.append(dock)
    if isinstance(window, QMainWindow):
        _place(window, {dock.objectName(): dock for dock in docks})
    return docks


def _place(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    right = Qt.DockWidgetArea.RightDockWidgetArea
    actuators, plots = docks["actuators_dock"], docks["plots_dock"]
    window.addDockWidget(right, actuators)
    window.addDockWidget(right, plots)
    window.splitDockWidget(actuators, plots, Qt.Orientation.Vertical)
    for name in ("parameters_dock", "scene_dock", "history_dock"):
        if name in docks:
            window.tabifyDockWidget(actuators, docks[name])
    if "sensitivity_dock" in docks:  # beside the plots: both read the frames
        window.tabifyDockWidget(plots, docks["sensitivity_dock"])
        plots.raise_()
    actuators.raise_()
    width = int(DOCK_WIDTH_SHARE * window.width())
    window.resizeDocks([actuators, plots], [width, width], Qt.Orientation.Horizontal)
    window.resizeDocks([actuators, plots], [int(0.45 * window.height()), int(0.55 * window.height())],
                       Qt.Orientation.Vertical)
