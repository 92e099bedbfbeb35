"""Fault injection: every fault, interrupt and bad input accounted for, in every layout.

Each case runs in a child process (``tests/cores/fault_driver.py``) in a session of its
own, under a hard time limit: a sub-env that raises, hangs (with and without a
timeout, interrupted by Ctrl-C), exits, crashes, is killed from outside, fails to
close, or returns what cannot be pickled; over the sync core, the async core's
default layout (every sub-env in a worker), its opt-in layout with sub-envs in the
parent, and ``make_vec``; with ``fork``, and ``spawn`` / ``forkserver`` on a
subset. Each case asserts the exception (type and sub-env), the time to it, whether
the env is usable afterwards or closed as specified, and that no process of the
session and no file descriptor is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cores.fault_envs import FAULTS
from tests.helpers import alive_in_session, requires_sigint

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a case may take before it counts as a hang.
HARD_LIMIT = 40.0
#: Seconds a worker may outlive its parent killed with SIGKILL.
ORPHAN_LIMIT = 2.0

pytestmark = pytest.mark.slow


@dataclass
class Case:
    name: str
    fault: str
    backend: str  # sync, async, async-parent, make_vec
    #: sub-env index -> fault
    faulty: dict[int, str]
    #: the expected exception's class name (in its MRO), None: no error
    error: str | None
    index: int | None = None
    method: str | None = None
    context: str = "fork"
    mode: str = "SameStep"
    options: dict[str, Any] = field(default_factory=dict)
    #: "usable", "unusable: ...", or None (not checked)
    after: str | None = None
    #: the error must come within this many seconds of the call
    within: float = 5.0
    #: send Ctrl-C to the session this long after the child is ready
    sigint_after: float | None = None
    kill_worker: int | None = None
    call: str = "step"
    #: the child itself dies (a crash in a sub-env stepped in the training process)
    child_dies: bool = False
    #: what close() raises (class name), None: nothing
    close_error: str | None = None
    #: close() must return within this many seconds
    close_within: float = 10.0
    #: send Ctrl-C to the session this long after close() starts
    sigint_in_close: float | None = None
    num_envs: int = 4
    #: SIGKILL the child (the trainer) this long after it is ready; then no process
    #: of its session may outlive it by more than ORPHAN_LIMIT
    kill_parent: float | None = None
    #: the child builds the env in a thread that has ended before it steps
    build_in_thread: bool = False

    def as_json(self) -> str:
        return json.dumps(
            {
                "backend": self.backend,
                "faulty": self.faulty,
                "context": self.context,
                "mode": self.mode,
                "options": self.options,
                "num_envs": self.num_envs,
                "check_usable": self.after is not None,
                "kill_worker": self.kill_worker,
                "call": self.call,
                "build_in_thread": self.build_in_thread,
            }
        )


def _cases() -> list[Case]:
    cases: list[Case] = []
    # a sub-env raises: SubEnvError naming it, the env usable once reset, anywhere
    for backend in ("sync", "async", "async-parent"):
        for faulty in (1, 3):  # in async-parent, sub-env 3 is stepped in the parent
            cases.append(
                Case(
                    f"raise_step-{backend}-{faulty}",
                    "raise_step",
                    backend,
                    {faulty: "raise_step"},
                    "SubEnvError",
                    faulty,
                    "step",
                    after="usable",
                )
            )
        cases.append(
            Case(
                f"raise_reset-{backend}",
                "raise_reset",
                backend,
                {2: "raise_reset"},
                "SubEnvError",
                2,
                "reset",
                after="usable",
                call="reset",
            )
        )
    cases.append(
        # (make_vec builds every sub-env alike, so all are faulty: not reused after)
        Case(
            "raise_step-make_vec",
            "raise_step",
            "make_vec",
            {0: "raise_step"},
            "SubEnvError",
            0,
            "step",
        )
    )
    for mode in ("NextStep", "Disabled"):
        cases.append(
            Case(
                f"raise_step-async-{mode}",
                "raise_step",
                "async",
                {2: "raise_step"},
                "SubEnvError",
                2,
                "step",
                mode=mode,
                after="usable",
            )
        )
    # its own code raises KeyboardInterrupt or SystemExit: in a worker, where no
    # Ctrl-C reaches, a SubEnvError as any exception; in the parent, as raised
    # (there it is Ctrl-C: the async env, interrupted mid-call, is unusable)
    for fault, backend, faulty, error, after in (
        ("raise_interrupt", "async", 1, "SubEnvError", "usable"),
        ("raise_exit", "async", 1, "SubEnvError", "usable"),
        ("raise_exit", "async-parent", 1, "SubEnvError", "usable"),
        (
            "raise_interrupt",
            "async-parent",
            3,
            "KeyboardInterrupt",
            "unusable: WorkerError",
        ),
        ("raise_interrupt", "sync", 1, "KeyboardInterrupt", "usable"),
        # a flag that is not one bool, a BaseException that is no Exception (it
        # went up as it was from the sync core, a worker died of it): SubEnvError
        *(
            (fault, backend, faulty, "SubEnvError", "usable")
            for fault in ("flag_array", "raise_base")
            for backend, faulty in (("sync", 1), ("async", 1), ("async-parent", 3))
        ),
    ):
        cases.append(
            Case(
                f"{fault}-{backend}-{faulty}",
                fault,
                backend,
                {faulty: fault},
                error,
                faulty if error == "SubEnvError" else None,
                "step" if error == "SubEnvError" else None,
                after=after,
            )
        )
    # a hang with a timeout: WorkerTimeoutError (a multiprocessing.TimeoutError)
    for backend in ("async", "async-parent", "make_vec"):
        cases.append(
            Case(
                f"hang-timeout-{backend}",
                "hang",
                backend,
                {1: "hang"},
                "TimeoutError",
                options={"timeout": 0.5},
                within=2.0,
                after="unusable: WorkerError",
            )
        )
    cases.append(
        Case(
            "slow-timeout-async",
            "slow",
            "async",
            {0: "slow"},
            "TimeoutError",
            options={"timeout": 0.3},
            within=1.5,
            after="unusable: WorkerError",
        )
    )
    # a hang and Ctrl-C: KeyboardInterrupt reaches the caller at once, in every layout
    for backend, faulty in (
        ("sync", 1),
        ("async", 1),
        ("async-parent", 1),
        ("async-parent", 3),
        ("make_vec", 0),
    ):
        cases.append(
            Case(
                f"hang-ctrl-c-{backend}-{faulty}",
                "hang",
                backend,
                {faulty: "hang"},
                "KeyboardInterrupt",
                sigint_after=0.5,
                within=2.0,
            )
        )
    # Ctrl-C in a call that would time out much later: close() does not wait that long
    cases.append(
        Case(
            "hang-ctrl-c-long-timeout-async",
            "hang",
            "async",
            {1: "hang"},
            "KeyboardInterrupt",
            options={"timeout": 30.0},
            sigint_after=0.5,
            within=2.0,
            close_within=3.0,
        )
    )
    # a sub-env's process dies (exit, segfault, SIGKILL): WorkerError, the trainer lives
    for backend in ("async", "async-parent", "make_vec"):
        cases.append(
            Case(
                f"exit-{backend}",
                "exit",
                backend,
                {0: "exit"},
                "WorkerError",
                within=2.0,
                after="unusable: WorkerError",
            )
        )
    cases.append(
        Case(
            "segfault-async",
            "segfault",
            "async",
            {2: "segfault"},
            "WorkerError",
            within=2.0,
            after="unusable: WorkerError",
        )
    )
    cases.append(
        Case(
            "sigkill-async",
            "none",
            "async",
            {},
            "WorkerError",
            kill_worker=1,
            within=2.0,
            after="unusable: WorkerError",
        )
    )
    # ... and where the sub-env runs in the training process, it dies with it
    # (the sync core; the opt-in parent share): documented, not the default
    cases.append(Case("exit-sync", "exit", "sync", {1: "exit"}, None, child_dies=True))
    cases.append(
        Case(
            "exit-async-parent-share",
            "exit",
            "async-parent",
            {3: "exit"},
            None,
            child_dies=True,
        )
    )
    # close() raises: the env is closed all the same, the error names each sub-env
    for backend in ("sync", "async", "async-parent"):
        cases.append(
            Case(
                f"close_raises-{backend}",
                "close_raises",
                backend,
                {1: "close_raises", 3: "close_raises"},
                None,
                close_error="SubEnvError",
            )
        )
    # close() that hangs: bounded by the grace period; interrupted: a second close
    # ends what the first left
    cases.append(
        Case(
            "close_hangs-async",
            "close_hangs",
            "async",
            {1: "close_hangs"},
            None,
            options={"timeout": 1.0},
            close_within=4.0,
        )
    )
    cases.append(
        Case(
            "close_hangs-ctrl-c-async",
            "close_hangs",
            "async",
            {1: "close_hangs"},
            None,
            sigint_in_close=0.5,
            close_within=4.0,
        )
    )
    # what cannot be pickled: the same SubEnvError in a worker and in the parent
    for backend, faulty in (("async", 1), ("async-parent", 3)):
        cases.append(
            Case(
                f"unpicklable_info-{backend}",
                "unpicklable_info",
                backend,
                {faulty: "unpicklable_info"},
                "SubEnvError",
                faulty,
                "pickling its info",
                after="usable",
            )
        )
        cases.append(
            Case(
                f"unpicklable_obs-{backend}",
                "unpicklable_obs",
                backend,
                {faulty: "unpicklable_obs"},
                "SubEnvError",
                faulty,
                "pickling its observation",
                options={"shared_memory": False},
                after="usable",
            )
        )
    # an info that is not a dict: the runner's check, a worker's sub-env named
    cases.append(
        Case(
            "info_not_dict-async",
            "info_not_dict",
            "async",
            {1: "info_not_dict"},
            "SubEnvError",
            1,
            "step",
            after="usable",
        )
    )
    cases.append(
        Case(
            "unpicklable_info-sync",
            "unpicklable_info",
            "sync",
            {1: "unpicklable_info"},
            None,
            after="usable",
        )
    )
    # the trainer killed (SIGKILL) while a worker hangs in a step: the workers die
    # with it, whatever started them
    for backend, context, thread in (
        ("async", "fork", False),
        ("async-parent", "fork", False),
        ("async", "fork", True),  # no PR_SET_PDEATHSIG: the worker's own watch
        ("async", "spawn", False),
        ("async", "forkserver", False),
    ):
        cases.append(
            Case(
                f"parent-killed-{backend}-{context}{'-thread' * thread}",
                "hang",
                backend,
                {1: "hang"},
                None,
                context=context,
                kill_parent=0.5,
                build_in_thread=thread,
            )
        )
    # the other start methods, on a subset
    for context in ("spawn", "forkserver"):
        cases += [
            Case(
                f"raise_step-async-{context}",
                "raise_step",
                "async",
                {1: "raise_step"},
                "SubEnvError",
                1,
                "step",
                context=context,
                after="usable",
            ),
            Case(
                f"exit-async-{context}",
                "exit",
                "async",
                {2: "exit"},
                "WorkerError",
                context=context,
                within=2.0,
                after="unusable: WorkerError",
            ),
            Case(
                f"hang-timeout-async-{context}",
                "hang",
                "async",
                {0: "hang"},
                "TimeoutError",
                context=context,
                options={"timeout": 0.5},
                within=2.0,
                after="unusable: WorkerError",
            ),
            Case(
                f"hang-ctrl-c-async-{context}",
                "hang",
                "async",
                {0: "hang"},
                "KeyboardInterrupt",
                context=context,
                sigint_after=0.5,
                within=2.0,
            ),
        ]
    return cases


CASES = _cases()


def run_case(case: Case) -> tuple[dict[str, Any] | None, int, str]:
    """Run ``case`` in a child process of its own session; return its report
    (None if it died), its exit code and its stderr. A Ctrl-C case's report gets
    ``sigint_at``: when the test sent it (``time.monotonic()``, a clock the child
    shares), so the time to the error is measured from the signal, not from a
    start that a loaded machine may have delayed."""
    sigint_at = None
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.cores.fault_driver", case.as_json()],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
        )
        sid = child.pid
        deadline = time.monotonic() + HARD_LIMIT
        stdout = child.stdout
        assert stdout is not None
        try:
            line = stdout.readline()
            if line.strip() == "READY" and case.sigint_after is not None:
                time.sleep(case.sigint_after)
                sigint_at = time.monotonic()
                os.killpg(sid, signal.SIGINT)  # Ctrl-C: the whole foreground group
            if line.strip() == "READY" and case.kill_parent is not None:
                time.sleep(case.kill_parent)
                os.kill(child.pid, signal.SIGKILL)  # the trainer alone
                child.wait()
                killed_at = time.monotonic()
                stdout.close()
                return None, _orphans_gone(case, sid, killed_at), ""
            if case.sigint_in_close is not None:
                while line and line.strip() != "CLOSING":
                    line = stdout.readline()
                time.sleep(case.sigint_in_close)
                os.killpg(sid, signal.SIGINT)
            child.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(sid, signal.SIGKILL)
            child.wait()
            pytest.fail(f"{case.name}: HANG, no result within {HARD_LIMIT} s")
        out = stdout.read()
        stdout.close()
        errors.seek(0)
        err = errors.read()
    time.sleep(0.2)
    left = alive_in_session(sid)
    if left:
        os.killpg(sid, signal.SIGKILL)
        pytest.fail(f"{case.name}: LEAK, processes {left} of the case still run")
    if child.returncode != 0:
        return None, child.returncode, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["fds_left"] == [], f"{case.name}: file descriptors left"
    report["sigint_at"] = sigint_at
    return report, child.returncode, err


def _orphans_gone(case: Case, sid: int, killed_at: float) -> int:
    """Wait up to ORPHAN_LIMIT s after the kill for the session to empty; -9."""
    while left := alive_in_session(sid):
        if time.monotonic() - killed_at > ORPHAN_LIMIT:
            os.killpg(sid, signal.SIGKILL)
            pytest.fail(f"{case.name}: processes {left} outlived the trainer by 2 s")
        time.sleep(0.05)
    return -signal.SIGKILL


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fault(case: Case):
    report, code, err = run_case(case)
    if case.kill_parent is not None:
        assert code == -signal.SIGKILL, f"{case.name}: the trainer ended ({code})"
        return
    if case.child_dies:
        assert report is None and code != 0, f"{case.name}: the child survived"
        return
    assert report is not None, f"{case.name}: the child died ({code}): {err[-2000:]}"
    error = report["error"]
    if case.error is None:
        assert error is None, f"{case.name}: unexpected {error}"
    else:
        assert error is not None, f"{case.name}: no error (a silent wrong result)"
        assert case.error in error["classes"], f"{case.name}: got {error}"
        if case.index is not None:
            assert error["index"] == case.index, error
        if case.method is not None:
            assert error["method"] == case.method, error
        if case.sigint_after is None:
            took = report["seconds"]
        else:  # from the Ctrl-C: what the user waits for
            took = report["error_at"] - report["sigint_at"]
        assert took <= case.within, f"{case.name}: the error took {took:.3f} s"
        if case.error == "KeyboardInterrupt":
            assert error["type"] == "KeyboardInterrupt", error  # never wrapped
    if case.after is not None:
        assert report["after"] == case.after, report
    assert report["close_seconds"] <= case.close_within, report
    if case.sigint_in_close is not None:
        assert report["close"]["type"] == "KeyboardInterrupt", report["close"]
    elif case.close_error is None:
        assert report["close"] == "ok", report["close"]
    else:
        assert case.close_error in report["close"]["classes"], report["close"]
        assert report["close"]["method"] == "close"
        assert "Sub-env(s) 3 raised in the same call too" in report["close"]["message"]
    assert report["closed"] is True
    assert report["after_close"] == "ClosedEnvironmentError", report


@pytest.fixture
def sigint_ignored():
    """This process ignores SIGINT for the test, as under `nohup pytest ... &`."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_case_holds_when_the_test_run_ignores_sigint(sigint_ignored):
    """The driver inherits SIG_IGN and restores Ctrl-C: the case is what it means."""
    test_fault(next(c for c in CASES if c.name == "hang-ctrl-c-async-1"))


def test_an_in_process_ctrl_c_test_skips_naming_the_cause(sigint_ignored):
    with pytest.raises(
        pytest.skip.Exception, match=r"SIGINT is ignored.*nohup.*foreground"
    ):
        requires_sigint()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    requires_sigint()  # Ctrl-C raises here: no skip


def test_the_cases_cover_every_fault_backend_and_start_method():
    faults = {c.fault for c in CASES}
    assert faults == {*FAULTS, "none"}  # every fault the fault envs inject
    assert {c.backend for c in CASES} == {"sync", "async", "async-parent", "make_vec"}
    assert {c.context for c in CASES} == {"fork", "spawn", "forkserver"}
    assert any(c.sigint_after for c in CASES) and any(c.kill_worker for c in CASES)
    killed = {c.context for c in CASES if c.kill_parent}
    assert killed == {"fork", "spawn", "forkserver"}
    # in the default layout, no fault kills the training process
    assert not any(c.child_dies for c in CASES if c.backend in ("async", "make_vec"))
