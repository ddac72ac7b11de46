"""Shared helpers for the pytest suites: run Python or ppy in a subprocess with a
private cache folder, so that tests never share state through .ppy-cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Runner:
    def __init__(self, cache_dir):
        self.cache_dir = cache_dir

    def env(self, **overrides):
        env = dict(os.environ)
        env["PPY_CACHE_DIR"] = str(self.cache_dir)
        env.pop("PPY_IMPORT", None)
        env.pop("PPY_JIT", None)
        env.pop("PPY_QUIET", None)
        env.pop("PPY_TRACE", None)
        env.update({k: v for k, v in overrides.items() if v is not None})
        return env

    def run(self, args, cwd=None, timeout=300, **env):
        return subprocess.run(args, cwd=cwd, env=self.env(**env), capture_output=True, text=True, timeout=timeout)

    def python(self, *args, **kwargs):
        return self.run([sys.executable, *map(str, args)], **kwargs)

    def ppy(self, *args, **kwargs):
        return self.run([sys.executable, "-m", "ppy", *map(str, args)], **kwargs)


@pytest.fixture
def runner(tmp_path):
    return Runner(tmp_path / "cache")
