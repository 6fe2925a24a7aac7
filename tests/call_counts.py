"""Test helper: count calls of an object's methods, patched on the instance (the class is untouched)."""

from __future__ import annotations


def count_calls(monkeypatch, obj, names) -> dict[str, int]:
    """Wrap the methods ``names`` of ``obj`` so that each call adds one to the returned ``{name: count}``.

    The wrappers take the method's positional and keyword arguments unchanged; ``monkeypatch`` undoes them
    at the end of the test (None: they stay, on an object that goes with the test, such as a scene in a
    simulation process).
    """
    counts = dict.fromkeys(names, 0)
    for name in counts:
        original = getattr(obj, name)

        def counting(*args, _original=original, _name=name, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        (setattr if monkeypatch is None else monkeypatch.setattr)(obj, name, counting)
    return counts
