"""Record and replay runs of a vector env, and check them against the modes.

The engine of :func:`vecmode.probe_mode` and of the conformance kit
(:mod:`vecmode.testing`): :mod:`~vecmode.replay.record` drives envs and records
their calls, :mod:`~vecmode.replay.predictions` checks a run against a mode's
predictions or against its replay, :mod:`~vecmode.replay.compare` compares
values exactly and describes a difference.
"""
