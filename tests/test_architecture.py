"""The architecture keeps its promises.

* Mode knowledge lives in ONE module, ``vecmode.modes``: no other module names
  SAME_STEP's info keys (``final_obs``, ``_final_obs``, ``final_info``,
  ``_final_info``) in code, or compares anything with an ``AutoresetMode`` member.
  Docstrings may mention them; the CLI's and the timeline's presentation text is
  allowed by name.
* Size is a cost: ``src/`` at most 17,000 lines, no module over 700, no function
  over 60 (docstring included), cyclomatic complexity at most 15 and radon's
  maintainability index A or B for every module.
* The modules stand in layers: no import (a lazy one inside a function included)
  runs from a lower layer up to a higher one, the library never imports the test
  kit, no private name crosses a package, and nothing installs an import hook.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "vecmode"
KEYS = frozenset({"final_obs", "_final_obs", "final_info", "_final_info"})
MEMBERS = frozenset({"NEXT_STEP", "SAME_STEP", "DISABLED"})
BOUNDARY_MODULE = SRC / "modes.py"
#: presentation text: what the CLI prints and the timeline draws
PRESENTATION = ("cli", "timeline.py")
#: the line budget: 17,000 after the consolidation, plus what each feature since
#: needed (the SB3 bridge's faults and options, seeded episodes, worker parent
#: death; make_vec's fallback to the sync core, the kit's and CLI's messages;
#: the batched CartPole over the array API in vecmode.testing; the array path
#: of the modes, policies, wrappers and kit: torch and JAX batches; its
#: kernels compiled on JAX and batches folded into long rows; the frame stack
#: and the rescales over them; the simulator adapters and their semantics; the
#: fixes of a user review: masked resets over layers wrong after one, the kit's
#: layout and library checks, SameStep's normalisation as Disabled's, the
#: adapters' all-False masks, masks in the env's library, the CLI's messages, the
#: array queues and statistics read, pickled and copied as NumPy's; the
#: collector's and to_sb3's warning over a stack that is not ok; a second review's:
#: the kit proving array-native classes over torch/JAX batches and checking
#: batch_dependent, checked declarations, Gymnasium's positional arguments and
#: env attributes through make_vec's policy, the sync core's env_fn errors,
#: unprintable errors and old Gym API returns named, close() after Ctrl-C and its
#: warning; less the simulator adapters' default mode and other cuts; then the
#: Ray core's watch of a dead actor's node and its close() warning, a worker's
#: KeyboardInterrupt and SystemExit as the sub-env's failure, the kit's copy=False
#: base and the mixin's skips, less a third review's cuts; the fixes of two more
#: reviews: the collector after a failed foreign step, the reader's mode, the
#: SameStep policy over a mask-ignoring env, the probe's verdicts, action
#: wrappers' batch check, evidence() of env classes, clearer errors; the probe
#: catching an env that resets inside the ending step, losing final observations;
#: with_autoreset replacing a policy on a core rather than stacking on it; JAX's
#: float32 episode clock moved up each minute; the probe's reset-in-step check by
#: other actions and under Gymnasium 0.29's keys; make_vec's advice for an id
#: with only a vector entry point; vecmode conform proving a vector env;
#: statistics assigned to obs_rms/return_rms checked and moved to the batch's
#: library; a reset_mask of another array library refused; vecmode check
#: defaulting to the vector entry point of an id that has only that; help texts;
#: key=value text likely meant otherwise refused; a file path as FACTORY;
#: to_sb3 moving RecordEpisodeStatistics's keys to the ending info;
#: check_vector_env failing a run too short for its masked resets; an outside
#: review's fixes: how conform read a FACTORY, statistics' var shape and
#: to_numpy on NumPy, make_vec's advice for an id with only a vector entry point;
#: to_sb3's statistics keys; probe's hint to conform; statistics assigned before
#: the first reset kept until the batches' library is known; less the outer
#: ring's consolidation: fields and helpers no longer spelt out twice; the cores'
#: rows of sub-envs not reset yet, in any space; to_sb3's options told apart by type;
#: BatchedCartPole's action shape checked; vecmode check --import; the pool
#: timeout naming sub-envs; conform --json's failed_property, the kit's limits of
#: a partial check; the collector's cut episodes and its closed state; the
#: collector's warning of undeclared layers over SameStep; DictInfoToList below
#: refused when built; a missing dependency as a usage error; with_autoreset's
#: view of NextStep's pending reset steps; the kit's episodic property and
#: conform --episodic (a stack episodic if every layer says so); from_sb3's
#: VecNormalize space, to_sb3's get_attr guard; a sub-env's flags read as
#: Gymnasium's sync env reads them; call and each results that do not pickle
#: named by sub-env; a sub-env's BaseException its failure in every core; an
#: env_fn returning no env named; reset's returns named; timeout checked;
#: make_vec's wrappers checked; reset's seed arrays named by shape; a worker dead
#: at construction: what to do; the sync core's never-reset sub-envs named;
#: ragged and text actions refused; non-daemonic workers shut down at exit;
#: review: VecNormalize's Dict keys, reward and action wrappers not warned of,
#: to_sb3 refusing DictInfoToList; a set of seeds and timeout=True refused; the
#: warning's layers named plainly; forked workers out of reach of the parent's
#: garbage collection; the collector's copied actions, fresh torch valid masks
#: and calls behind its back refused; the kit's reset() mid-episode and after an
#: end; the kit's big arrays summarised; the report's claims of no declaration
#: and of one mode; check --json's evidence not verified after a refusal; a broken
#: async env named by the collector; make_vec's schedule on a core; simulator
#: adapters' action shapes checked; integer rewards normalised as floats; dense
#: final infos' masks restricted to the ended rows; integer flags as bools; array
#: refusals naming vecmode's wrapper of the name, or how to declare; conform
#: --compare-info KEY; the kit names the mode alone differing, with its hint;
#: torch statistics changed in place seen; TransformAction array-native; review:
#: the freeze in the forked worker alone, the odd mode's message whole and
#: the first failure kept, --compare-info KEY never seen refused; reread: the
#: modes compared after an end read from modes.final_in_info; +26: the policies'
#: base split from autoreset/__init__.py, at its module limit; +16: a converted
#: env whose pending reset steps are unseen refuses steps until reset; +44:
#: infos of two types batched whole, shapes and structures that differ refused;
#: +1: the SB3 bridge's advice without add_note, VecNormalize's float bounds;
#: +3: the kit refuses fewer transitions than its runs' resets need; +5: infos
#: of the last one's keys and types skip the fit, the fit in two functions; +5:
#: simulator adapters refuse actions of another array library; review, +17:
#: the info fit checks lists, dict subclasses and arrays each time, promotes
#: numbers only; the kit's fewest transitions 9, its int info keys; masked
#: resets pass None again (sub-envs without options), object batches unfitted;
#: +54: after Ctrl-C in an async env's wait (step_wait too), the next call drains
#: the answers, warning of their failures; +14: the info fit remembers every
#: signature it fitted in a call and the deep keys of the last few hundred; +3:
#: to_sb3 takes the vector env's render_mode where the sub-envs are out of reach;
#: +1: reread mends; +22: the Ray core drains after Ctrl-C as the async one;
#: -5: the outer ring consolidated again; +14: SameStep warns where a reset
#: returned its ending step's array, the merge's dtype rule shared, the
#: collector's all-False mask; +1: the ended-sub-env error's advice; +14:
#: NormalizeObservation returns the rows a masked reset keeps as it last did,
#: the kit resets ended and cut sub-envs in turn or at once; +5: vecmode's own
#: vector envs have the autoreset_mode attribute; +1: empty observation spaces;
#: review, +17: the warning's helper, the kept rows whatever update_running_mean;
#: +20: NumPy's kept rows as the statistics each was normalised with, no copy;
#: review, +102: the registry's kept-rows fault, wrapt proxies and DictInfoToList
#: readers; unmasked infos merged row by row; the wrappers' host masks in the
#: env's library; NumPy flags of an array env named; +20: the NextStep caveat
#: of Gymnasium's reward transforms; +4: a mask of another library named first;
#: +6: check_vector_env's advice for a paid reset step; +40: the dense layout's
#: fault one function for guard() and check_stack, Gymnasium's non-readers let be;
#: kit review, +9: cut_like_truncated leaves out the reward at the cut; +20:
#: an episode on NextStep's reset step fails reset_step_stays_empty; +41: the
#: kit's limits name the info keys a wrapper adds that compare_info does not read;
#: +19: the kit fails a batched space that is not the single space batched; +6:
#: cut_like_truncated's advice in NextStep names the reset step counted; +1:
#: the kit's advice on stale spaces names set_spaces; diff review, +39: wrapt 2's
#: proxies, which envs keep their rows, nested and same-device info merges,
#: readers of no final observation declared, spaces with no __eq__, no pinning;
#: +2: the table legend on register()ed wrong modes; +3: install hints for a
#: package not on PyPI, the _episode caveat's when; five reviews, +58: the
#: collector's recovery from a failed Disabled reset and from refused resets
#: (+23), a StatefulWrapper's hook reading final observations only where its
#: class does (+22), adapters and from_sb3 counting calls (+7), from_sb3's action
#: batch check (+6); SameStep's final observation copied, its warning gone (-2);
#: EpisodeEndedError an AssertionError (+2); from_sb3's WorkerError waits a
#: second for the other workers a fault kills (+8); the probe's lost-finals
#: caveat left out where a step after an end raised (+2); second diff review,
#: +14: the collector blocked after a layer raised past a step that ran, conform
#: telling vecmode's refusals from failed checks, the kit's one-sub-env report;
#: +5: a simulator adapter refuses a seed that is not an int before running;
#: +2: the collector's two keep-rules made one, _holds_after; session 17,
#: +34: check_vector_env tries every other action of a small Discrete space
#: before it calls a step an autoreset step; CLI review, +23: the wrapper kit
#: reads ALE's dense layout, the report names its assumption, EnvIdError, the
#: unknown key=value named; +11 splitting two functions over complexity 15;
#: fault review, +24: get_attr of a method refused where it would be a copy,
#: a bad *_wait timeout refused before the call is taken; diff review, +1;
#: foreign-env review, +53: EnvPool SameStep keeps running sub-envs' infos,
#: async pools and episodic_life refused, vecmode layers keep options; +17:
#: the collector refuses async pools, ALE's shared metadata speaks for no one;
#: +1 the others in a SubEnvError are each worker's first; second diff review,
#: +18: a subclass's own reset copies no options, dtypes kept in the EnvPool
#: merge, close(timeout=0) taken, get_attr refuses every object's method; third
#: diff review, +15: the async-pool refusal its own (the collector's), the owner
#: of reset says copies_options, one dtype rule in both merges, methods only,
#: the SubEnvError wording (+1 above) taken back: close runs every sub-env;
#: the reread, -5: the unmasked merge's conditions folded; stop 55, +22: a
#: layer with a row per sub-env refused over an async pool, in check_stack too;
#: +25: a masked reset of a class that gets it wrong refused, the
#: collector keeps the actions given; +84: the kit over torch sees writes, a
#: Disabled env ending every step, GymnaxAdapter, batches in another library;
#: the collector copies rewards and flags; a conversion from another library;
#: the strict setting its own module, _strict.py, out of modes.py; the diff
#: review, +39: every vecmode layer refuses an async pool, a pool's own masked
#: reset taken again, AsyncVectorEnv(shared_memory=False) in NextStep refused by
#: what tracks episodes; list statistics refused; the kit reads final_info first;
#: the reread, +1: one VectorEnvDeclaration.reason for both refusals' words;
#: stop 56, -16: the probe's "same with other actions" evidence dropped; +35: the
#: kit checks reset infos, check_stack names keys a proof did not compare; +29:
#: the probe refuses SameStep to a NextStep env with SameStep's keys; +7:
#: conversions keep string and object info arrays as NumPy; +19: the probe's
#: other-actions evidence back where the next observation follows the action;
#: -14: the CLI's JSON documents built where printed; +26: to_sb3's seed with
#: per-sub-env options, from_sb3's step before reset, SB3 VecEnv messages; +25:
#: strict and guard handles released in their own task only, no decorators;
#: +27: check_stack checks a vector env kept under another name than env; +21:
#: Gymnasium's wrappers over a mode declared as a string; +9: check's usage error
#: for a bad argument, every mode named after a SameStep refusal; the diff review,
#: +13: the probe's late reset needs the masked reset's observation, the
#: other-actions evidence stands again and names the Disabled alternative; +18:
#: held envs' cycles, RecordVideo alone misreads a string mode, the CLI knows a
#: refusal naming SAME_STEP, to_sb3's schedule found first, @vecmode.strict;
#: +8: conform's options that do not fit the wrapper are usage errors; the
#: reread, +5: which Gymnasium wrapper misreads a string mode is data in _gymnasium;
#: stop 57, +23: a NumPy reset_mask before an array env's first batch refused;
#: -4: call, set_attr and each reach every sub-env whatever fails, close with them;
#: the diff review, +11: the mask converted, not refused; each's wording by how it
#: failed, the lowest sub-env first; coverage, -7: an unreachable NumPy check in
#: _arrays, the unused python -m vecmode.cli; +9: a Ctrl-C in a sub-env's close()
#: goes up once the others are closed; -10: the kit's report lines read its run, not
#: five of its fields; -6: check_wrapper's one-use _said folded into _batch_dependent;
#: -6: report.array_native, one use in check.py, is registry.is_array_native there; -1:
#: errors.mode_names where the probe and the kit spelt it out; +11: check_stack's
#: summary numbers two alike layers apart, check_wrapper reads generators once;
#: +3: with_env_info looks the step key up itself, to keep check_wrapper short;
#: +6: observation_mode's pair of non-spaces, Gymnasium's TypeError on the remote cores;
#: -12: dead, to_numpy's Dict and Tuple branches, NormalizeObservation._update;
#: -1: the ended record carries pending resets into another library, not refused;
#: -4: a declaration's kept_options_caveat says whether its faults need popped options;
#: +4: conform tries building on the base and array library asked for;
#: +11: WrapperConformance reads its options once, says why a property is skipped,
#: and keeps its error's traceback short;
#: +8: check_wrapper puts back the test sub-envs a factory reset or stepped;
#: +10: check_wrapper takes one mode, base or property as well as a list, and
#: says a key given for compare_info is not a function;
#: +10: a declared mode that is not a mode is the env's fault, not the caller's;
#: -1: probe_mode passes that error on as it is;
#: +3: conform --import, as check and table take it;
#: +1: a mode asked for that the class refuses by its own error is refused as asked;
#: +11: a staggered-only difference's hint starts with pooling (batch_dependent);
#: the hints in a module of their own;
#: +2: a wrapper not built over another base than the first fails, naming the bases;
#: +10: WrapperConformance warns of the info keys it did not compare;
#: 0: a NumPy-only layer over torch batches keeps its class's evidence;
#: 0: a factory returning the env it was given is refused as such;
#: +18: a difference in what compare_info picks is named as its field;
#: +4: a difference at or after a cut says so;
#: +11: a tracked wrapper over DISABLED refuses to step an ended sub-env;
#: +2: an array env's ArrayLibraryError names the library it declares;
#: +2: reset options that are not a dict are refused by every layer;
#: +2: gymnasium:NAME for a wrapper only vecmode has says so;
#: +2: statistics over a sub-env's own name the likely layer;
#: +8: check_wrapper's bases without vecmode's core keep the proof over NumPy;
#: +6: a mode asked for that the registry records wrong is the first verdict;
#: +8: float 0/1 flags read as bools on every array path, as integer ones;
#: +14: check_vector_env names a batch's library, not its host copy's ndarray
#: (the step arrays' check a function of its own);
#: +6: a simulator with no partial reset is not made SameStep by reset_mask;
#: +22: probe_mode says where SameStep's final observations are what the step
#: returned (the kit's check, moved to replay/predictions.py, serves both);
#: +6: GymnaxAdapter given what is not a gymnax env says what to pass;
#: +22: check_stack says no check can verify a lost or approximated layer (it
#: said how to verify them, which fails);
#: +6: a simulator adapter is refused in NextStep;
#: +5: ApproximateFinalObs over an undeclared env says how to declare it lost;
#: +20: the advice to convert into NextStep is given for a vecmode core alone;
#: +1: an overwritten final observation's note names the one look-alike)
MAX_SRC_LINES = 23_893
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY = 15
#: radon's maintainability index: A above 19, B from 10, C below
MIN_MAINTAINABILITY = 10


def modules() -> list[pathlib.Path]:
    return sorted(SRC.rglob("*.py"))


def module_name(path: pathlib.Path) -> str:
    parts = ["vecmode", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def rel(path: pathlib.Path) -> str:
    return str(path.relative_to(SRC))


# ------------------------------------------------------------- mode knowledge
def mode_knowledge(source: str) -> list[str]:
    """Where ``source`` names a SAME_STEP key in code or compares with a mode."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        )
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and node.value in KEYS
            and id(node) not in docstrings
        ):
            found.append(f"line {node.lineno}: names {node.value!r}")
        if isinstance(node, ast.Compare):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and sub.attr in MEMBERS:
                    found.append(f"line {node.lineno}: compares with {sub.attr}")
    return found


def test_the_scan_sees_what_it_must():
    """The check itself can fail."""
    assert mode_knowledge('"""final_obs in a docstring"""\nx = 1\n') == []
    assert mode_knowledge('y = infos["final_obs"]\n') == ["line 1: names 'final_obs'"]
    assert mode_knowledge("b = m is AutoresetMode.SAME_STEP\n") == [
        "line 1: compares with SAME_STEP"
    ]
    assert mode_knowledge("b = mode != modes.DISABLED\n") == [
        "line 1: compares with DISABLED"
    ]


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in modules()
        if p != BOUNDARY_MODULE and not rel(p).startswith(PRESENTATION)
    ],
    ids=rel,
)
def test_only_the_boundary_module_knows_the_modes(path):
    found = mode_knowledge(path.read_text())
    assert not found, (
        f"{rel(path)} knows the modes ({'; '.join(found)}): ask "
        f"vecmode.modes (its readers, writers and predicates) instead."
    )


# ------------------------------------------------------------------- the size
def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """The functions of ``source`` longer than ``limit`` lines, docstring included."""
    return [
        f"{node.name} (line {node.lineno}, {node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_the_size_checks_can_fail():
    body = "".join(f"    x = {i}\n" for i in range(3))
    assert long_functions(f"def f():\n{body}", limit=4) == []
    assert long_functions(f"def f():\n{body}    return x\n", limit=4) == [
        "f (line 1, 5 lines)"
    ]


def test_src_stays_within_its_line_budget():
    total = sum(len(p.read_text().splitlines()) for p in modules())
    assert total <= MAX_SRC_LINES, f"src/vecmode is {total} lines"


def test_no_module_is_too_long():
    too_long = [
        f"{rel(p)} ({n} lines)"
        for p in modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not too_long, (
        f"modules over {MAX_MODULE_LINES} lines: {', '.join(too_long)}; "
        f"split them along their seams (one job per module)."
    )


def test_no_function_is_too_long():
    too_long = [
        f"{rel(p)}: {f}" for p in modules() for f in long_functions(p.read_text())
    ]
    assert not too_long, (
        f"functions over {MAX_FUNCTION_LINES} lines: {', '.join(too_long)}; "
        f"split them into named steps."
    )


def test_no_function_is_too_complex():
    from radon import complexity as radon

    too_complex = [
        f"{rel(p)}:{block.lineno} {block.name} ({block.complexity})"
        for p in modules()
        for block in radon.cc_visit(p.read_text())
        if block.complexity > MAX_COMPLEXITY
    ]
    assert not too_complex, (
        f"cyclomatic complexity above {MAX_COMPLEXITY}: {', '.join(too_complex)}; "
        f"split it into named steps."
    )


def test_every_module_is_maintainable():
    from radon.metrics import mi_visit

    hard = [
        f"{rel(p)} ({index:.1f})"
        for p in modules()
        if (index := mi_visit(p.read_text(), True)) < MIN_MAINTAINABILITY
    ]
    assert not hard, (
        f"maintainability index below {MIN_MAINTAINABILITY} (radon's C): "
        f"{', '.join(hard)}; split the module along its seams."
    )


# ----------------------------------------------------------------- the imports
def package_of(path: pathlib.Path) -> str:
    """The package a module's relative imports start from."""
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports(source: str, package: str) -> list[tuple[int, str, str | None]]:
    """Every import in ``source``, lazy ones included: ``(line, module, name)``;
    ``name`` is None for ``import module``."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found += [(node.lineno, base, alias.name) for alias in node.names]
    return found


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module of vecmode's source (``vecmode._numpy``)."""
    top, *rest = dotted.split(".")
    return top == "vecmode" and SRC.joinpath(*rest).with_suffix(".py").exists()


def private_reaches(source: str, me: str, package: str) -> list[str]:
    """Private names module ``me`` takes from another module: ``from m import _x``,
    or a private module (``vecmode._numpy``, ``gymnasium.x._y``) outside the
    package that holds it."""
    found = set()
    for line, module, name in imports(source, package):
        if (
            name is not None
            and private(name)
            and module != me
            and not is_module(f"{module}.{name}")
        ):
            found.add(f"line {line}: {module}.{name}")
            continue
        parts = module.split(".") + ([name] if name and module == "vecmode" else [])
        for depth, part in enumerate(parts):
            holder = ".".join(parts[:depth])
            if private(part) and not (me == holder or me.startswith(holder + ".")):
                found.add(f"line {line}: {'.'.join(parts[: depth + 1])}")
                break
    return sorted(found)


def test_the_import_checks_can_fail():
    source = (
        "from vecmode.registry import _entries\n"
        "from vecmode.testing._compare import same\n"
        "from vecmode._numpy import host_array\n"
        "def f():\n"
        "    from gymnasium.envs.registration import _find_spec\n"
        "    from vecmode import _numpy, modes\n"
    )
    assert imports(source, "vecmode") == [
        (1, "vecmode.registry", "_entries"),
        (2, "vecmode.testing._compare", "same"),
        (3, "vecmode._numpy", "host_array"),
        (5, "gymnasium.envs.registration", "_find_spec"),
        (6, "vecmode", "_numpy"),
        (6, "vecmode", "modes"),
    ]
    assert private_reaches(source, "vecmode.x", "vecmode") == [
        "line 1: vecmode.registry._entries",
        "line 2: vecmode.testing._compare",
        "line 5: gymnasium.envs.registration._find_spec",
    ]
    assert private_reaches(source, "vecmode.testing.x", "vecmode.testing") == [
        "line 1: vecmode.registry._entries",
        "line 5: gymnasium.envs.registration._find_spec",
    ]


def test_no_private_name_crosses_a_package():
    found = [
        f"{rel(p)} {r}"
        for p in modules()
        for r in private_reaches(p.read_text(), module_name(p), package_of(p))
    ]
    assert not found, (
        f"private names used outside their package: {'; '.join(found)}; give "
        f"what another module needs a public name (Gymnasium's: its public API)."
    )


#: The test kit, and the command line that runs it (``vecmode conform``).
TEST_KIT_USERS = ("vecmode.testing", "vecmode.cli", "vecmode.__main__")


def test_the_library_does_not_import_the_test_kit():
    found = [
        f"{rel(p)} line {line}"
        for p in modules()
        if not module_name(p).startswith(TEST_KIT_USERS)
        for line, module, name in imports(p.read_text(), package_of(p))
        if module.startswith("vecmode.testing")
        or (module == "vecmode" and name == "testing")
    ]
    assert not found, f"the library imports vecmode.testing: {', '.join(found)}"


#: Names whose use would install an import hook or patch the import system.
IMPORT_HOOKS = frozenset(
    {"register_post_import_hook", "when_imported", "meta_path", "path_hooks"}
)


def test_nothing_installs_an_import_hook():
    found = [
        f"{rel(p)} line {node.lineno}: {name}"
        for p in modules()
        for node in ast.walk(ast.parse(p.read_text()))
        if (name := getattr(node, "attr", None) or getattr(node, "id", None))
        in IMPORT_HOOKS
    ]
    assert not found, f"import hooks: {', '.join(found)}"


# ------------------------------------------------------------- the public API
#: What a user types every day; the rest lives in named submodules.
TOP_LEVEL = {
    # the envs, make_vec, the policies
    "SyncVectorEnv", "AsyncVectorEnv", "RayVectorEnv", "make_vec",
    "NextStepAutoreset", "SameStepAutoreset", "DisableAutoreset", "with_autoreset",
    # the modes
    "MODES", "AutoresetMode", "ModeLike", "as_mode", "mode_of", "probe_mode",
    # the registry's verbs
    "supports", "register", "unregister", "supported_modes", "check_stack",
    "assert_compatible", "require_mode", "guard", "strict",
    "register_vector_env", "unregister_vector_env",
    # the training loop
    "TransitionCollector", "Transition",
    # the exceptions and the warning
    "IncompatibleModeError", "ArrayLibraryError", "EpisodeEndedError",
    "SubEnvError", "WorkerError",
    "WorkerTimeoutError", "UndeclaredModeWarning", "IncompatibleModeWarning",
    "wrappers", "__version__",
}  # fmt: skip


def test_the_top_level_is_what_users_type_every_day():
    import vecmode

    assert set(vecmode.__all__) == TOP_LEVEL
    for name in vecmode.__all__:
        assert getattr(vecmode, name) is not None, name


def test_a_submodule_name_at_the_top_level_says_where_it_lives():
    import vecmode

    with pytest.raises(
        AttributeError, match=r"; it is vecmode\.testing\.check_wrapper$"
    ):
        vecmode.check_wrapper  # noqa: B018
    with pytest.raises(AttributeError) as caught:
        vecmode.no_such_name  # noqa: B018
    assert str(caught.value) == "module 'vecmode' has no attribute 'no_such_name'"


# ------------------------------------------------------------------ the layers
#: vecmode's modules from the ground up: a module imports only from the layers
#: below its own (a package, such as ``vecmode.registry``, is one module here).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "_numpy",
        "_arrays",
        "_evidence",
        "_gymnasium",
        "_strict",
        "frames",
        "sb3_subenv",
    ),
    ("_rows", "infos"),
    ("modes",),
    ("core", "env_classes"),
    ("forwarding", "layout", "runner"),
    ("registry", "sync_vector_env", "worker"),
    ("autoreset", "wrappers", "pool", "remote", "simulators"),
    ("async_vector_env", "ray_vector_env", "replay", "transitions", "sb3"),
    ("make", "probe"),
    ("timeline", "testing", ""),  # "": the package's face, vecmode/__init__.py
    ("cli",),
    ("__main__",),
)


def unit(module: str) -> str:
    """The layer unit of a module: ``vecmode.registry.stack`` -> ``registry``."""
    return module.removeprefix("vecmode").lstrip(".").partition(".")[0]


def test_every_module_has_a_layer():
    placed = {name for layer in LAYERS for name in layer}
    assert {unit(module_name(p)) for p in modules()} == placed


def test_the_modules_stand_in_layers():
    level = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    known = {module_name(p) for p in modules()}
    upward = []
    for path in modules():
        me = unit(module_name(path))
        for line, module, name in imports(path.read_text(), package_of(path)):
            target = f"{module}.{name}" if f"{module}.{name}" in known else module
            if target not in known or unit(target) == me:
                continue
            if level[unit(target)] >= level[me]:
                upward.append(f"{rel(path)} line {line} imports {target}")
    assert not upward, (
        f"imports that do not go down a layer (tests/test_architecture.py's "
        f"LAYERS): {'; '.join(upward)}"
    )


#: An ``Args:`` entry naming several parameters, which mkdocstrings refuses.
SEVERAL_NAMES = re.compile(r"^\s+\*{0,2}\w+(, \*{0,2}\w+)+ ?(\(.*\))?: ", re.MULTILINE)


def several_names(doc: str) -> bool:
    return "Args:" in doc and bool(
        SEVERAL_NAMES.search(doc.split("Args:", 1)[1].split("\n\n", 1)[0])
    )


def test_the_args_check_can_fail():
    assert several_names("Do.\n\nArgs:\n    seed, options: as reset's.\n")
    assert not several_names("Do.\n\nArgs:\n    seed: as reset's.\n\nA, b: x.\n")


def test_every_args_entry_names_one_parameter():
    """The API reference (mkdocstrings, ``--strict``) refuses ``a, b: ...``."""
    found = [
        f"{rel(p)}: {node.name}"
        for p in modules()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and several_names(ast.get_docstring(node) or "")
    ]
    assert not found, f"Args entries naming several parameters: {found}"


def test_the_authors_module_map_is_the_layer_table():
    """docs/contributing.md's module map lists each module in its layer."""
    page = (SRC.parent.parent / "docs" / "contributing.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (.*?) \|", page, re.MULTILINE)
    shown = {
        int(level): {
            name.strip("`").removesuffix(".py").removesuffix("/")
            for name in names.split(", ")
        }
        for level, names in rows
    }
    wanted = {
        level: {"__init__" if name == "" else name for name in layer}
        for level, layer in enumerate(LAYERS)
    }
    assert shown == wanted
