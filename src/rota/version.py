"""rota's version, in a module of its own.

`rota.__version__` re-exports it; the worker registry (the version in a worker's row) and
tracing (the tracer's version) read it from here, so that they need not import the
package's public API, which imports the App, which imports them.
"""

__version__ = "0.1.0"
