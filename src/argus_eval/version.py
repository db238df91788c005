"""The package's version, in a module of its own: the runner keys its score cache on it, and the package
root (which exports the Python entry) imports the runner, so the runner cannot import the root."""

__version__ = "0.1.0"
