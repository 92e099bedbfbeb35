"""Record and replay runs of a vector env, and check them against the modes:
the engine :func:`vecmode.probe_mode` and :mod:`vecmode.testing` share."""
