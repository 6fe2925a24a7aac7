"""The dock panels on a real Session with the shipped finger: live tuning reaches the solver, refused values
are shown and not applied, sliders bend the finger, readouts and plots follow the frames, CSV export."""

import csv
import dataclasses
import math

import numpy as np
import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit, QSpinBox

from softsim.app.panels import DOCK_NAMES, create_docks
from softsim.app.panels.actuators import SLIDER_STEPS, actuator_range, force_scale
from softsim.app.panels.schema_info import describe_parameters, tooltip_for
from softsim.app.panels.widgets import RealEditor, VectorEditor, format_real
from softsim.app.resources import resource_path
from softsim.mechanics.scene import list_parameters, load_scene
from tests.app import remote

pytestmark = pytest.mark.gui

FINGER = resource_path("scenes", "finger.toml")
NEWTON_KEYS = ("newton_iterations", "correction_tolerance_threshold", "residual_tolerance_threshold",
               "shoud_diverge_when_residual_is_growing", "warm_start", "printLog", "line_search", "load_steps",
               "correction")


@pytest.fixture
def session(qtbot):
    from softsim.app.session import Session

    session = Session()
    yield session
    session.close()


@pytest.fixture
def docks(qtbot, session):
    """The docks built before the scene opens (so they are filled by scene_opened)."""
    docks = create_docks(session, None)
    for dock in docks:
        qtbot.addWidget(dock)
        dock.show()
    assert session.open_scene(FINGER)
    yield {dock.objectName(): dock.widget() for dock in docks}  # the local list keeps the docks alive


def step_and_wait(qtbot, session, frames: int = 1):
    """Run ``frames`` frames and wait until the newest one (with a report) reached the GUI."""
    target = session.latest_frame.index + frames
    session.step_once(frames)
    qtbot.waitUntil(lambda: session.latest_frame.report is not None and session.latest_frame.index >= target,
                    timeout=60000)
    return session.latest_frame


def test_create_docks_returns_the_named_docks(docks):
    assert list(docks) == list(DOCK_NAMES[:4])  # History comes only with an undo stack
    parameters = docks["parameters_dock"]
    # Every value of the scene has an editor, under the path list_parameters gives it.
    assert set(parameters.editors) == {path for path, _ in list_parameters(parameters.session.spec)}
    for section in ("Newton", "Linear solver", "Constraint solver", "Scene", "Material: finger"):
        assert section in parameters.sections
    for key in NEWTON_KEYS:
        assert f"solver.newton.{key}" in parameters.editors


def test_widgets_follow_the_kind_of_each_key(docks):
    panel = docks["parameters_dock"]
    tolerance = panel.editor("solver.newton.residual_tolerance_threshold")
    assert isinstance(tolerance, RealEditor) and tolerance.findChild(QLineEdit).text() == "1e-08"
    assert panel.editor("solver.newton.warm_start").findChild(QCheckBox).isChecked()
    assert panel.editor("solver.newton.newton_iterations").findChild(QSpinBox).value() == 25  # finger.toml
    combo = panel.editor("solver.constraint.type").findChild(QComboBox)
    assert [combo.itemText(i) for i in range(combo.count())] == ["BlockGaussSeidel", "ImprovedJacobi", "NNCG",
                                                                "BlockPivoting", "exact"]
    gravity = panel.editor("scene.gravity")
    assert isinstance(gravity, VectorEditor) and [line.text() for line in gravity.lines] == ["0", "-9810", "0"]
    # Names are part of every key path: shown, not edited.
    assert panel.editor("body.finger.cable.cable.name").findChild(QLineEdit) is None
    # ImprovedJacobi's settings are greyed out while BlockGaussSeidel is selected, cg's while direct is.
    assert not panel.editor("solver.constraint.spectralCorrectionFactor").isEnabled()
    assert not panel.editor("solver.linear.preconditioning_method").isEnabled()
    assert panel.editor("solver.linear.backend").isEnabled()


def test_tooltips_give_meaning_range_unit_and_default():
    spec = load_scene(FINGER)
    infos = {info.path: info for info in describe_parameters(spec)}
    poisson = tooltip_for(infos["body.finger.material.poissonRatio"])
    assert "(-1, 0.5)" in poisson and "Poisson" in poisson
    young = tooltip_for(infos["body.finger.material.youngModulus"])
    assert "allowed: [1e-30, 1e+30] [kPa]" in young  # the finger is in mm-kg-s
    factor = tooltip_for(infos["solver.constraint.spectralCorrectionFactor"])
    assert "(0, 10]" in factor and "default: 1.0" in factor and "used when type = ImprovedJacobi" in factor
    cable = tooltip_for(infos["body.finger.cable.cable.value"])
    assert "[mm]" in cable and "default: 0.0" in cable  # a displacement cable: a length


def test_spectral_correction_factor_from_the_panel_reaches_the_solver(docks, session, qtbot):
    panel = docks["parameters_dock"]
    panel.editor("solver.constraint.type").findChild(QComboBox).setCurrentText("ImprovedJacobi")
    assert session.spec.solver.constraint.type == "ImprovedJacobi"
    factor = panel.editor("solver.constraint.spectralCorrectionFactor")
    assert factor.isEnabled()
    line = factor.findChild(QLineEdit)
    line.selectAll()
    qtbot.keyClicks(line, "0.6")
    qtbot.keyClick(line, Qt.Key.Key_Return)
    assert session.spec.solver.constraint.spectralCorrectionFactor == 0.6
    step_and_wait(qtbot, session)
    state = remote.ask(qtbot, session, remote.solver_state)  # read where the scene lives
    assert state["constraint_type"] == "ImprovedJacobi"
    assert state["spectralCorrectionFactor"] == 0.6


def test_an_invalid_value_is_refused_with_the_key_and_range(docks, session):
    panel = docks["parameters_dock"]
    editor = panel.editor("body.finger.material.poissonRatio")
    changes = []
    session.parameter_changed.connect(lambda path, value: changes.append(path))
    assert not editor.edit("0.7")
    assert "poissonRatio" in editor.error_text and "(-1, 0.5)" in editor.error_text
    assert editor.error_label.isVisibleTo(panel) and editor.error_label.text() == editor.error_text
    assert "border" in editor.findChild(QLineEdit).styleSheet()
    assert editor.error_text in editor.toolTip()
    assert editor.findChild(QLineEdit).text() == "0.45"  # the accepted value is shown again
    assert session.spec.bodies[0].material.poissonRatio == 0.45
    assert changes == []
    # One value followed by more TOML (a table) is refused, not read as its first value.
    assert not editor.edit("0.3\n[x]\ny = 1")
    assert "followed by more text" in editor.error_text
    assert session.spec.bodies[0].material.poissonRatio == 0.45
    # A valid value afterwards clears the message.
    assert editor.edit("0.4")
    assert editor.error_text == "" and not editor.error_label.isVisibleTo(panel)
    assert session.spec.bodies[0].material.poissonRatio == 0.4


def test_a_factor_outside_the_solvers_range_is_refused_in_the_widget(docks, session, qtbot):
    panel = docks["parameters_dock"]
    assert session.set_parameter("solver.constraint.type", "ImprovedJacobi") is None
    factor = panel.editor("solver.constraint.spectralCorrectionFactor")
    assert not factor.edit("20")  # the scene file and ImprovedJacobi both take (0, 10]
    assert "spectralCorrectionFactor" in factor.error_text and "(0, 10]" in factor.error_text
    assert session.spec.solver.constraint.spectralCorrectionFactor == 1.0
    step_and_wait(qtbot, session)
    assert remote.ask(qtbot, session, remote.solver_state)["spectralCorrectionFactor"] == 1.0


def test_vector_editor_sets_gravity_and_refuses_text(docks, session):
    gravity = docks["parameters_dock"].editor("scene.gravity")
    assert gravity.edit(["0", "0", "-9810"])
    assert session.spec.scene.gravity == (0.0, 0.0, -9810.0)
    assert not gravity.edit(["0", "abc", "0"])
    assert "gravity" in gravity.error_text and "abc" in gravity.error_text
    assert [line.text() for line in gravity.lines] == ["0", "0", "-9810"]


def test_panel_follows_changes_made_elsewhere(docks, session):
    panel = docks["parameters_dock"]
    assert session.set_parameter("solver.newton.newton_iterations", 5) is None
    assert panel.editor("solver.newton.newton_iterations").findChild(QSpinBox).value() == 5
    assert session.set_parameter("solver.linear.type", "cg") is None
    assert panel.editor("solver.linear.preconditioning_method").isEnabled()
    assert not panel.editor("solver.linear.backend").isEnabled()
    control = docks["actuators_dock"].controls["cable"]
    assert session.set_parameter("body.finger.cable.cable.value", 10.0) is None
    assert control.spin.value() == pytest.approx(10.0)
    assert control.slider_value() == pytest.approx(10.0, abs=(control.range.hi - control.range.lo) / SLIDER_STEPS)


def test_filter_shows_only_matching_keys(docks):
    panel = docks["parameters_dock"]
    panel.filter.setText("tolerance")
    shown = [path for path, editor in panel.editors.items() if editor.isVisibleTo(panel)]
    assert set(shown) == {"solver.newton.correction_tolerance_threshold",
                          "solver.newton.residual_tolerance_threshold",
                          "solver.newton.absolute_residual_tolerance_threshold", "solver.dynamic.newton_tolerance",
                          "solver.linear.residual_tolerance_threshold", "solver.constraint.tolerance",
                          "solver.constraint.scaleTolerance"}
    assert not panel.sections["Material: finger"].isVisibleTo(panel)
    panel.filter.clear()
    assert panel.editor("scene.dt").isVisibleTo(panel)


def test_servo_keys_show_only_on_an_actuated_fixed_region(docks, session, qtbot):
    """minAngle, maxAngle and maxAngleVariation are used only by a servo the inverse model drives (``actuated =
    true``): the finger's plain fixed region hides their rows, its other keys stay; setting actuated shows them
    (enabled), unsetting hides them again."""
    panel = docks["parameters_dock"]
    region = "body.finger.fixed[0]"
    servo = [f"{region}.{key}" for key in ("minAngle", "maxAngle", "maxAngleVariation")]
    form = panel.sections["Body: finger"].form

    def shown(path: str) -> bool:
        return form.isRowVisible(panel.editor(path))

    assert not any(shown(path) for path in servo)
    assert all(shown(f"{region}.{key}") for key in ("actuated", "angle", "translation"))
    assert session.set_parameter(f"{region}.actuated", True) is None
    qtbot.waitUntil(lambda: all(shown(path) for path in servo), timeout=10000)
    assert all(panel.editor(path).isEnabled() for path in servo)
    assert session.set_parameter(f"{region}.actuated", False) is None
    qtbot.waitUntil(lambda: not any(shown(path) for path in servo), timeout=10000)
    panel.filter.setText("maxAngle")  # the filter does not bring a hidden row back
    assert not any(shown(path) for path in servo)


def test_actuator_ranges_from_bounds_and_geometry():
    spec = load_scene(FINGER)
    cable = spec.bodies[0].cables[0]
    rest = {"cable.cableLength": 157.806, "cable.displacement": 0.0}
    points = np.array([[-103.0, 0.0, 0.0], [0.0, 15.0, 15.0]])
    # No displacement bounds: +/- 30 % of the length, lower end 0 because minForce = 0 (the cable cannot push).
    r = actuator_range("cable", cable, rest_outputs=rest, young_modulus=600.0, points=points)
    assert (r.lo, r.hi) == (0.0, pytest.approx(0.3 * 157.806))
    cable.maxPositiveDisp, cable.maxNegativeDisp = 12.0, 3.0
    r = actuator_range("cable", cable, rest_outputs=rest, young_modulus=600.0, points=points)
    assert (r.lo, r.hi, r.hard_lo, r.hard_hi) == (-3.0, 12.0, -3.0, 12.0)
    assert r.source == "maxPositiveDisp, maxNegativeDisp"
    # Force: [minForce, E h^4 / L^2] = [0, 600 * 15^4 / 103^2] = [0, 2863.135].
    cable.valueType = "force"
    assert force_scale(600.0, points) == pytest.approx(2863.135, rel=1e-6)
    r = actuator_range("cable", cable, rest_outputs=rest, young_modulus=600.0, points=points)
    assert (r.lo, r.hi) == (0.0, pytest.approx(2863.135, rel=1e-6))
    cable.maxForce = 500.0
    assert actuator_range("cable", cable, rest_outputs=rest, young_modulus=600.0, points=points).hi == 500.0


def test_cavity_ranges_from_bounds_and_defaults():
    from softsim.mechanics.scene import CavitySpec

    points = np.array([[0.0, 0.0, 0.0], [50.0, 10.0, 20.0]])
    rest = {"bellow.initialCavityVolume": 1234.0}
    cavity = CavitySpec(name="bellow", set="inner")
    r = actuator_range("cavity", cavity, rest_outputs=rest, young_modulus=600.0, points=points)
    assert (r.lo, r.hi) == (0.0, pytest.approx(60.0))  # 0.1 E
    assert (r.hard_lo, r.hard_hi) == (-1e12, 1e12) and "default" in r.source
    cavity.valueType, cavity.minVolumeGrowth, cavity.maxVolumeGrowth = "volumeGrowth", -5.0, math.inf
    r = actuator_range("cavity", cavity, rest_outputs=rest, young_modulus=600.0, points=points)
    assert (r.lo, r.hi, r.hard_lo, r.hard_hi) == (-5.0, 1234.0, -5.0, 1e12)  # rest volume as default top
    cavity.valueType, cavity.minPressure, cavity.maxPressure = "pressure", 2.0, 8.0
    r = actuator_range("cavity", cavity, rest_outputs=rest, young_modulus=600.0, points=points)
    assert (r.lo, r.hi, r.source) == (2.0, 8.0, "minPressure, maxPressure")


def test_value_type_switch_changes_the_range(docks, session):
    control = docks["actuators_dock"].controls["cable"]
    control.value_type.setCurrentText("force")
    assert session.spec.bodies[0].cables[0].valueType == "force"
    assert control.range.lo == 0.0 and control.range.hi == pytest.approx(600.0 * 15.0**4 / 103.0**2, rel=1e-6)
    assert control.range_label.text().startswith("force in [0, 2863]")
    panel = docks["parameters_dock"]
    assert panel.editor("body.finger.cable.cable.valueType").findChild(QComboBox).currentText() == "force"


def test_cable_slider_bends_the_finger(docks, session, qtbot):
    control = docks["actuators_dock"].controls["cable"]
    assert control.value_type.currentText() == "displacement"
    assert control.range.lo == 0.0 and control.range.hi == pytest.approx(0.3 * 157.806, rel=1e-3)
    position = round(10.0 / control.range.hi * SLIDER_STEPS)
    control.slider.setValue(position)
    assert session.spec.bodies[0].cables[0].value == pytest.approx(control.slider_value(position))
    frame = step_and_wait(qtbot, session, frames=3)
    moved = np.linalg.norm(frame.x - session.rest_positions, axis=1).max()
    assert moved > 5.0, f"the finger moved only {moved:.3g} mm"
    assert frame.outputs["cable.displacement"] > 3.0  # pulled towards the commanded 10 mm
    assert frame.outputs["tip.y"] > 7.5 + 5.0  # the tip bends up (+y, towards the cable side)


def test_slider_edits_are_throttled(docks, session, qtbot):
    control = docks["actuators_dock"].controls["cable"]
    sent = []
    session.parameter_changed.connect(lambda path, value: sent.append(value))
    for position in range(10, 210, 10):  # 20 moves without the event loop running: one 33 ms tick
        control.slider.setValue(position)
    assert sent == [pytest.approx(control.slider_value(10))]
    qtbot.waitUntil(lambda: len(sent) == 2, timeout=60000)
    assert sent[-1] == pytest.approx(control.slider_value(200))
    assert session.spec.bodies[0].cables[0].value == pytest.approx(control.slider_value(200))


def test_readouts_update_from_frames(docks, session, qtbot):
    actuators = docks["actuators_dock"]
    assert session.set_parameter("body.finger.cable.cable.value", 8.0) is None
    frame = step_and_wait(qtbot, session, frames=2)
    control = actuators.controls["cable"]
    for quantity in ("cableLength", "displacement", "force"):
        assert control.readouts[f"cable.{quantity}"].text() == f"{frame.outputs[f'cable.{quantity}']:.6g}"
    assert float(control.readouts["cable.cableLength"].text()) < 157.0  # shortened from 157.806
    tip = actuators.effectors["tip"]
    assert set(tip.readouts) == {"tip.x", "tip.y", "tip.z", "tip.distance"}
    assert tip.readouts["tip.y"].text() == f"{frame.outputs['tip.y']:.6g}"
    # round-off reads 0: below 1e-9 of the finger's size (a length; its diagonal is over 100 mm) or of
    # E L^2 (a force); a value just above the floor is shown as it is
    size = float(np.linalg.norm(session.rest_positions.max(axis=0) - session.rest_positions.min(axis=0)))
    assert size > 100.0
    noisy = dict(frame.outputs, **{"cable.displacement": -2.8e-14, "tip.x": 3e-12, "tip.z": 2e-7 * size,
                                   "cable.force": -1e-15})
    actuators.update_frame(dataclasses.replace(frame, outputs=noisy))
    assert control.readouts["cable.displacement"].text() == "0" and tip.readouts["tip.x"].text() == "0"
    assert control.readouts["cable.force"].text() == "0"
    assert tip.readouts["tip.z"].text() == f"{2e-7 * size:.6g}"


def _read_csv(path):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def test_plots_receive_data_and_export_csv(docks, session, qtbot, tmp_path):
    plots = docks["plots_dock"]
    assert session.set_parameter("body.finger.cable.cable.value", 6.0) is None
    frame = step_and_wait(qtbot, session, frames=3)
    newton = frame.report.newton

    header, rows = _read_csv(plots.export_csv("newton", tmp_path / "newton.csv"))
    assert header == ["iteration", "residual_norm"]
    expected = np.sqrt([newton.squared_initial_residual, *newton.squared_residuals])
    assert len(rows) == len(expected)
    assert [int(r[0]) for r in rows] == list(range(len(expected)))
    np.testing.assert_allclose([float(r[1]) for r in rows], expected, rtol=1e-12)

    header, rows = _read_csv(plots.export_csv("constraint", tmp_path / "constraint.csv"))
    assert header == ["iteration", "error"]
    errors = np.asarray(frame.report.constraint.error_history)
    assert len(rows) == errors.size > 0
    np.testing.assert_allclose([float(r[1]) for r in rows], errors, rtol=1e-12)

    header, rows = _read_csv(plots.export_csv("actuators", tmp_path / "actuators.csv"))
    assert header == ["frame", "cable.displacement"]
    assert [int(r[0]) for r in rows] == [index for index, _ in plots.history]
    assert int(rows[-1][0]) == frame.index
    assert float(rows[-1][1]) == frame.outputs["cable.displacement"]
    assert float(rows[0][1]) == 0.0  # the rest frame
    header, rows = _read_csv(plots.export_csv("forces", tmp_path / "forces.csv"))
    assert header == ["frame", "cable.force"]
    assert float(rows[-1][1]) == frame.outputs["cable.force"] > 0.0

    header, rows = _read_csv(plots.export_csv("effectors", tmp_path / "effectors.csv"))
    assert header == ["frame", "tip.x", "tip.y", "tip.z", "tip.distance"]
    assert [float(v) for v in rows[-1][1:]] == [frame.outputs[k] for k in header[1:]]
    assert str(frame.index) in plots.summary.text() and "Newton" in plots.summary.text()


def test_an_empty_plot_shows_no_ticks_and_a_new_scene_forgets_the_old_axes(docks, session, qtbot):
    """Before any frame a log plot shows "no data yet" and no tick labels (not 10^0..10^1 of nothing); after
    a frame it shows the data; a reset (a new scene) brings back the empty state and the automatic range."""
    plots = docks["plots_dock"]
    plot = plots.constraint_plot
    # Gauss-Seidel's errors to plot (with the default exact tangent the cable row is solved exactly: error 0)
    assert session.set_parameter("body.finger.material.corotationalTangent", "sofa") is None
    plots.reset()
    assert plot.empty_text.isVisible() and not plot.plot.getAxis("left").style["showValues"]
    step_and_wait(qtbot, session, frames=2)
    plots.flush()
    assert not plot.empty_text.isVisible() and plot.plot.getAxis("left").style["showValues"]
    plot.plot.setYRange(-30, -20)  # the user zoomed far away
    plots.reset()
    assert plot.empty_text.isVisible()
    step_and_wait(qtbot, session, frames=1)
    plots.flush()
    errors = np.log10(plot.series["error"][plot.series["error"] > 0])

    def around_the_data():  # pyqtgraph applies the automatic range when it paints
        low, high = plot.plot.getViewBox().viewRange()[1]
        return low <= errors.min() and errors.max() <= high

    qtbot.waitUntil(around_the_data, timeout=60000)


def test_plot_history_is_a_rolling_window(docks, session, qtbot):
    plots = docks["plots_dock"]
    plots.history_spin.setValue(10)
    for index in range(1, 16):  # fed directly: every frame counts, none is skipped by the poll
        plots.update_frame(_fake_frame(index, {"cable.displacement": 0.5 * index, "cable.force": 1.0}))
    plots.flush()  # the redraw is rate-bounded: the last frames wait for the timer
    assert [i for i, _ in plots.history] == list(range(6, 16))
    np.testing.assert_array_equal(plots.actuator_plot.series["cable.displacement"], 0.5 * np.arange(6, 16))
    plots.update_frame(_fake_frame(0, {"cable.displacement": 0.0}))  # a reset starts again
    plots.flush()
    assert [i for i, _ in plots.history] == [0]
    assert math.isnan(plots.force_plot.series["cable.force"][0])


def _fake_frame(index, outputs):
    from softsim.mechanics.simulation import Frame

    empty = np.zeros(0)
    return Frame(index=index, x=np.zeros((0, 3)), displacement=empty, von_mises=empty, von_mises_nodal=empty,
                 outputs=outputs, report=None)


def test_panels_rebuild_for_a_new_scene(docks, session, qtbot, tmp_path):
    text = FINGER.read_text()
    text = text.replace('mesh = "../meshes/finger.vtu"', f'mesh = "{resource_path("meshes", "finger.vtu").as_posix()}"')
    text = text.replace('name = "cable"', 'name = "pull"').replace("minForce = 0.0", "maxPositiveDisp = 12.0")
    scene = tmp_path / "renamed.toml"
    scene.write_text(text)
    step_and_wait(qtbot, session)
    plots = docks["plots_dock"]
    assert len(plots.history) >= 2
    assert session.open_scene(scene)
    parameters = docks["parameters_dock"]
    assert "body.finger.cable.pull.value" in parameters.editors
    assert "body.finger.cable.cable.value" not in parameters.editors
    assert parameters.editor("body.finger.cable.pull.maxPositiveDisp").findChild(QLineEdit).text() == "12"
    controls = docks["actuators_dock"].controls
    assert list(controls) == ["pull"]
    assert controls["pull"].range.hi == 12.0 and "maxPositiveDisp" in controls["pull"].range.source
    assert [index for index, _ in plots.history] == [0]
    plots.flush()
    assert plots.actuator_plot.series.keys() == {"pull.displacement"}
    assert plots.force_plot.series.keys() == {"pull.force"}


BALLOON = """
[scene]
units = "mm-kg-s"
gravity = [0.0, 0.0, 0.0]

[[body]]
name = "balloon"
mesh = "{mesh}"

  [body.material]
  youngModulus = 100.0
  poissonRatio = 0.3

  [[body.material.region]]
  box = [-15.0, -15.0, 0.0, 15.0, 15.0, 15.0]
  youngModulus = 200.0

  [[body.fixed]]
  set = "base"

  [[body.cavity]]
  name = "inner"
  set = "cavity"

[[obstacle]]
name = "floor"
type = "plane"
point = [0.0, 0.0, -40.0]
normal = [0.0, 0.0, 1.0]
"""


def test_a_cavity_scene_with_regions_and_obstacles(qtbot, session, tmp_path):
    scene = tmp_path / "balloon.toml"
    scene.write_text(BALLOON.format(mesh=resource_path("meshes", "balloon.vtu").as_posix()))
    docks = create_docks(session, None)
    for dock in docks:
        qtbot.addWidget(dock)
    assert session.open_scene(scene), session.last_error
    parameters, actuators, plots, _tree = (dock.widget() for dock in docks)
    assert {"Material: balloon", "Cavity: inner", "Obstacle: floor", "Body: balloon"} <= set(parameters.sections)
    assert set(parameters.editors) == {path for path, _ in list_parameters(session.spec)}
    # A region of the material and the obstacle are edited like any other key.
    assert parameters.editor("body.balloon.material.region[0].youngModulus").edit("300")
    assert session.spec.bodies[0].material.regions[0].youngModulus == 300.0
    assert parameters.editor("body.balloon.material.region[0].box").edit("[-15, -15, 5, 15, 15, 15]")
    assert session.spec.bodies[0].material.regions[0].box == (-15.0, -15.0, 5.0, 15.0, 15.0, 15.0)
    box = parameters.editor("body.balloon.material.region[0].box")
    assert not box.edit("[0, 0, 0, -1, 1, 1]") and "xmin > xmax" in box.error_text
    assert parameters.editor("obstacle.floor.friction").edit("0.4")
    assert session.spec.obstacles[0].friction == 0.4
    # The cavity: pressure slider over [0, 0.1 E] = [0, 10], readouts of volume, pressure and growth.
    control = actuators.controls["inner"]
    assert (control.range.lo, control.range.hi) == (0.0, pytest.approx(10.0))
    control.spin.setValue(2.0)
    assert session.spec.bodies[0].cavities[0].value == 2.0
    frame = step_and_wait(qtbot, session, frames=2)
    assert frame.outputs["inner.volumeGrowth"] > 0.0
    for quantity in ("cavityVolume", "pressure", "volumeGrowth"):
        assert control.readouts[f"inner.{quantity}"].text() == f"{frame.outputs[f'inner.{quantity}']:.6g}"
    plots.flush()
    assert plots.force_plot.series.keys() == {"inner.pressure"}
    assert plots.actuator_plot.series["inner.volumeGrowth"][-1] == frame.outputs["inner.volumeGrowth"]


def test_a_value_the_worker_refuses_is_reverted_in_the_session_spec(docks, session, qtbot):
    """The file's rules accept a set name, but the mesh has no such set: the scene refuses it when building."""
    path = "body.finger.fixed[0].set"
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    assert session.set_parameter(path, "no_such_set") is None  # valid for the file's rules
    assert session.spec.bodies[0].fixed[0].set == "no_such_set"
    qtbot.waitUntil(lambda: any(text.startswith(f"set {path}:") for _, text in messages), timeout=60000)
    qtbot.waitUntil(lambda: session.spec.bodies[0].fixed[0].set is None, timeout=60000)  # the scene kept its box
    assert session.spec.bodies[0].fixed[0].box == (-15.0, 0.0, 0.0, 5.0, 10.0, 15.0)
    error = next(text for level, text in messages if text.startswith(f"set {path}:"))
    assert "no_such_set" in error


def test_every_declared_parameter_of_the_panel_refuses_like_the_file(docks, session):
    """Each numeric editor refuses a value just outside its declared range with the loader's message (the one
    tests/mechanics/test_declarations.py finds in the file format) and changes nothing; integer spin boxes
    cannot leave the declared range; every tooltip carries the declared help text and unit."""
    from softsim.mechanics.scene import get_value
    from softsim.mechanics.scene.kinds import Integer, Invalid, Real

    panel = docks["parameters_dock"]
    checked = 0
    for info in describe_parameters(session.spec):
        editor = panel.editor(info.path)
        assert info.declaration.help in editor.toolTip() and (not info.unit or f"[{info.unit}]" in editor.toolTip())
        kind = info.kind
        if isinstance(kind, Integer):
            assert editor.spin.minimum() == kind.lo and editor.spin.maximum() == kind.hi
            continue
        if not isinstance(kind, Real) or (kind.lo is None and kind.hi is None):
            continue
        bad = (kind.lo if kind.lo_open else kind.lo - 1.0) if kind.lo is not None else \
            (kind.hi if kind.hi_open else kind.hi + 1.0)
        try:
            kind.convert(bad)
        except Invalid as error:
            message = str(error)
        before = session.spec.solver.constraint.tolerance, info.value
        assert not editor.edit(format_real(bad)), info.path
        assert editor.error_text == f"finger.toml: {info.path}: {message}"
        assert (session.spec.solver.constraint.tolerance, get_value(session.spec, info.path)) == before
        checked += 1
    assert checked == 26  # with the fixed region's maxAngleVariation (a servo key)


def test_readouts_ranges_and_plot_axes_carry_the_scenes_units(docks, session, qtbot):
    """The finger is in mm-kg-s: lengths in mm, forces in mN; a scene in SI shows m and N."""
    from softsim.mechanics.units import output_quantity, unit_label

    step_and_wait(qtbot, session)
    actuators = docks["actuators_dock"]
    control = next(iter(actuators.controls.values()))
    readouts = list(control.readouts.values())
    rows = {label.text() for label in control.findChildren(QLabel) if label.buddy() in readouts}  # their titles
    assert {"cableLength [mm]", "displacement [mm]", "force [mN]"} <= rows
    assert " mm (" in control.range_label.text()
    plots = docks["plots_dock"]
    assert plots.newton_plot.plot.getAxis("left").labelText == "|R| [mN]"
    assert plots.force_plot.plot.getAxis("left").labelText == "force [mN] / pressure [kPa]"
    assert (unit_label("pressure", "SI"), unit_label("force", "mm-kg-s"), unit_label("volume", "mm-kg-s")) == \
        ("Pa", "mN", "mm^3")
    assert (output_quantity("x1"), output_quantity("volumeGrowth"), output_quantity("contacts")) == \
        ("length", "volume", None)
