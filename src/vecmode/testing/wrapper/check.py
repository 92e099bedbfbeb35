"""``check_wrapper``: prove that a vector wrapper is right in the modes it declares.

>>> from vecmode.testing import check_wrapper
>>> from vecmode.wrappers import ClipReward
>>> print(check_wrapper(lambda env: ClipReward(env, 0.0, 1.0)).summary)
ClipReward: right in NextStep, SameStep, Disabled ... transitions compared)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from importlib.util import find_spec
from itertools import takewhile
from types import MappingProxyType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from vecmode import _arrays
from vecmode._gymnasium import BATCH_DEPENDENT
from vecmode.env_classes import class_path, final_obs_layout, keeps_options, layers
from vecmode.errors import ArrayLibraryError, IncompatibleModeError, mode_names
from vecmode.modes import MODES, ModeLike, as_mode, final_in_info, resets_on_next_step
from vecmode.registry import declaration, is_array_native, supported_modes
from vecmode.replay.record import is_count
from vecmode.testing.envs import RESET_INFO_KEYS, ScheduledEnv
from vecmode.testing.wrapper import events, hints, schedules
from vecmode.testing.wrapper.driver import Driver, RunPlan
from vecmode.testing.wrapper.report import WrapperReport
from vecmode.testing.writes import WritesBelow

WrapperFactory = Callable[[VectorEnv], VectorEnv]
Runs = dict[tuple[int, AutoresetMode, str], events.Run]
_KINDS = ("obs_type", "action_type", "info_type", "render_mode")
_BUILD_PROPERTIES = frozenset({"builds_in_declared_modes", "refuses_undeclared_modes"})


def _reset_after_an_end(modes: tuple[AutoresetMode, ...]) -> tuple[AutoresetMode, ...]:
    """The modes whose reset() right after an end is compared: those whose env
    has not reset the ended sub-envs within the step (not SAME_STEP)."""
    found = tuple(mode for mode in modes if not final_in_info(mode))
    return found if len(found) > 1 else ()


def episode_statistics(info: dict[str, Any]) -> dict[str, float | int] | None:
    """For ``compare_info``: ``{"return": r, "length": l}`` of a transition's
    ``info["episode"]`` (``RecordEpisodeStatistics``'s), None elsewhere.

    >>> episode_statistics({"episode": {"r": 1.5, "l": 3, "t": 0.01}})
    {'return': 1.5, 'length': 3}
    """
    episode = info.get("episode")
    if not isinstance(episode, dict) or "r" not in episode or "l" not in episode:
        return None
    return {
        "return": float(np.asarray(episode["r"])),
        "length": int(np.asarray(episode["l"])),
    }


def check_wrapper(
    factory: WrapperFactory,
    *,
    modes: ModeLike | Iterable[ModeLike] | None = None,
    obs_type: str = "box",
    action_type: str = "discrete",
    info_type: str = "numeric",
    render_mode: str | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
    num_envs: int = 3,
    transitions: int = 9,
    seed: int = 0,
    batch_dependent: bool | None = None,
    episodic: bool | None = None,
    bases: str | Iterable[str] | None = None,
    compare_info: Callable[[dict[str, Any]], Any] | None = episode_statistics,
    env_infos: bool = True,
    properties: str | Iterable[str] | None = None,
    array_library: str | None = None,
) -> WrapperReport:
    """Prove a vector wrapper right in every mode it declares, and refusing the
    others (``docs/authors.md`` says what is run and compared).

    Args:
        factory: the wrapper class, or a callable env -> wrapped env (a stack).
        modes: the modes to prove, one or a list (default: those declared).
        obs_type: the test sub-envs' (:class:`~vecmode.testing.ScheduledEnv`).
        action_type: the test sub-envs'.
        info_type: the test sub-envs'.
        render_mode: the test sub-envs'.
        wrappers: single-env wrappers around each test sub-env, innermost first.
        num_envs: the test sub-envs in each run (at least 2).
        transitions: real transitions compared per sub-env and run (at least 9).
        seed: seeds the first reset of each run and the actions sampled.
        batch_dependent: its values pool a call's sub-envs (default: its attribute).
        episodic: each episode's outputs as a fresh wrapper's (default: its attribute).
        bases: keys of ``BASES``, one or a list (default: ``DEFAULT_BASES``).
        compare_info: a function of a sub-env's info at a real transition (merged
            over SAME_STEP's ``final_info``) that must agree; None: none.
        env_infos: require the sub-envs' own infos (a step count, a reset key).
        properties: some of ``PROPERTIES``, one or a list (default: all).
        array_library: ``"torch"``, ``"jax"``: over that library's batches only;
            None: NumPy's, and torch's (else JAX's) for an array-native class.

    Raises:
        ConformanceError: (an ``AssertionError``) a property is broken, named.
    """
    asked = {name: events.kept(value) for name, value in locals().items()}
    bases, properties, modes = asked["bases"], asked["properties"], asked["modes"]
    over, only = _checked(asked)
    kinds: dict[str, Any] = {kind: asked[kind] for kind in _KINDS}
    ScheduledEnv(**kinds)  # bad kinds raise ValueError here, naming the choices
    kinds.update(num_envs=num_envs, wrappers=tuple(wrappers))
    if array_library not in (None, "numpy"):
        over = _over_library(array_library, bases)
        kinds["array_library"] = array_library
    pick = events.with_env_info(info_type, compare_info) if env_infos else compare_info
    check = WrapperCheck(factory, over, kinds, only, env_infos)
    report = check.prove(modes, transitions, seed, batch_dependent, episodic, pick)
    return _over_arrays_too(report, asked, check.box)


def _over_arrays_too(report: WrapperReport, asked: dict[str, Any], box: bool) -> Any:
    """``report``, with the proof over torch (else JAX) batches of Box observations
    of a class declaring array_native (``asked``: ``check_wrapper``'s arguments)."""
    given, cls = asked["array_library"], report.wrapper_class
    conversion = getattr(cls, "converts_arrays", False)  # proved over its input
    native = box and cls is not None and is_array_native(cls) and not conversion
    if given not in (None, "numpy") or not native:
        return report
    if given == "numpy":
        return replace(report, numpy_only="array_library='numpy'")
    if asked["bases"] is not None and schedules.ARRAY_BASE not in events.listed(
        asked["bases"]
    ):
        return replace(
            report, numpy_only=f"bases: array batches run over {schedules.ARRAY_BASE}"
        )
    library = next((x for x in ("torch", "jax") if find_spec(x)), None)
    if library is None:
        return replace(report, numpy_only="neither torch nor JAX installed")
    again = check_wrapper(**{**asked, "bases": None, "array_library": library})
    return replace(
        report,
        runs=report.runs + again.runs,
        transitions=report.transitions + again.transitions,
        also_over=library,
    )


def _over_library(library: Any, bases: Any) -> list[str]:
    """The base for a run over batches of ``library``, once both are checked."""
    if library not in schedules.ARRAY_LIBRARIES:
        raise ValueError(
            f"check_wrapper: array_library must be one of "
            f"{', '.join(map(repr, schedules.ARRAY_LIBRARIES))} or None, got "
            f"{library!r}"
        )
    base = schedules.ARRAY_BASE
    if bases is not None and list(bases) != [base]:
        raise ValueError(
            f"check_wrapper: over {library} batches it runs over {base} only (made "
            f"to return them), got bases={bases!r}; leave bases out."
        )
    schedules.library_module(library)  # ImportError here if it is not installed
    return [base]


def _checked(asked: dict[str, Any]) -> tuple[list[str], frozenset[str] | None]:
    """The bases and the properties asked for (``asked``: ``check_wrapper``'s
    arguments), once the arguments are checked."""
    factory, pick, properties = (
        asked[k] for k in ("factory", "compare_info", "properties")
    )
    if not callable(factory):
        raise TypeError(
            f"check_wrapper needs a wrapper class or a callable env -> wrapped env, "
            f"got {factory!r}; e.g. check_wrapper(lambda env: MyWrapper(env, k=3))"
        )
    if pick is not None and not callable(pick):
        raise TypeError(
            f"check_wrapper: compare_info must be a function of one sub-env's info, "
            f"such as lambda info: info.get({pick!r}); got {pick!r}"
        )
    resets = f" (its runs call reset() after {schedules.RESET_AT})"
    for name, value, least, why in (
        ("num_envs", asked["num_envs"], 2, ""),
        ("transitions", asked["transitions"], schedules.RESET_AT + 1, resets),
    ):
        if not is_count(value, least):
            raise ValueError(
                f"check_wrapper: {name} must be an int >= {least}{why}, got {value!r}"
            )
    over = events.listed(
        schedules.DEFAULT_BASES if asked["bases"] is None else asked["bases"]
    )
    if not over or any(name not in schedules.BASES for name in over):
        raise ValueError(
            f"check_wrapper: bases must be a list naming one or more of "
            f"{', '.join(map(repr, schedules.BASES))}; got {over!r}"
        )
    if properties is None:
        return over, None
    properties = events.listed(properties)
    if any(p not in events.PROPERTIES for p in properties):
        raise ValueError(
            f"check_wrapper: properties must be a list naming some of "
            f"{', '.join(events.PROPERTIES)}; got {properties!r}"
        )
    return over, frozenset(properties)


class WrapperCheck:
    """The checks of :func:`check_wrapper` on the wrapper ``factory`` builds."""

    def __init__(
        self,
        factory: WrapperFactory,
        over: list[str],
        kinds: dict[str, Any],
        only: frozenset[str] | None = None,
        env_infos: bool = False,
    ) -> None:
        self.factory, self.over = factory, over
        self.who = getattr(factory, "__name__", None) or type(factory).__name__
        self.kinds, self.only = kinds, only
        #: The key each sub-env's reset info must bring (None: not checked).
        self.reset_info_key = RESET_INFO_KEYS[kinds["info_type"]] if env_infos else None
        self.first_schedule = schedules.schedules(kinds["num_envs"], 1)[0]
        self.box = False  # the base envs' observations are a Box
        self.accepted: dict[AutoresetMode, VectorEnv] = {}
        self.refusals: dict[AutoresetMode, Exception] = {}
        #: the class's own errors when built (a bad argument, or its own refusal)
        self.raised: dict[AutoresetMode, Exception] = {}
        self.own_refusals: dict[AutoresetMode, str] = {}
        self.declared = supported_modes(factory) if isinstance(factory, type) else None
        #: the one class the factory builds (None: a stack)
        self.built: type | None = None
        self.layers = 1
        #: Whether every layer the factory stacks says it is episodic.
        self.episodic = False
        self.added: set[Any] = set()  # the keys it adds to its step infos
        self.read: set[Any] = set()  # those compare_info reads

    def on(self, prop: str) -> bool:
        """Whether ``prop`` is checked."""
        return self.only is None or prop in self.only

    def prove(
        self,
        modes: ModeLike | Iterable[ModeLike] | None,
        transitions: int,
        seed: int,
        batch_dependent: bool | None,
        episodic: bool | None,
        compare_info: Callable[[dict[str, Any]], Any] | None,
    ) -> WrapperReport:
        """Make the checks; the arguments are :func:`check_wrapper`'s."""
        self.build_in_every_mode()
        to_prove = self.modes_to_prove(modes)
        self.check_builds_in_declared_modes(to_prove)
        first = self.accepted[to_prove[0]]  # built (and closed) in that mode
        if batch_dependent is None:
            batch_dependent = _batch_dependent(first)
        episodic = self.episodic if episodic is None else episodic
        self.only = frozenset(  # episodic: only when asked
            p for p in events.PROPERTIES if self.on(p) and (episodic or p != "episodic")
        )
        runs, compared = list[str](), 0
        if self.only - _BUILD_PROPERTIES:
            single = first.single_action_space
            single.seed(seed)
            n = self.kinds["num_envs"]
            plan = RunPlan(
                "",
                to_prove[0],
                self.first_schedule,
                [[single.sample() for _ in range(7)] for _ in range(n)],
                transitions,
                seed,
                self.who,
                compare_info,
                self.only,
                array_library=self.kinds.get("array_library"),
                reset_info_key=self.reset_info_key,
            )
            runs, compared = self.check_mode_equivalence(
                to_prove, plan, batch_dependent
            )
        if self.on("refuses_undeclared_modes"):
            self.check_refuses_undeclared_modes(to_prove)
        return WrapperReport(
            self.who,
            to_prove,
            tuple(m for m in MODES if m in self.refusals),
            tuple(runs),
            compared,
            bool(batch_dependent),
            self.built,
            MappingProxyType(self.own_refusals),
            self.layers,
            tuple(self.over),
            tuple(p for p in events.PROPERTIES if self.on(p)),
            self.factory,
            MappingProxyType(self.kinds),
            declared=self.declared,
            unread_info=tuple(sorted(map(str, self.added - self.read))),
        )

    def build(self, base: VectorEnv) -> VectorEnv:
        """The wrapper over ``base`` (``TypeError`` if it is not a vector env).
        A factory that resets or steps ``base`` (to read a first observation,
        say) leaves the test sub-envs' schedules as it found them."""
        subs = [env.unwrapped for env in getattr(base.unwrapped, "envs", ())]
        fresh = [
            (env, vars(env).copy()) for env in subs if isinstance(env, ScheduledEnv)
        ]
        wrapped = self.factory(base)
        for env, state in fresh:
            vars(env).update(state)
        if not isinstance(wrapped, VectorEnv) or wrapped is base:
            got = "the env it was given" if wrapped is base else type(wrapped).__name__
            raise TypeError(
                f"check_wrapper({self.who}): the factory returned {got}, not a "
                f"gymnasium.vector.VectorEnv wrapping it; return the wrapped vector env"
            )
        return wrapped

    def build_in_every_mode(self) -> None:
        """Which modes the wrapper accepts when built, and which it declares."""
        for mode in MODES:
            envs = schedules.base_env(
                self.over[0], mode, self.kinds, self.first_schedule
            )
            self.box = type(envs.single_observation_space) is gym.spaces.Box
            try:
                wrapped = self.build(envs)
            except Exception as error:  # vecmode's refusal, or the class's error
                if isinstance(error, IncompatibleModeError):
                    self.refusals[mode] = error
                else:  # a bad argument, or its own refusal of the mode
                    self.raised[mode] = error
                envs.close()
                continue
            self.accepted[mode] = wrapped
            if self.declared is None:
                self.declared = supported_modes(wrapped)
            own = _over(wrapped, envs)
            names = [type(layer).__name__ for layer in own]
            # a stack is episodic if every layer's own class says so (a subclass
            # may keep state its base does not: it says so again)
            self.episodic = all(vars(type(x)).get("episodic", False) for x in own)
            self.layers = len(names)
            self.stack = "(".join(names) + ")" * (self.layers - 1)  # Outer(Inner)
            self.built = type(wrapped) if self.layers == 1 else None
        if not self.accepted and self.raised:  # it cannot be built: caller's error
            raised = next(iter(self.raised.values()))
            library = self.kinds.get("array_library")
            if library and isinstance(raised, ArrayLibraryError):
                raise events.ProofArgumentError(
                    f"check_wrapper({self.who}, array_library={library!r}): it is not "
                    f"array-native (it reads NumPy), so it cannot be proved over "
                    f"{library} batches. Prove it over NumPy (array_library=None), or "
                    f"declare it @vecmode.supports(..., array_native=True) if it "
                    f"computes in the batch's library."
                ) from raised
            raise raised
        for wrapped in self.accepted.values():
            if not isinstance(self.factory, type) and self.stack:  # by what it builds
                self.who = self.stack
            wrapped.close()

    def modes_to_prove(
        self, modes: ModeLike | Iterable[ModeLike] | None
    ) -> tuple[AutoresetMode, ...]:
        """The modes asked for, else the modes declared."""
        if self.declared is None and modes is None:
            raise events.ProofArgumentError(
                f"check_wrapper({self.who}): the wrapper declares no autoreset "
                f"modes; declare them with @vecmode.supports(...) (vecmode.register "
                f"for a class you don't own), or pass modes=[...]"
            )
        if isinstance(modes, (str, AutoresetMode)):
            modes = [modes]
        if modes is not None:
            to_prove = tuple(dict.fromkeys(as_mode(m) for m in modes))
        else:
            to_prove = tuple(m for m in MODES if self.declared and m in self.declared)
        if not to_prove:
            raise events.ProofArgumentError(
                f"check_wrapper({self.who}): no mode to prove (modes=[] or a "
                f"declaration with no supported mode)"
            )
        return to_prove

    def check_builds_in_declared_modes(
        self, to_prove: tuple[AutoresetMode, ...]
    ) -> None:
        """A mode to prove is built without error; another mode's error is a refusal."""
        for mode, own in self.raised.items():
            asked = mode in to_prove and self.declared is None  # (else declared)
            if asked or (self.declared and mode in self.declared):
                what = (
                    f"raised {type(own).__name__} there, in {mode.value}, a mode to "
                    f"prove: {own}"
                )
                where = f"built over a {mode.value} env"
                raise events.fail(
                    "builds_in_declared_modes", self.who, where, what
                ) from own
            self.refusals[mode] = own
            self.own_refusals[mode] = f"{type(own).__name__}: {own}"
        for mode in to_prove:
            if mode in self.refusals and self.declared and mode not in self.declared:
                raise events.ProofArgumentError(
                    f"check_wrapper({self.who}): modes asks to prove {mode.value}, "
                    f"which it does not declare and refuses when built; prove the "
                    f"modes it declares ({mode_names(self.declared)})"
                )
            if mode in self.refusals:
                what = f"refused a mode to prove: {self.refusals[mode]}"
                where = f"built over a {mode.value} env"
                raise events.fail("builds_in_declared_modes", self.who, where, what)

    def check_refuses_undeclared_modes(
        self, to_prove: tuple[AutoresetMode, ...]
    ) -> None:
        """Every mode the wrapper does not declare is refused when it is built (one
        asked for first: where the registry records it wrong, that is its verdict)."""
        asked_first = sorted(
            self.accepted.items(), key=lambda kv: kv[0] not in to_prove
        )
        for mode, wrapped in asked_first:
            if self.declared is None or mode in self.declared:
                continue
            where = f"built over a {mode.value} env"
            found = declaration(type(wrapped))
            if found is not None and mode in found.wrong:
                what = (
                    f"accepted {mode.value}, in which vecmode's registry records it "
                    f"as wrong: {found.wrong[mode]} (Gymnasium's own wrappers refuse "
                    f"it only under vecmode.guard())"
                )
                raise events.fail(
                    "refuses_undeclared_modes", self.who, where, what, found.instead
                )
            if mode in to_prove:
                continue
            raise events.fail(
                "refuses_undeclared_modes",
                self.who,
                where,
                f"accepted {mode.value}, which it does not declare",
                "Refuse undeclared modes at construction (@vecmode.supports and "
                "vecmode.register do).",
            )

    def check_mode_equivalence(
        self, to_prove: tuple[AutoresetMode, ...], plan: RunPlan, batch_dependent: bool
    ) -> tuple[list[str], int]:
        """The same events in every mode, base and schedule; labels, transitions."""
        labels: list[str] = []
        compared = 0
        runs: Runs = {}
        library = self.kinds.get("array_library")
        over = f" ({library} batches)" if library else ""
        for number, schedule in enumerate(
            schedules.schedules(self.kinds["num_envs"], plan.wanted)
        ):
            for mode in to_prove if number < 3 else _reset_after_an_end(to_prove):
                for name in self.over if number < 2 else self.over[:1]:
                    label = f"[{mode.value} over {name}{over}, {schedule.name}]"
                    labels.append(label)
                    this = replace(plan, label=label, mode=mode, schedule=schedule)
                    runs[number, mode, name] = self.run(name, this)
                    prop, pair, hint = self._compared_with(
                        runs, number, mode, name, to_prove[0]
                    )
                    if pair and self.on(prop):
                        compared += self._compare(
                            pair,
                            (prop, hint),
                            this,
                            (number, batch_dependent),
                            to_prove,
                        )
        first = to_prove[0]
        if batch_dependent and self.on("mode_equivalence_staggered"):
            self.check_batch_dependent(runs[1, first, self.over[0]], plan, first)
        if self.on("episodic"):
            label, more = self.check_episodic(runs[0, first, self.over[0]], plan)
            labels.append(label)
            compared += more
        return labels, compared

    def _compare(
        self,
        pair: tuple[events.Run, events.Run],
        why: tuple[str, str],
        plan: RunPlan,
        run: tuple[int, bool],
        to_prove: tuple[AutoresetMode, ...],
    ) -> int:
        """:func:`events.compare_runs` for the property and hint ``why``, of the
        runs of schedule ``run[0]`` (``run[1]``: batch-dependent); a mode
        equivalence failure names the mode alone differing, if one is."""
        (prop, hint), (number, batch_dependent) = why, run
        exact = prop == "same_over_every_base" or number == 0 or not batch_dependent
        try:
            return events.compare_runs(
                *pair, plan.wanted, exact, (prop, self.who, hint)
            )
        except events.ConformanceError as error:
            rest = [m for m in to_prove if m not in (to_prove[0], plan.mode)]
            if prop.startswith("mode_equivalence") and number < 3 and rest:
                label = plan.label.replace(plan.mode.value, rest[0].value, 1)
                try:  # (a failure of its own: the first one stands)
                    other = self.run(
                        self.over[0], replace(plan, label=label, mode=rest[0])
                    )
                except events.ConformanceError:
                    raise error from None
                three = {to_prove[0]: pair[0], plan.mode: pair[1], rest[0]: other}
                events.name_the_odd_mode(error, three, plan.wanted, exact, hint)
            raise

    def check_episodic(self, together: events.Run, plan: RunPlan) -> tuple[str, int]:
        """Each sub-env's episodes from its second on in ``together`` (the first
        run: episodes ending together) as a fresh wrapper's, over sub-envs that
        start at their second episode; the run's label, the transitions compared."""
        firsts = [lengths[0] for lengths in plan.schedule.lengths]
        wanted = plan.wanted - max(firsts)  # (>= 6: the fewest transitions are 9)
        label = f"[{together.label[1:-1]}, a fresh wrapper from episode 2]"
        queues = [  # sub-env i's k-th transition there is its (n + k)-th here
            q[n % len(q) :] + q[: n % len(q)]
            for q, n in zip(plan.queues, firsts, strict=True)
        ]
        fresh = replace(
            plan,
            label=label,
            queues=queues,
            wanted=wanted,
            schedule=plan.schedule.after(max(firsts)),  # (the firsts are equal)
        )
        run = self.run(self.over[0], fresh, {**self.kinds, "first_episode": 1})
        later = [e[1 + n :] for e, n in zip(together.events, firsts, strict=True)]
        there = events.Run(f"[{together.label[1:-1]}, from episode 2]", later)
        context = ("episodic", self.who, hints.EPISODIC)
        return label, events.compare_runs(there, run, wanted, True, context)

    def check_batch_dependent(
        self, batched: events.Run, plan: RunPlan, mode: AutoresetMode
    ) -> None:
        """A wrapper compared loosely as batch-dependent gives sub-env 0 other
        values alone than in the batch: else the claim only hides its errors."""
        alone = replace(
            plan,
            label=f"[{batched.label[1:-1]}, sub-env 0 alone]",
            mode=mode,
            schedule=schedules.schedules(1, plan.wanted)[1],  # sub-env 0's part
            queues=plan.queues[:1],
        )
        run = self.run(self.over[0], alone, {**self.kinds, "num_envs": 1})
        first = events.Run(batched.label, batched.events[:1])
        context = ("mode_equivalence_staggered", self.who, "")
        try:
            events.compare_runs(first, run, plan.wanted, True, context)
        except events.ConformanceError:
            return  # its values depend on the batch, as declared
        raise events.fail(
            "mode_equivalence_staggered",
            self.who,
            f"{run.label} and {batched.label}",
            "declared batch_dependent, so compared loosely, but sub-env 0 gets the "
            "same values alone as in the batch",
            "Remove batch_dependent: it is for outputs that pool the sub-envs of a "
            "call, and it lets errors in per-sub-env state go unseen.",
        )

    def _compared_with(
        self, runs: Runs, number: int, mode: AutoresetMode, name: str, first: Any
    ) -> tuple[str, tuple[events.Run, events.Run] | None, str]:
        """The property a run proves, the runs compared for it, the hint."""
        run, first_base = runs[number, mode, name], self.over[0]
        if number == 2:  # the same mode with cuts instead of truncations
            hint = hints.CUTS + (hints.CUTS_NEXT if resets_on_next_step(mode) else "")
            return "cut_like_truncated", (run, runs[1, mode, first_base]), hint
        if number == 3:  # reset() after an end: alike in those modes
            ref = next(m for n, m, _ in runs if n == 3)  # (the first run of them)
            pair = None if mode is ref else (runs[3, ref, first_base], run)
            return "mode_equivalence_together", pair, hints.RESET
        if name != first_base:  # the same mode over another base
            hint = hints.DENSE if name in schedules.DENSE_LAYOUT else hints.BASES
            return "same_over_every_base", (runs[number, mode, first_base], run), hint
        prop = f"mode_equivalence_{'together' if number == 0 else 'staggered'}"
        apart = number and self.on("mode_equivalence_together")
        hint = hints.STAGGERED if apart else hints.MODES
        return (
            prop,
            None if mode is first else (runs[number, first, first_base], run),
            hint,
        )

    def run(
        self, name: str, plan: RunPlan, kinds: dict[str, Any] | None = None
    ) -> events.Run:
        """One run of the wrapper over the base ``name`` (``kinds``: other test envs)."""
        base = schedules.base_env(name, plan.mode, kinds or self.kinds, plan.schedule)
        below = WritesBelow(base)  # before the wrapper is built over it
        try:
            wrapped = self.build(base)
        except Exception as error:  # over another base than the first: not built
            if name == self.over[0] and not isinstance(error, IncompatibleModeError):
                raise
            raise events.fail(
                "builds_in_declared_modes",
                self.who,
                plan.label,
                f"was not built (it is in {plan.mode.value} over {self.over[0]}): "
                f"{type(error).__name__}: {error}",
                f"Run it over the bases it wraps: check_wrapper(..., "
                f"bases=[{self.over[0]!r}]) (vecmode conform --bases {self.over[0]}).",
            ) from error
        own = _over(wrapped, base)
        plan = replace(
            plan,
            final_infos=name not in schedules.DENSE_LAYOUT,
            final_layout=_final_layout(own, base),
            base_keeps_options=keeps_options(base),
            reuses_observations=any(
                getattr(layer, "copy", None) is False for layer in [*own, base]
            ),
            below=below,
        )
        found = declaration(wrapped)
        if found is not None and found.output is not None:  # it changes the mode
            plan = replace(plan, mode=found.output)
        try:
            made = Driver(wrapped, plan).run()
        finally:
            wrapped.close()
        self.added |= made.info_keys
        self.read |= made.read
        return made


def _batch_dependent(wrapped: VectorEnv) -> bool:
    """The outermost ``batch_dependent`` class attribute of a layer, else whether
    Gymnasium's table lists ``wrapped``'s class."""
    for layer in layers(wrapped, limit=10_000):
        if any("batch_dependent" in vars(c) for c in type(layer).__mro__):
            return bool(layer.batch_dependent)
    return class_path(type(wrapped)) in BATCH_DEPENDENT


def _final_layout(own: list[Any], base: VectorEnv) -> str:
    """The final observations' layout the wrapper keeps: the base's, or one its
    own layer declares (an adapter's; over array batches: always dense)."""
    for layer in [] if _arrays.is_array_env(base) else own:
        said = getattr(type(layer), "final_obs_layout", None)
        if isinstance(said, str):
            return said
    return final_obs_layout(base)


def _over(wrapped: VectorEnv, base: VectorEnv) -> list[Any]:
    """The layers the factory stacked over ``base``."""
    return list(takewhile(lambda env: env is not base, layers(wrapped, limit=10_000)))
