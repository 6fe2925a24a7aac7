"""Keys for finger_keys.toml: Up and Down pull and release the cable by 1 mm, Left and Right move the finger's
clamp along x by 1 mm, and on_frame shows the cable's force in the log every 10 frames.

Run it with ``softsim run examples/controllers/finger_keys.toml --frames 20 --out out --allow-scripts`` or open it in
the window (which asks before it runs the script).
"""

import logging

CABLE = "body.finger.cable.cable.value"
CLAMP = "body.finger.fixed[0].translation"
log = logging.getLogger("finger_keys")


def on_key(scene, key):
    if key in ("Up", "Down"):
        step = 1.0 if key == "Up" else -1.0
        scene.set(CABLE, max(0.0, scene.get(CABLE) + step))
    elif key in ("Left", "Right"):
        dx, dy, dz = scene.get(CLAMP)
        scene.set(CLAMP, [dx + (-1.0 if key == "Left" else 1.0), dy, dz])


def on_frame(scene, time):
    frame = round(time / scene.get("scene.dt"))
    if frame % 10 == 0:
        log.info("t = %.2f s: cable force %.1f", time, scene.outputs().get("cable.force", 0.0))
