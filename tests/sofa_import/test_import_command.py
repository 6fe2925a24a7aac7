"""``softsim import`` and ``softsim run|check`` on SOFA scenes, the stand-in's restoration, and Qt-freedom."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from softsim.app.cli import main
from softsim.app.headless import main as headless_main
from softsim.mechanics.scene import load_scene

SOFA = Path(__file__).resolve().parents[1] / "data" / "softrobots" / "sofa"


def test_import_command_writes_scene_and_report(tmp_path, capsys):
    out = tmp_path / "new" / "finger.toml"
    assert main(["import", str(SOFA / "CableConstraint" / "Finger.py"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "/finger/visu/OglModel (OglModel): rendering" in printed
    assert f"wrote {out}" in printed
    spec = load_scene(out)
    assert spec.bodies[0].material.youngModulus == 600.0
    assert (out.parent / "finger.controllers.py").is_file()


def test_import_command_refuses_bad_input(tmp_path, capsys):
    assert main(["import", str(tmp_path / "missing.scn")]) == 2
    assert "missing.scn: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.scn"
    bad.write_text("<Node><Unclosed></Node>")
    assert main(["import", str(bad), "--out", str(tmp_path / "bad.toml")]) == 2
    assert "bad.scn: not a valid XML scene" in capsys.readouterr().err
    assert main(["import", str(SOFA / "scenes" / "SurfacePressureConstraint.scn"), "--out",
                 str(tmp_path / "x.txt")]) == 2
    assert "ends in .toml" in capsys.readouterr().err


def test_run_and_check_open_sofa_scenes(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    scn = SOFA / "scenes" / "SurfacePressureConstraint.scn"
    assert headless_main(["check", str(scn)], stdout=out, stderr=err) == 0
    assert "body bunny: 1911 nodes" in out.getvalue()
    assert "Imported SurfacePressureConstraint.scn (SOFA scene)." in err.getvalue()
    finger = SOFA / "CableConstraint" / "Finger.py"
    err = io.StringIO()
    assert headless_main(["check", str(finger)], stdout=io.StringIO(), stderr=err) == 2
    assert "pass --allow-scripts" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(["run", str(finger), "--allow-scripts", "--frames", "2", "--out", str(tmp_path / "run"),
                          "--no-vtu", "--set", "body.finger.cable.aCableActuator.value=2"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert (tmp_path / "run" / "frames.csv").is_file()


def test_sofa_import_does_not_import_qt(tmp_path):
    code = ("import sys; import softsim.app.sofa_import as s; "
            "s.import_scene(sys.argv[1], sys.argv[2]); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PyQt6', 'vtk', 'pyvista', 'vtkmodules')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    scn = SOFA / "scenes" / "SurfacePressureConstraint.scn"
    result = subprocess.run([sys.executable, "-c", code, str(scn), str(tmp_path / "bunny.toml")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_session_opens_sofa_scenes_with_the_report():
    from softsim.app.session import Session

    session = Session(qt=False)
    messages = []
    session.message.connect(lambda level, text: messages.append((level, text)))
    try:
        assert session.open(SOFA / "scenes" / "SurfacePressureConstraint.scn")
        assert session.spec.bodies[0].material.youngModulus == 18000.0
        assert any(level == "warning" and "/VisualStyle (VisualStyle): rendering" in text for level, text in messages)
        # a Python scene is code: refused unless scripts are allowed
        assert not session.open(SOFA / "CableConstraint" / "Finger.py")
        assert "allow scripts" in session.last_error
        assert session.open_sofa(SOFA / "CableConstraint" / "Finger.py", allow_scripts=True)
        assert session.spec.bodies[0].cables[0].name == "aCableActuator"
    finally:
        session.close()
