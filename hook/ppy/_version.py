"""The release of ppy: `ppy.__version__`, and the first part of every cache
entry's version (`_entry.version()`).

Kept apart from the package's `__init__`, which imports the import hook, so that
the cache entry's rules can read it without importing the package they are part
of. Imports nothing. pyproject.toml and CMakeLists.txt state the same release.
"""

__version__ = "0.1.0"
