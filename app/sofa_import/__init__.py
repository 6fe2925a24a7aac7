"""Import of SOFA / SoftRobots scenes (``.py``, ``.pyscn``, ``.scn``) into softsim's scene format; no Qt.

- :mod:`.graph`: the recorded scene graph (nodes, components, data fields, links);
- :mod:`.standin`, :mod:`.prefabs`, :mod:`.numerics`: the recording stand-in for SofaPython3 and the STLIB /
  SoftRobots prefabs, installed only while a scene file runs;
- :mod:`.xml_reader`: XML scenes;
- :mod:`.values`, :mod:`.translate`: the translation to scene tables; :mod:`.report`: what was not translated;
- :mod:`.live`: SOFA controllers run on a live softsim scene; :mod:`.importer`: the whole import;
  :mod:`.command`: ``softsim import``.

See docs/sofa-import.md.
"""

from softsim.app.sofa_import.importer import (
    SOFA_SUFFIXES,
    ImportFailure,
    ImportResult,
    import_scene,
    import_to_temporary,
    is_sofa_scene,
    load_sofa_scene,
    write_import,
)

__all__ = ["SOFA_SUFFIXES", "ImportFailure", "ImportResult", "import_scene", "import_to_temporary", "is_sofa_scene",
           "load_sofa_scene", "write_import"]
