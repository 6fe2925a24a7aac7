"""The README's Python example runs and does what it says."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert len(blocks) == 1
    result = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    displacement = float(re.search(r"cable displacement ([-\d.]+) mm", result.stdout).group(1))
    assert abs(displacement - 8.0) < 1e-3
    iterations = re.search(r"ImprovedJacobi: (\d+) iterations, converged: (\w+)", result.stdout)
    assert iterations and iterations.group(2) == "True"
