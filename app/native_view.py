"""A pyvista plotter in a native child window of the Qt window: VTK renders straight into its own X window.

Why not pyvistaqt's ``QtInteractor``: since pyvistaqt 0.12 it is a ``QOpenGLWidget``. A window that holds a
``QOpenGLWidget`` is composed through OpenGL on every repaint, whatever changed: each new label text, each slider
step uploads the window's image and draws it again. On a software OpenGL (llvmpipe, Xvfb, remote desktops) that
costs tens of milliseconds of CPU per repaint (benchmarks/RESULTS_gui.md). With the view in a native child window
(VTK's classic ``QVTKRenderWindowInteractor``: a ``QWidget`` with ``WA_PaintOnScreen``) the rest of the window is
painted by Qt's raster engine and only the changed region is copied to the screen; VTK draws the view itself, in
its paint event (one render per paint, and paints come only from :meth:`update` and from the X server when the
view is exposed or resized).

Limits of a native child window: widgets of the same window drawn over the view must be native windows
themselves (the main window's banner is), and ``QWidget.grab`` of the window leaves the view out (the window's
screenshot paints the view's own image over it). VTK's render window draws into an X window: in a Wayland session
the window runs on XWayland (:func:`x11_platform`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import MutableMapping

from pyvista import global_theme
from pyvista.plotting import BasePlotter
from pyvista.plotting.render_window_interactor import RenderWindowInteractor
from vtkmodules.qt.QVTKRenderWindowInteractor import QVTKRenderWindowInteractor


def x11_platform(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Before the QApplication exists: in a Wayland session that also offers X (XWayland: ``DISPLAY`` set), ask Qt
    for its X11 platform (``QT_QPA_PLATFORM=xcb``), where the view's native window is an X window VTK can draw
    into. A platform the user chose is kept. Returns whether it set one."""
    wayland = environ.get("XDG_SESSION_TYPE") == "wayland" or bool(environ.get("WAYLAND_DISPLAY"))
    if not wayland or not environ.get("DISPLAY") or environ.get("QT_QPA_PLATFORM"):
        return False
    environ["QT_QPA_PLATFORM"] = "xcb"
    return True


@contextlib.contextmanager
def _no_base_plotter_init():
    """Qt's cooperative ``__init__`` chain would call ``BasePlotter.__init__`` without arguments from inside the
    widget's: make that call a no-op while the widget is built (as pyvistaqt does)."""
    init = BasePlotter.__init__
    BasePlotter.__init__ = lambda *args, **kwargs: None
    try:
        yield
    finally:
        BasePlotter.__init__ = init


class _ClosedInteractor:
    """Stands in for the VTK interactor after :meth:`NativePlotter.close`: Qt may still deliver a leave or
    resize event to the widget, which then does nothing."""

    def _ignore(self, *args, **kwargs) -> None:
        return None

    SetDPI = EnterEvent = MouseMoveEvent = LeaveEvent = SetSize = ConfigureEvent = _ignore
    SetEventInformation = SetEventInformationFlipY = KeyPressEvent = KeyReleaseEvent = CharEvent = _ignore
    Render = _ignore


class NativePlotter(QVTKRenderWindowInteractor, BasePlotter):
    """A pyvista ``BasePlotter`` drawn by VTK in a native child window (see the module docstring).

    Create it with its final parent (the widget that lays it out): its native window exists from the start and
    VTK keeps drawing into that window. ``render()`` renders at once; ``update()`` (Qt's) asks for one paint, which
    renders. ``multi_samples``: the anti-aliasing samples (default pyvista's theme).
    """

    def __init__(self, parent=None, *, multi_samples: int | None = None, **kwargs) -> None:
        self._ready = False  # no render before the plotter is built (pyvista's camera resets ask for one)
        with _no_base_plotter_init():
            QVTKRenderWindowInteractor.__init__(self, parent)
        BasePlotter.__init__(self, **kwargs)
        self.interactor = self
        self.ren_win = self.GetRenderWindow()
        self.ren_win.SetMultiSamples(global_theme.multi_samples if multi_samples is None else multi_samples)
        # VTK renders into framebuffers of its own and copies the image to the window at the end of each render.
        # Its default copy ("blit to hardware") also copies the depth buffer, through a shader pass over every
        # pixel, into the window's framebuffer, which nothing reads (picking is geometric, screenshots read VTK's
        # own framebuffers); "blit to current" copies the colours only, into the framebuffer bound at the start of
        # the render, the window's. The image shown is the same; on a software OpenGL the depth pass was about a
        # quarter of a fast draw's CPU (benchmarks/RESULTS_gui.md).
        self.ren_win.SetFrameBlitModeToBlitToCurrent()
        for renderer in self.renderers:
            renderer.view_isometric()
            self.ren_win.AddRenderer(renderer)
        self.background_color = global_theme.background
        self._off_screen = False
        self.iren = RenderWindowInteractor(self, interactor=self.ren_win.GetInteractor())
        self.iren.interactor.RemoveObservers("MouseMoveEvent")  # the widget's own handlers move the camera
        self.iren.initialize()
        self.enable_trackball_style()
        self._observers = {}
        self.iren.add_observer("KeyPressEvent", self.key_press_event)
        self.reset_key_events()
        self._first_time = False  # BasePlotter renders only once this is False
        self._ready = True

    def __getattr__(self, attr):
        """Unknown attributes come from the VTK interactor, as VTK's widget does (without recursing while the
        widget is being built)."""
        interactor = self.__dict__.get("_Iren")
        if interactor is not None and hasattr(interactor, attr):
            return getattr(interactor, attr)
        raise AttributeError(f"{type(self).__name__} has no attribute {attr!r}")

    def _render(self, *args, **kwargs):
        return BasePlotter.render(self, *args, **kwargs)

    def render(self) -> None:
        """Render now (nothing while the plotter is built, nor after :meth:`close`)."""
        if not self.__dict__.get("_ready") or getattr(self, "_closed", False):
            return None
        self._rendered = True
        return self._render()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if self.__dict__.get("_RenderWindow") is not None:
            self.Finalize()

    def close(self) -> None:
        """Release the render window (pyvista's close) and close the widget; idempotent."""
        if getattr(self, "_closed", True):
            return
        BasePlotter.close(self)
        QVTKRenderWindowInteractor.close(self)
        self._Iren = _ClosedInteractor()
        for key in ("_RenderWindow", "renderer"):
            with contextlib.suppress(AttributeError):
                setattr(self, key, None)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if self.__dict__.get("_RenderWindow") is not None:
            super().paintEvent(event)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if self.__dict__.get("_RenderWindow") is not None:
            super().resizeEvent(event)

