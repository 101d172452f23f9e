"""What `pip install .` (not editable) ships: every data file the package reads at run time."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_data_file_in_the_package_is_listed_as_package_data() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["minik"])
    package = ROOT / "minik"
    data = {str(path.relative_to(package)) for path in package.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts}
    assert data and data <= listed, f"not shipped by a non-editable install: {sorted(data - listed)}"
