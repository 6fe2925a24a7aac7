"""The Parameters panel after an edit: a plain value updates its own table and the editors whose use depends on
it without reading the whole schema again, and what it shows is what a panel built afresh shows."""

import pytest

import softsim.app.panels.parameters as parameters_module
from softsim.app.panels.parameters import ParametersPanel
from softsim.app.resources import resource_path

pytestmark = pytest.mark.gui

FINGER = resource_path("scenes", "finger.toml")
CABLE = "body.finger.cable.cable.value"
CG_KEY = "solver.linear.maximum_number_of_iterations"


@pytest.fixture
def session(qtbot):
    from softsim.app.session import Session

    session = Session()
    assert session.open_scene(FINGER)
    yield session
    session.close()


@pytest.fixture
def panel(qtbot, session):
    panel = ParametersPanel(session)
    qtbot.addWidget(panel)
    return panel


@pytest.fixture
def walks(monkeypatch):
    """Counts the panel's reads of the whole schema."""
    calls = []
    describe = parameters_module.describe_parameters

    def counted(spec):
        calls.append(spec)
        return describe(spec)

    monkeypatch.setattr(parameters_module, "describe_parameters", counted)
    return calls


def shown(panel: ParametersPanel) -> dict:
    """Every editor's value and enabled state and its label's (the label beside it in its section's form), by key
    path."""
    return {path: (editor.value, editor.isEnabled(), editor.parentWidget().layout().labelForField(editor).isEnabled())
            for path, editor in panel.editors.items()}


def test_a_slider_edit_updates_its_editor_without_reading_the_whole_schema(panel, session, walks):
    for value in (3.0, 7.5, 12.25):
        assert session.set_parameter(CABLE, value) is None
        assert panel.editor(CABLE).value == value
    assert walks == []


def test_the_cg_settings_follow_the_linear_solvers_type_as_in_a_panel_built_afresh(panel, session, qtbot, walks):
    assert not panel.editor(CG_KEY).isEnabled()  # the finger's linear solver is direct
    assert session.set_parameter("solver.linear.type", "cg") is None
    assert panel.editor(CG_KEY).isEnabled() and not panel.editor("solver.linear.backend").isEnabled()
    assert session.set_parameter(CABLE, 4.0) is None
    assert session.set_parameter(CG_KEY, 250) is None
    assert session.set_parameter("scene.mode", "dynamic") is None  # the dynamics keys come into use
    assert panel.editor("scene.dt").isEnabled() and panel.editor("solver.dynamic.rayleighMass").isEnabled()
    assert walks == []
    fresh = ParametersPanel(session)
    qtbot.addWidget(fresh)
    assert shown(panel) == shown(fresh)
    assert panel.editor(CG_KEY).value == 250 and panel.editor(CABLE).value == 4.0


def test_an_edit_that_changes_the_keys_still_rebuilds_the_panel(panel, session, qtbot, walks):
    box = "body.finger.fixed[0].box"
    assert panel.editor(box).value is not None
    sphere = {"center": [-5.0, 5.0, 7.5], "radius": 30.0}
    assert session.set_parameter("body.finger.fixed[0].sphere", sphere) is None  # the sphere replaces the box
    assert len(walks) == 1  # an exclusive group: the whole schema read again, once
    qtbot.waitUntil(lambda: "body.finger.fixed[0].sphere.radius" in panel.editors, timeout=60000)
    assert panel.editor("body.finger.fixed[0].sphere.radius").value == 30.0
    assert panel.editor(box).value is None
