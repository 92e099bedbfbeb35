"""Moved to :mod:`vecmode.replay.compare`: an alias while ``vecmode.timeline`` and
some tests import it from here."""

from vecmode.replay.compare import *  # noqa: F403
