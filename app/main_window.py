"""softsim's main window: the viewport in the centre, menus, toolbar and status bar around it."""

from __future__ import annotations

import logging
from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QAction, QKeySequence
from PyQt6.QtWidgets import QFileDialog, QLabel, QMainWindow, QMessageBox

from app.viewport import Viewport

logger = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    """Top-level window. ``open_mesh`` shows a bare tetrahedral mesh file."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("softsim")
        self.resize(1280, 800)
        self.viewport = Viewport(self)
        self.setCentralWidget(self.viewport)
        self.status_label = QLabel("no scene")
        self.statusBar().addPermanentWidget(self.status_label)
        self._build_menus()

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_mesh = QAction("Open &mesh...", self)
        open_mesh.setShortcut(QKeySequence.StandardKey.Open)
        open_mesh.triggered.connect(self._ask_open_mesh)
        file_menu.addAction(open_mesh)
        screenshot = QAction("Save &screenshot...", self)
        screenshot.triggered.connect(self._ask_screenshot)
        file_menu.addAction(screenshot)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        view_menu = self.menuBar().addMenu("&View")
        fit = QAction("&Fit", self)
        fit.setShortcut(Qt.Key.Key_F)
        fit.triggered.connect(self._fit)
        view_menu.addAction(fit)

    # -- actions -------------------------------------------------------------------------------------
    def open_mesh(self, path: str | Path) -> bool:
        """Show a tetrahedral mesh file; on failure show the message and keep what was shown."""
        import meshes

        try:
            mesh = meshes.load(path)
        except meshes.MeshError as error:
            self.show_error("Cannot open mesh", str(error))
            return False
        height = mesh.points[:, 1] - mesh.points[:, 1].min()
        self.viewport.clear_bodies()
        self.viewport.show_body("body", mesh.points, mesh.surface_triangles(), "height", height)
        self._fit()
        self.status_label.setText(f"{Path(path).name}: {mesh.n_points} nodes, {mesh.n_tets} tetrahedra")
        return True

    def show_error(self, title: str, message: str) -> None:
        logger.error("%s: %s", title, message)
        self.statusBar().showMessage(message, 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        box.setObjectName("error_dialog")
        box.open()

    def save_screenshot(self, path: str | Path) -> None:
        """Save the whole window (panels included) as a PNG."""
        self.viewport.render()
        self.grab().save(str(path))

    def _ask_open_mesh(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open mesh", "", "Meshes (*.vtk *.vtu *.msh *.mesh *.inp *.xdmf);;All (*)")
        if path:
            self.open_mesh(path)

    def _ask_screenshot(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save screenshot", "softsim.png", "PNG (*.png)")
        if path:
            self.save_screenshot(path)

    def _fit(self) -> None:
        self.viewport.view_isometric()
        self.viewport.reset_camera()
        self.viewport.render()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.viewport.close()
        super().closeEvent(event)


