"""The Ray core: sub-envs in Ray actors, on one machine or across a cluster; a
call is one remote call per busy actor (see docs/scaling.md). Ray is imported
only when a :class:`RayVectorEnv` is built."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import pickle
import re
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import Space
from gymnasium.error import ClosedEnvironmentError

from vecmode import errors, runner, worker
from vecmode.core import check_core_arguments
from vecmode.layout import actor_count, positive_count, slices
from vecmode.modes import CORE_MODE, ModeLike
from vecmode.pool import LIVENESS, next_wait
from vecmode.remote import CLOSE_GRACE, MessageFor, RemoteCore

#: Seconds construction waits before it warns that actors are not placed yet.
PLACEMENT_WARNING = 30.0
#: Seconds a WorkerError waits to learn which other actors died too (a busy
#: actor's call fails once Ray knows it dead: a ``ray.kill`` may take 0.5 s).
PROBE_SECONDS = 1.0
#: Seconds it waits for the actors on the node of a dead actor (not this
#: process's node): if the node died, their calls can fail seconds later.
NEIGHBOUR_SECONDS = 5.0

#: The ``actor_options`` that would break the core: the value they must keep, why.
REFUSED_OPTIONS: dict[str, tuple[Any, str]] = {
    "max_restarts": (
        0,
        "a restarted actor builds new sub-envs, so the env would go on with "
        "sub-envs that silently lost their state (vecmode reports a dead actor as "
        "a WorkerError instead)",
    ),
    "max_task_retries": (0, "a retried call would run the sub-envs' commands twice"),
    "max_concurrency": (1, "an actor's sub-envs must run one call at a time"),
    "lifetime": (None, "a detached actor would outlive a driver that dies"),
}

_said_ray_started = False


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "vecmode.RayVectorEnv needs Ray: pip install ray (plain ray, not "
            "ray[rllib], which pins an older Gymnasium; or, in a vecmode checkout, "
            "pip install '.[ray]')."
        ) from exc
    return ray


def ensure_ray(ray: Any) -> None:
    """Call a plain ``ray.init()`` if Ray is not initialised, and say so once."""
    global _said_ray_started
    if ray.is_initialized():
        return
    ray.init()
    if not _said_ray_started:
        address = ray.get_runtime_context().gcs_address
        try:
            warnings.warn(
                f"Ray was not initialised, so vecmode called ray.init() and is "
                f"connected to {address}. Call ray.init(...) yourself before "
                f"building the env to choose (ray.init(address='auto') on a "
                f"cluster).",
                stacklevel=3,
            )
        except BaseException:  # -W error: leave Ray as it was
            ray.shutdown()
            raise
        _said_ray_started = True


def check_actor_options(
    actor_options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    num_actors: int,
) -> list[dict[str, Any]]:
    """One dict of Ray actor options per actor; :data:`REFUSED_OPTIONS` refused."""
    if actor_options is None:
        options: list[Mapping[str, Any]] = [{}] * num_actors
    elif isinstance(actor_options, Mapping):
        options = [actor_options] * num_actors
    elif isinstance(actor_options, Sequence) and not isinstance(actor_options, str):
        options = list(actor_options)
        if len(options) != num_actors or not all(
            isinstance(o, Mapping) for o in options
        ):
            raise ValueError(
                f"actor_options as a list must hold one dict per actor "
                f"({num_actors}), got {len(options)} entries."
            )
    else:
        raise TypeError(
            f"actor_options must be a dict of Ray actor options or a list of one "
            f"per actor, got {type(actor_options).__name__} {actor_options!r}."
        )
    for one in options:
        for key, (allowed, why) in REFUSED_OPTIONS.items():
            value = one.get(key, allowed)
            if value != allowed and (key, value) != ("lifetime", "non_detached"):
                raise ValueError(
                    f"actor_options[{key!r}]={value!r} is not allowed: {why}. Leave "
                    f"it out (or {allowed!r})."
                )
    return [dict(one) for one in options]


def _actor_counts(num_actors: Any, envs_per_actor: Any) -> tuple[Any, Any]:
    num_actors = positive_count("num_actors", num_actors)
    envs_per_actor = positive_count("envs_per_actor", envs_per_actor)
    if num_actors is not None and envs_per_actor is not None:
        raise ValueError(
            f"give num_actors ({num_actors}) or envs_per_actor ({envs_per_actor}), "
            f"not both."
        )
    return num_actors, envs_per_actor


class SliceActor:
    """What runs in a Ray actor: sub-envs ``first ..`` and their SliceServer."""

    def __init__(
        self,
        first: int,
        env_fns: list[Callable[[], gym.Env]],
        spec: worker.SliceSpec,
        row: tuple[tuple[int, ...], np.dtype] | None = None,
    ) -> None:
        envs: list[gym.Env] = []
        passes = runner.IN_WORKER
        self.built_answer = worker.build_slice(first, env_fns, envs, spec, passes)
        #: A Box batch's rows (``row``: shape, dtype), sent raw after an EXECUTE.
        self.rows = (
            None if row is None else np.zeros((len(env_fns), *row[0]), dtype=row[1])
        )
        memory = (None, None, None)
        self.server = worker.SliceServer(
            first, envs, memory, spec, rows=self.rows, passes=passes
        )

    def built(self) -> tuple[Any, str, int]:
        """The answer once built, this actor's node id and process id."""
        import ray

        return self.built_answer, ray.get_runtime_context().get_node_id(), os.getpid()

    def handle(self, message: bytes) -> bytes:
        """The pickled answer to one pickled message (and the rows)."""
        decoded = pickle.loads(message)
        answer = self.server.handle(decoded)
        if self.rows is None or decoded[0] != worker.EXECUTE or answer[0] != worker.OK:
            return worker.encode(answer)
        return b"".join((worker.encode((worker.ROWS, *answer[1:])), self.rows.data))


@functools.cache
def remote_actor_class(ray: Any) -> Any:
    """``ray.remote(SliceActor)``, made once."""
    return ray.remote(SliceActor)


class RayVectorEnv(RemoteCore):
    """A vecmode core whose sub-envs run in Ray actors (DISABLED mode).

    Returns exactly what :class:`vecmode.SyncVectorEnv` returns, with the async
    core's surface and faults. Call ``ray.init(...)`` first (else vecmode calls
    a plain one and warns).

    >>> import numpy as np, gymnasium as gym
    >>> import vecmode
    >>> envs = vecmode.RayVectorEnv(
    ...     [lambda: gym.make("CartPole-v1", max_episode_steps=1)] * 4, num_actors=2)
    >>> envs  # sub-envs 0-1 in one actor, 2-3 in the other
    RayVectorEnv(num_envs=4, num_actors=2)
    >>> obs, infos = envs.reset(seed=0)
    >>> truncations = envs.step(np.ones(4, dtype=int))[3]
    >>> envs.awaiting_reset.tolist()  # DISABLED: the caller resets them
    [True, True, True, True]
    >>> obs, infos = envs.reset(options={"reset_mask": truncations})
    >>> envs.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        num_actors: int | None = None,
        envs_per_actor: int | None = None,
        actor_options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = None,
        copy: bool = True,
        observation_mode: str | tuple[Space, Space] = "same",
        autoreset_mode: ModeLike = CORE_MODE,
    ) -> None:
        """Start the actors and build the sub-envs in them.

        ``env_fns``, ``copy`` and ``observation_mode`` are as Gymnasium's.

        Args:
            num_actors: the number of actors (default: one per CPU of the
                cluster, at most one per sub-env).
            envs_per_actor: instead of ``num_actors``: at most this many sub-envs
                per actor.
            actor_options: Ray's ``actor.options(...)``: one dict for every actor,
                or a list of one per actor (:data:`REFUSED_OPTIONS` refused).
            timeout: seconds a call may take (None: no limit).
            autoreset_mode: only ``DISABLED``: a core has no autoreset policy.

        Raises:
            ImportError: Ray is not installed.
            SubEnvError: an ``env_fn`` raised.
            RuntimeError: a sub-env's spaces differ from the first sub-env's.
        """
        name, how = type(self).__name__, "vectorization_mode='ray', "
        check_core_arguments(name, autoreset_mode, observation_mode, how)
        counts = _actor_counts(num_actors, envs_per_actor)
        self._ray = ray = import_ray()
        self._actors: list[Any] = []
        self._reason: str | None = None
        self._unread: list[tuple[int, Any]] | None = None  # the calls Ctrl-C left
        self._setup(env_fns, copy, observation_mode, timeout)
        ensure_ray(ray)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.num_actors = actor_count(self.num_envs, *counts, cpus)
        #: The ``(start, stop)`` of each actor's sub-envs.
        self.slices: list[tuple[int, int]] = slices(self.num_envs, self.num_actors)
        self._remote_slices = self.slices
        #: The node id and process id of each actor, once built.
        self.nodes: list[str] = []
        self.pids: list[int] = []
        self._dead: set[int] = set()  # actors a WorkerError named
        options = check_actor_options(actor_options, self.num_actors)
        self._batch_buffers()
        self._start(options)

    def _start(self, options: list[dict[str, Any]]) -> None:
        actor_class = remote_actor_class(self._ray)
        batch = self._rows
        row = None if batch is None else (batch.shape[1:], batch.dtype)

        def start_actors(limit: float | None) -> list[Any]:
            for (start, stop), one in zip(self.slices, options, strict=True):
                fns = self.env_fns[start:stop]
                actor = actor_class.options(**one).remote(start, fns, self._spec, row)
                self._actors.append(actor)
            token = [(a, actor.built.remote()) for a, actor in enumerate(self._actors)]
            built = self._gather(token, limit, "construction")
            self.nodes = [node for _, node, _ in built]
            self.pids = [pid for _, _, pid in built]
            return [answer for answer, _, _ in built]

        self._construct(start_actors)

    # --------------------------------------------------------- the transport
    @property
    def _broken(self) -> str | None:
        if self._reason is None and not self._ray.is_initialized():
            self._reason = "Ray was shut down (ray.shutdown()), its actors with it"
        return self._reason

    def _break(self, reason: str) -> None:
        if self._reason is None:
            self._reason = reason

    @property
    def _interrupted(self) -> bool:  # type: ignore[override]
        return self._unread is not None

    def _drain(self, timeout: float, during: str) -> list[Any]:
        token, self._unread = self._unread, None
        return self._collect(cast(list[tuple[int, Any]], token), timeout, during)

    def _send_each(
        self, encoded: dict[int, bytes], message_for: MessageFor, during: str
    ) -> list[tuple[int, Any]]:
        """Call each actor with its message; ``(actor, the answer's ref)`` each."""
        calls = []
        for a, (start, _) in enumerate(self.slices):
            data = encoded.get(start)
            if data is not None:
                calls.append((a, self._actors[a].handle.remote(data)))
        return calls

    def _collect(
        self, token: list[tuple[int, Any]], timeout: float | None, during: str
    ) -> list[Any]:
        datas = self._gather(token, timeout, during)
        return [
            self._decode(a, data) for (a, _), data in zip(token, datas, strict=True)
        ]

    def _decode(self, actor: int, data: bytes) -> Any:
        """An actor's answer (the rows after a ROWS one read in place)."""
        answer = pickle.loads(data)
        if answer is None or answer[0] != worker.ROWS:
            return answer
        batch = cast(np.ndarray, self._rows)
        start, stop = self.slices[actor]
        shape = (stop - start, *batch.shape[1:])
        nbytes = math.prod(shape) * batch.itemsize
        rows = np.ndarray(shape, batch.dtype, data, offset=len(data) - nbytes)
        return (worker.OK, *answer[1:4], worker.SliceRows(start, rows), *answer[5:])

    def _stats(
        self, token: list[tuple[int, Any]], answers: list[Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rewards and flags the answers carried; zero where nothing ran."""
        n = self.num_envs
        stats = (np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_))
        for (a, _), answer in zip(token, answers, strict=True):
            start, stop = self.slices[a]
            for stat, part in zip(stats, answer[5], strict=True):
                stat[start:stop] = part
        return stats

    def _gather(
        self, token: list[tuple[int, Any]], timeout: float | None, during: str
    ) -> list[Any]:
        """The results of the calls in ``token``, in order; a WorkerError for a
        dead actor, a WorkerTimeoutError past ``timeout``."""
        if not token:
            return []
        ray = self._ray
        refs = [ref for _, ref in token]
        left = timeout
        try:
            if during != "construction":  # the usual case: one ray.get
                first = LIVENESS if timeout is None else min(timeout, LIVENESS)
                started = time.monotonic()
                try:
                    return list(ray.get(refs, timeout=first))
                except ray.exceptions.RayError:  # late, or one failed: watch them
                    if timeout is not None:
                        left = max(0.0, timeout - (time.monotonic() - started))
            late = self._wait(token, left, during)
            if late:
                self._timed_out(late, timeout, during)
            try:
                return list(ray.get(refs))
            except ray.exceptions.RayError:
                return self._get_each(token, during)
        except BaseException as exc:
            raised = self._stopped(exc, token, during)
            if raised is exc:
                raise
            raise raised from None

    def _stopped(self, exc: BaseException, token: Any, during: str) -> BaseException:
        """What stopped a wait (Ray's wraps what a signal handler raised in a
        SystemError): a Ctrl-C leaves the answers in Ray, to drain; else broken."""
        raised = (exc.__cause__ if type(exc) is SystemError else None) or exc
        ctrl_c = isinstance(raised, KeyboardInterrupt) and during != "construction"
        if ctrl_c and self._reason is None:
            self._unread = token
        else:
            self._break(f"{during} was interrupted by {type(raised).__name__}")
        return raised

    def _wait(
        self, token: list[tuple[int, Any]], timeout: float | None, during: str
    ) -> list[int]:
        """Wait until every call answered (at most ``timeout`` s), raising for a
        dead actor as soon as its call fails; those late."""
        wait = self._ray.wait
        deadline = None if timeout is None else time.monotonic() + timeout
        warn_at = None
        if during == "construction":
            warn_at = time.monotonic() + PLACEMENT_WARNING
        waiting = dict(token)  # actor: its call, until it answered
        while waiting:
            ready = wait(
                [*waiting.values()], num_returns=1, timeout=next_wait(deadline)
            )
            answered = [(a, ref) for a, ref in waiting.items() if ref in ready[0]]
            self._get_each(answered, during, token)
            for a, _ in answered:
                del waiting[a]
            if warn_at is not None and time.monotonic() >= warn_at:
                warn_at = None
                _warn_unplaced(list(waiting), timeout)
            if deadline is not None and time.monotonic() >= deadline:
                return list(waiting)
        return []

    def _timed_out(self, late: list[int], timeout: float | None, during: str) -> None:
        self._break(f"{during} timed out")
        lost = [i for a in late for i in range(*self.slices[a])]
        actors = (
            f"Ray actor(s) {', '.join(map(str, late))}, with sub-env(s) "
            f"{', '.join(map(str, lost))},"
        )
        cause = (  # at construction, most often: actors Ray cannot place
            "Ray may lack the resources they ask for (actor_options; see `ray "
            "status`), or "
        )
        message = errors.timed_out_message(
            during, timeout, actors, "the actors", "kills", cause
        )
        raise errors.WorkerTimeoutError(message, lost)

    def _get_each(
        self, token: list[tuple[int, Any]], during: str, calls: Any = None
    ) -> list[Any]:
        """The results, one call at a time; a WorkerError for a failed call (the
        other ``calls`` of the round probed, see :meth:`_probe`)."""
        ray = self._ray
        answers: list[Any] = []
        dead: list[tuple[int, BaseException]] = []
        for a, ref in token:
            try:
                answers.append(ray.get(ref))
            except ray.exceptions.RayError as exc:
                dead.append((a, exc))
        if dead:
            self._died(dead, during, dict(token if calls is None else calls))
        return answers

    def _died(
        self, dead: list[tuple[int, BaseException]], during: str, calls: dict[int, Any]
    ) -> None:
        """Raise the WorkerError naming every actor Ray finds dead."""
        if len(self._actors) != self.num_actors:
            raise ClosedEnvironmentError(errors.closed_during_message(during))
        known = dict(dead)
        others = [a for a in range(self.num_actors) if a not in known]
        known.update(self._probe(others, calls, known))
        known.update(self._on_dead_nodes(known))
        lost = [i for a in sorted(known) for i in range(*self.slices[a])]
        self._dead.update(known)
        which = "; ".join(
            f"actor {a} ({errors.sub_envs(range(*self.slices[a]))}{self._on_node(a)}; "
            f"Ray says: {_reason(known[a])})"
            for a in sorted(known)
        )
        self._break(f"Ray actor(s) died during {during}")
        lost_text = (
            "The env is not built (no actor is left)."
            if during == "construction"
            else f"Sub-env(s) {', '.join(map(str, lost))} are lost: close() the "
            f"env and build a new one."
        )
        if "ModuleNotFoundError" in which or "ImportError" in which:
            lost_text += (
                " Install the env_fns' code where the actors run, or ship it with "
                "actor_options={'runtime_env': {'py_modules': [...]}}."
            )
        raise errors.WorkerError(f"Ray {which} died during {during}. {lost_text}", lost)

    def _probe(
        self, actors: list[int], calls: dict[int, Any], known: dict[int, BaseException]
    ) -> dict[int, BaseException]:
        """Those of ``actors`` found dead within :data:`PROBE_SECONDS`
        (:data:`NEIGHBOUR_SECONDS` on another node with one in ``known``): by
        their call in ``calls`` (actor: ref), else by a new call."""
        ray = self._ray
        dead: dict[int, BaseException] = {}
        handles = self._actors  # [] once closed, from another thread
        with contextlib.suppress(ray.exceptions.RayError, IndexError):
            refs = {
                a: calls[a] if a in calls else handles[a].built.remote() for a in actors
            }
            ready, late = ray.wait(
                list(refs.values()), num_returns=len(refs), timeout=PROBE_SECONDS
            )
            here = ray.get_runtime_context().get_node_id()  # alive: it runs this
            nodes = {self.nodes[a] for a in known} - {here} if self.nodes else set()
            late = [
                ref
                for a, ref in refs.items()
                if nodes and ref in late and self.nodes[a] in nodes
            ]
            if late:
                ready += ray.wait(
                    late,
                    num_returns=len(late),
                    timeout=NEIGHBOUR_SECONDS - PROBE_SECONDS,
                )[0]
            for a, ref in refs.items():
                if ref in ready:
                    try:
                        ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        dead[a] = exc
        return dead

    def _on_dead_nodes(
        self, known: dict[int, BaseException]
    ) -> dict[int, BaseException]:
        """The other actors on a node Ray reports dead (their own calls may fail
        only later), with the error of a dead actor there."""
        with contextlib.suppress(Exception):  # no node list: the probe's word stands
            gone = {n["NodeID"] for n in self._ray.nodes() if not n["Alive"]}
            by_node = {self.nodes[a]: exc for a, exc in known.items()}
            return {
                a: by_node.get(node, known[next(iter(known))])
                for a, node in enumerate(self.nodes)
                if a not in known and node in gone
            }
        return {}

    def _on_node(self, actor: int) -> str:
        return f", on node {self.nodes[actor][:12]}" if self.nodes else ""

    # ----------------------------------------------------------------- closing
    @property
    def actors(self) -> list[Any]:
        """The Ray actor handles, in sub-env order (see :attr:`slices`)."""
        return list(self._actors)

    def _leftovers(self) -> bool:
        return bool(self._actors)

    def _shutdown(self, terminate: bool, timeout: float | None = None) -> list[Any]:
        failures: list[Any] = []
        try:
            if not terminate and self._ray.is_initialized():
                failures = self._close_sub_envs(timeout)
        finally:
            self._kill_actors()
        return failures

    def _close_sub_envs(self, timeout: float | None) -> list[Any]:
        ray = self._ray
        close = pickle.dumps((worker.CLOSE,), worker.PROTOCOL)
        live = [a for a in range(len(self._actors)) if a not in self._dead]
        refs = [self._actors[a].handle.remote(close) for a in live]
        ready, late = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        self._unclosed = [
            i
            for a, ref in zip(live, refs, strict=True)
            if ref in late
            for i in range(*self.slices[a])
        ]
        failures: list[Any] = []
        for ref in ready:
            with contextlib.suppress(ray.exceptions.RayError):
                answer = pickle.loads(ray.get(ref))
                if answer is not None and answer[0] == worker.CLOSED:
                    failures += answer[1]
        return failures

    def _kill_actors(self) -> None:
        ray = sys.modules.get("ray")
        # forgotten first: a call the kill fails (another thread's) finds it closed
        actors, self._actors = self._actors, []
        if ray is None or not actors or not ray.is_initialized():
            return
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        # wait until Ray has them dead (a call then fails)
        with contextlib.suppress(Exception):
            probes = [actor.built.remote() for actor in actors]
            ray.wait(probes, num_returns=len(probes), timeout=CLOSE_GRACE)

    def _layout(self) -> str:
        return f"num_actors={self.num_actors}"


#: Terminal colours in Ray's messages.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: The last line of a Python traceback: ``SomeError: what``.
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


def _reason(exc: BaseException) -> str:
    """Ray's account of a death in a sentence or two."""
    lines = [
        _ANSI.sub("", line).strip() for line in str(exc).splitlines() if line.strip()
    ]
    if not lines:
        return type(exc).__name__
    because = [line for line in lines[1:] if "because" in line]
    why = [because[0].split(". ")[0].rstrip(".") + "."] if because else []
    said = [lines[0].rstrip(".") + ".", *why]
    raised = [line for line in lines[1:] if _RAISED.match(line)]
    if raised:
        said.append(f"It raised {raised[-1]}")
    return " ".join(said)


def _warn_unplaced(actors: list[int], limit: float | None) -> None:
    waiting = (
        "Still waiting; pass timeout=... to give up instead."
        if limit is None
        else f"Still waiting, for {limit:.0f} s in all (building may take the larger "
        f"of timeout and 60 s)."
    )
    warnings.warn(
        f"Ray actor(s) {', '.join(map(str, actors))} of RayVectorEnv are not built "
        f"after {PLACEMENT_WARNING:.0f} s: the cluster may lack the resources they "
        f"ask for (actor_options; see `ray status`). {waiting}",
        stacklevel=6,
    )
