"""libautograph for Python users: the preload library and its tools, installed by pip.

The library itself has no Python in it: it is a C shared object that the dynamic loader preloads
into a program (LD_PRELOAD) to replay the program's repeated CUDA launch sequences as CUDA
graphs. This package carries the built library and the command-line tools, and gives their paths:

    autograph python train.py            # run a program with the library preloaded
    python -m autograph train.py         # the same, through this interpreter's package
    autograph-report dump.json           # what the library did, from AUTOGRAPH_DUMP

`lib_path()` is the library's absolute path, for a program that sets LD_PRELOAD itself.
"""

import os

__all__ = ["lib_path", "tool_path"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def lib_path():
    """Absolute path of the installed libautograph.so (what LD_PRELOAD needs)."""
    return os.path.join(_HERE, "lib", "libautograph.so")


def tool_path(name):
    """Absolute path of one of the installed tools: "autograph" (the launcher),
    "autograph-report", "autograph-predict" or "autograph-inspect"."""
    if name not in ("autograph", "autograph-report", "autograph-predict", "autograph-inspect"):
        raise ValueError("no tool named %r" % (name,))
    return os.path.join(_HERE, "bin", name)
