#!/bin/sh
# Retake the README's screenshots: the window at 1400x900 under Xvfb, after enough frames to converge.
# Run from the repository root with softsim installed (make run or make test made .venv).
set -e
shot() {  # scene frames png [--set ...]
    scene=$1 frames=$2 png=$3
    shift 3
    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/softsim "resources/scenes/$scene.toml" \
        --frames "$frames" --screenshot "resources/screenshots/$png" "$@"
}
shot finger 3 finger.png --set body.finger.cable.cable.value=10
shot trunk 14 trunk.png --set body.trunk.cable.cableL0.value=12
shot pneunet 10 pneunet.png --set body.pneunet.cavity.cavity.value=40
shot gripper 3 gripper.png
shot balloon 8 balloon.png --camera front --set body.balloon.cavity.cavity.value=500
shot beam 2 beam.png
shot gripper_object 40 gripper_object.png
shot trunk_inverse 5 trunk_inverse.png --camera iso
shot gripper_grasp 70 gripper_grasp.png --camera front
