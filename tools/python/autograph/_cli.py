"""The console scripts: each replaces this Python process with the installed tool.

The tools are the same files a source build installs (`make install`): the launcher is the
shell script tools/autograph, the report the Python script tools/autograph-report, the
predictor and the inspector C programs. Nothing is reimplemented here, so a command behaves
the same however it was installed. exec keeps the process: its id, its signals and its exit
status are the program's own, as the launcher documents.
"""

import os
import shutil
import sys

from autograph import tool_path


def _exec(argv0, path, args, interpreter=None):
    if interpreter is not None:
        argv = [interpreter, path] + args
        target = interpreter
    else:
        argv = [argv0] + args
        target = path
    try:
        os.execv(target, argv)
    except OSError as e:
        sys.stderr.write("%s: cannot run %s: %s\n" % (argv0, target, e.strerror))
        sys.exit(125 if argv0 == "autograph" else 2)


def launcher():
    """`autograph [OPTIONS] [--] PROGRAM ARGS...` (see `autograph --help`)."""
    # Run through bash rather than the script's own #! line, so that a wheel installer that
    # drops the executable bit cannot break it; the script finds the library beside its folder.
    bash = shutil.which("bash") or "/bin/bash"
    _exec("autograph", tool_path("autograph"), sys.argv[1:], interpreter=bash)


def report():
    """`autograph-report` (see `autograph-report --help`)."""
    _exec("autograph-report", tool_path("autograph-report"), sys.argv[1:], interpreter=sys.executable)


def predict():
    """`autograph-predict` (see `autograph-predict --help`)."""
    _exec("autograph-predict", tool_path("autograph-predict"), sys.argv[1:])


def inspect():
    """`autograph-inspect` (see `autograph-inspect --help`)."""
    _exec("autograph-inspect", tool_path("autograph-inspect"), sys.argv[1:])
