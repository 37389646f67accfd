"""Build hook, beside pyproject.toml (which holds all the metadata): it only adds
``gpunda_mxnet_alias.pth`` at the top of the installed tree, next to the gpunda package.

Python runs that one line at start-up; it does nothing unless ``GPUNDA_AS_MXNET``
is set (then ``import mxnet`` gives gpunda; see README.md and gpunda/_tools/alias.py).
Plain and editable installs both carry it.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

_PTH = "gpunda_mxnet_alias.pth"
_HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithPth(build_py):
    """build_py that also puts the start-up hook at the root of the installed tree."""

    def run(self):
        super().run()
        self.copy_file(os.path.join(_HERE, _PTH), os.path.join(self._pth_dir(), _PTH))

    def _pth_dir(self):
        if getattr(self, "editable_mode", False):
            # an editable wheel holds only what is in its unpacked tree, which the
            # install command names install_lib; build_lib is thrown away
            return self.get_finalized_command("install").install_lib
        return self.build_lib

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return outputs + [os.path.join(self.build_lib, _PTH)]


setup(cmdclass={"build_py": BuildPyWithPth})
