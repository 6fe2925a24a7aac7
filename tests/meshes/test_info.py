"""`mesh_info`, `format_info` and the `info` command."""

from __future__ import annotations

import json

import pytest

from softsim.meshes import MeshError
from softsim.meshes.info import format_info, main, mesh_info
from tests.meshes.test_generate import RESOURCES


def test_mesh_info_keys_and_values():
    info = mesh_info(RESOURCES / "pneunet.vtu")
    assert set(info) >= {"file", "nodes", "tets", "volume", "bbox", "surface_triangles", "sets", "problems"}
    assert (info["nodes"], info["tets"], info["surface_triangles"]) == (1303, 4584, 2144)
    assert info["volume"] == pytest.approx(57156.0)
    assert info["bbox"] == [-115.0, 0.0, -10.0, 0.0, 30.0, 10.0]
    assert info["sets"] == {"base": 49, "stiff_layer": 596, "cavity": 592}
    assert info["set_kinds"] == {"base": "point", "stiff_layer": "cell", "cavity": "triangle"}
    assert info["problems"] == []
    text = format_info(info)
    assert "tetrahedra:        4584" in text and "  cavity (triangle): 592" in text
    json.dumps(info)  # serialisable as is


def test_main_exit_codes(capsys, tmp_path):
    assert main([str(RESOURCES / "finger.vtu"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["tets"] == 1512 and printed["sets"] == {"base": 20, "tip": 20}
    assert main([str(tmp_path / "missing.vtu")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.vtu: file not found" in err
    with pytest.raises(MeshError):
        mesh_info(tmp_path / "missing.vtu")
