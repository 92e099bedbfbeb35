"""The compatibility registry: which autoreset modes each wrapper supports.

:func:`supports` and :func:`register` declare a wrapper's modes, checked when it is
built (Gymnasium's under :func:`guard`), and whether it is array-native (takes
torch or JAX batches); :func:`check_stack` reports on a stack. See
``docs/registry.md``."""

from vecmode.modes import Strict, strict
from vecmode.registry.construction import (
    Guard,
    guard,
    instrumented,
    register,
    supports,
    unregister,
)
from vecmode.registry.declare import (
    Declaration,
    ModeReasons,
    declaration,
    is_array_native,
    supported_modes,
)
from vecmode.registry.proof import (
    Evidence,
    evidence,
    record_env_verified,
    record_verified,
)
from vecmode.registry.stack import (
    CompatibilityReport,
    LayerReport,
    Verdict,
    assert_compatible,
    check_stack,
    require_mode,
)
from vecmode.registry.table import (
    OK_WITH_CAVEAT,
    TABLE_LEGEND,
    declarations,
    format_table,
    table_entries,
)

__all__ = [
    "OK_WITH_CAVEAT",
    "TABLE_LEGEND",
    "CompatibilityReport",
    "Declaration",
    "Evidence",
    "Guard",
    "LayerReport",
    "ModeReasons",
    "Strict",
    "Verdict",
    "assert_compatible",
    "check_stack",
    "declaration",
    "declarations",
    "evidence",
    "format_table",
    "guard",
    "instrumented",
    "is_array_native",
    "record_env_verified",
    "record_verified",
    "register",
    "require_mode",
    "strict",
    "supported_modes",
    "supports",
    "table_entries",
    "unregister",
]
