"""The one build step pyproject.toml cannot declare: ship the top-level data dirs in the wheel.

`sql/` and `tasks/` stay at the repository root (the layout in DESIGN.md); a wheel carries a
copy of each as `crucible_data/<dir>` beside the code packages, where
`verifiers.datadirs.data_dir` finds them once installed. An editable install copies nothing:
a checkout keeps reading its own dirs. Every file is copied except bytecode caches.
(Declaring them as mapped packages instead would have to list every code package by hand
and makes setuptools warn once per task directory, ~160 times a build.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = ("sql", "tasks")  # verifiers.datadirs.DATA_DIRS
PACKAGE = "crucible_data"  # verifiers.datadirs.PACKAGE
SKIP = shutil.ignore_patterns("__pycache__", "*.py[co]")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for name in DATA_DIRS:
            dest = Path(self.build_lib) / PACKAGE / name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(name, dest, ignore=SKIP)


setup(cmdclass={"build_py": BuildPyWithData})
