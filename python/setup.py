"""Bundles kreplay's section files (../share/kreplay/sections) into the package when they are
there, so `pip install ./python` from a kreplay checkout carries the sections `kreplay report`
uses. Everything else is in pyproject.toml."""

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "share", "kreplay", "sections")


class BuildWithSections(build_py):
    def run(self):
        super().run()
        if os.path.isdir(SHARED):
            target = os.path.join(self.build_lib, "kreplay", "sections")
            os.makedirs(target, exist_ok=True)
            for path in glob.glob(os.path.join(SHARED, "*.yaml")):
                shutil.copy(path, target)


setup(cmdclass={"build_py": BuildWithSections})
