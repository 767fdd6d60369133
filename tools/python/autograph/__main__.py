"""`python -m autograph PROGRAM ARGS...`: the launcher, as the `autograph` command."""

from autograph._cli import launcher

launcher()
