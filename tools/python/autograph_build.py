"""PEP 517 build backend of the `libautograph` Python package: setuptools, plus the project's
own make.

`pip install .` and `pip wheel .` come here (pyproject.toml names this module as the backend).
Everything but the two commands below is setuptools' own backend, unchanged.

- build_py builds the library and the tools with make (BUILD, default build/, in the source
  tree: a build already there is reused) and copies into the package what `make install`
  installs: lib/libautograph.so and bin/ with the launcher, autograph-report,
  autograph-predict and autograph-inspect.
- bdist_wheel tags the wheel py3-none-<platform>: the library has no Python ABI (any Python 3
  can carry it) but is an x86-64 Linux object. It links neither libcudart nor libcuda, so
  one wheel serves CUDA 12 and 13; `make wheel` then lets auditwheel vendor zstd and set the
  manylinux tag (docs/install.md).
"""

import os
import shutil
import subprocess

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403 (the backend's hooks)
from setuptools.command.build import build as _build
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.egg_info import egg_info as _egg_info

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools before 70.1 takes it from the wheel package
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

assert _orig  # the star import above is what pip calls

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ["autograph", "autograph-report", "autograph-predict", "autograph-inspect"]


def _build_dir():
    build = os.environ.get("BUILD", "build")
    return build if os.path.isabs(build) else os.path.join(ROOT, build)


def _setuptools_dir():
    """setuptools' own work folder: BUILD/python, so that nothing lands beside the sources."""
    path = os.path.join(_build_dir(), "python")
    os.makedirs(path, exist_ok=True)
    return os.path.relpath(path, ROOT)


class Build(_build):
    def initialize_options(self):
        super().initialize_options()
        self.build_base = _setuptools_dir()


class EggInfo(_egg_info):
    def initialize_options(self):
        super().initialize_options()
        self.egg_base = _setuptools_dir()


class BuildPy(_build_py):
    def run(self):
        super().run()
        build = _build_dir()
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["make", "-C", ROOT, "-j" + jobs, "BUILD=" + build,
                               build + "/libautograph.so", build + "/autograph-inspect",
                               build + "/autograph-predict"])
        pkg = os.path.join(self.build_lib, "autograph")
        os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
        os.makedirs(os.path.join(pkg, "bin"), exist_ok=True)
        shutil.copyfile(os.path.join(build, "libautograph.so"),
                        os.path.join(pkg, "lib", "libautograph.so"))
        sources = {"autograph": os.path.join(ROOT, "tools", "autograph"),
                   "autograph-report": os.path.join(ROOT, "tools", "autograph-report"),
                   "autograph-predict": os.path.join(build, "autograph-predict"),
                   "autograph-inspect": os.path.join(build, "autograph-inspect")}
        for name in TOOLS:
            dst = os.path.join(pkg, "bin", name)
            shutil.copyfile(sources[name], dst)
            os.chmod(dst, 0o755)


class BdistWheel(_bdist_wheel):
    def finalize_options(self):
        # Not pure: the package goes to platlib, the wheel's root (Root-Is-Purelib: false).
        self.distribution.has_ext_modules = lambda: True
        super().finalize_options()

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat
