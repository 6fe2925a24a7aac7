"""The window and scene scripts: a question (QMessageBox) before a scene's scripts run, the answer remembered for
the file during the session, key presses in the view passed to the scripts' on_key."""

from __future__ import annotations

from pathlib import Path

import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QMessageBox

from softsim.mechanics.scene import load_scene, parse_data, save_scene, to_data

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]
CABLE = "body.finger.cable.cable.value"


def scripted_finger(tmp_path: Path) -> Path:
    (tmp_path / "keys.py").write_text(
        "def on_key(scene, key):\n"
        "    if key == 'Up':\n"
        "        scene.set('" + CABLE + "', scene.get('" + CABLE + "') + 2.0)\n", encoding="utf-8")
    (tmp_path / "finger.vtu").write_bytes((ROOT / "resources" / "meshes" / "finger.vtu").read_bytes())
    spec = load_scene(ROOT / "resources" / "scenes" / "finger.toml")
    data = to_data(spec)
    data["body"][0]["mesh"] = "finger.vtu"
    data["controller"] = [{"name": "keys", "script": "keys.py"}]
    path = tmp_path / "scripted.toml"
    save_scene(parse_data(data, source=str(path), base_dir=tmp_path), path)
    return path


def read(qtbot, session, path: str):
    answers = []
    session.call(f"read {path}", lambda scene: scene.get(path), lambda result, error: answers.append(result),
                 changes_scene=False)
    qtbot.waitUntil(lambda: bool(answers), timeout=30000)
    return answers[0]


def answer(monkeypatch, button) -> list:
    asked = []

    def exec_(box):
        asked.append(box.text())
        return button

    monkeypatch.setattr(QMessageBox, "exec", exec_)
    return asked


def test_the_window_asks_once_per_file_and_passes_keys_to_the_scripts(main_window, qtbot, tmp_path, monkeypatch):
    path = scripted_finger(tmp_path)
    asked = answer(monkeypatch, QMessageBox.StandardButton.Yes)
    assert main_window.open_path(path, dialog=False)
    assert len(asked) == 1 and "keys.py" in asked[0]
    session = main_window.session
    assert session.scripts_allowed
    qtbot.keyClick(main_window.viewport, Qt.Key.Key_Up)
    qtbot.keyClick(main_window.viewport, Qt.Key.Key_Down)  # the script ignores it
    qtbot.keyClick(main_window.viewport, Qt.Key.Key_Up)
    qtbot.waitUntil(lambda: read(qtbot, session, CABLE) == 4.0, timeout=30000)
    assert main_window.reload()
    assert len(asked) == 1  # remembered for this file
    assert session.scripts_allowed


def test_scripts_refused_in_the_window_do_not_run(main_window, qtbot, tmp_path, monkeypatch):
    path = scripted_finger(tmp_path)
    asked = answer(monkeypatch, QMessageBox.StandardButton.No)
    messages = []
    main_window.session.message.connect(lambda level, text: messages.append(text))
    assert main_window.open_path(path, dialog=False)
    assert len(asked) == 1
    session = main_window.session
    assert not session.scripts_allowed
    assert any("keys.py is not run" in text for text in messages)
    qtbot.keyClick(main_window.viewport, Qt.Key.Key_Up)
    assert session.key_pressed("Up") is False
    assert read(qtbot, session, CABLE) == 0.0
    assert main_window.reload() and len(asked) == 1
