"""Moved to :mod:`vecmode.replay.compare`; kept while modules outside the kit
(``vecmode.timeline``, some tests) still import it from here."""

from vecmode.replay.compare import (
    MISSING,
    Difference,
    arrays_in,
    as_numpy,
    describe,
    per_sub_env,
    same,
    where_different,
)

__all__ = [
    "MISSING",
    "Difference",
    "arrays_in",
    "as_numpy",
    "describe",
    "per_sub_env",
    "same",
    "where_different",
]
