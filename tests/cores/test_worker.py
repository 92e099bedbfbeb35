"""vecmode.worker: the slice server driven in-process, its loop through a pipe,
the protocol's helpers and the spin policy."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

from vecmode.core import Command
from vecmode.errors import SubEnvError
from vecmode.frames import FrameReader, frame_sender
from vecmode.layout import SPIN_AGAIN
from vecmode.worker import (
    CALL,
    CLOSE,
    CLOSED,
    EACH,
    EXECUTE,
    FAILED,
    GET_ATTR,
    MISMATCH,
    OK,
    PROTOCOL,
    SET_ATTR,
    SHARED_ENV,
    UNPICKLING,
    Doorbell,
    SliceServer,
    SliceSpec,
    _doorbell,
    build_slice,
    encode,
    pack_rows,
    raise_failure,
    serve,
    slice_message,
    unpack_rows,
)

KEEP, STEP, RESET, STEP_THEN_RESET = (int(c) for c in Command)
SPACE = gym.spaces.Box(-5, 5, (4,), np.float32)


def cartpoles(n: int, steps: int = 2) -> list[gym.Env]:
    return [gym.make("CartPole-v1", max_episode_steps=steps) for _ in range(n)]


def server(envs: list[gym.Env], first: int = 2) -> SliceServer:
    """A server of sub-envs ``first ..`` of a vector env of ``first + len`` with
    no shared memory: everything comes back in the answer."""
    envs = list(envs)
    space = envs[0].observation_space
    spec = SliceSpec(first + len(envs), space, envs[0].action_space, "same")
    return SliceServer(first, envs, (None, None, None), spec)


def execute(slice_server: SliceServer, commands, actions=None, seeds=None):
    return slice_server.handle((EXECUTE, commands, actions, seeds, None))


def test_a_slice_server_resets_and_steps_its_sub_envs_as_gymnasium_does():
    ours = server(cartpoles(2))
    theirs = cartpoles(2)
    tag, ended, _, finals, sent, _ = execute(ours, [RESET, RESET], None, [7, 8])
    assert tag == OK and ended == [] and finals == []
    for (_, obs), env, seed in zip(sent, theirs, (7, 8), strict=True):
        assert np.array_equal(obs, env.reset(seed=seed)[0])
    assert [index for index, _ in sent] == [2, 3]  # the vector env's indices
    answer = execute(ours, [STEP, KEEP], [1, None])
    assert [index for index, _ in answer[4]] == [2]  # sub-env 3 did not run
    assert np.array_equal(answer[4][0][1], theirs[0].step(1)[0])
    assert answer[5][0] == [1.0, 0.0]  # rewards: none where nothing ran


def test_a_sub_env_reset_within_the_call_reports_its_final_observation():
    ours = server(cartpoles(2, steps=1))
    execute(ours, [RESET, RESET], None, [0, 1])
    _, ended, _, finals, _, stats = execute(ours, [STEP_THEN_RESET, STEP], [0, 0])
    assert ended == [2, 3]  # both truncated; only sub-env 2 was reset
    assert [index for index, _, _ in finals] == [2]
    assert stats[2] == [True, True]  # truncations


class Raises(gym.Env):
    observation_space = SPACE
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {"lock": threading.Lock()}

    def step(self, action):
        raise KeyError("no such key")

    def close(self):
        raise OSError("cannot close")


def test_a_sub_env_that_raises_is_a_failure_naming_it():
    ours = server([*cartpoles(1), Raises()])
    execute(ours, [RESET, KEEP], None, None)
    tag, failures, ran = execute(ours, [STEP, STEP], [0, 0])
    assert tag == FAILED and ran == [2]  # the slice stops at the failure
    error = failures[0].error((), (2, 3))
    assert isinstance(error, SubEnvError) and isinstance(error, KeyError)
    assert (error.index, error.method, error.lost) == (3, "step", (2, 3))


def test_an_answer_that_does_not_pickle_names_the_sub_env_and_the_value():
    ours = server([*cartpoles(1), Raises()])
    answer = pickle.loads(encode(execute(ours, [RESET, RESET])))
    assert answer[0] == FAILED
    assert (answer[1][0].index, answer[1][0].method) == (3, "pickling its info")


def test_a_result_that_does_not_pickle_names_its_sub_env():
    """It named sub-env 0, whichever sub-env's result it was."""
    ours = server([*cartpoles(3)], first=2)

    class Fn:
        fn = staticmethod(lambda env: threading.Lock() if env.tag else env.tag)

    ours.handle((SET_ATTR, "tag", [0, 1, 1]))
    for positions, index in (([2, 1], 3), (None, 3), ([0], None)):
        answer = pickle.loads(encode(ours.handle((EACH, "each", Fn, (), positions))))
        if index is None:
            assert answer == (OK, [0], [2])
            continue
        assert answer[0] == FAILED and len(answer[1]) == 1
        assert (answer[1][0].index, answer[1][0].method) == (
            index,
            "pickling its result",
        )


def test_call_get_attr_set_attr_each_and_close():
    ours = server([*cartpoles(1), Raises()])
    assert ours.handle((GET_ATTR, "spec"))[1][0].id == "CartPole-v1"
    assert ours.handle((SET_ATTR, "tag", ["a", "b"])) is None
    assert ours.handle((GET_ATTR, "tag")) == (OK, ["a", "b"], range(2, 4))
    call = (CALL, "get_wrapper_attr", ("tag",), {})
    assert ours.handle(call) == (OK, ["a", "b"], range(2, 4))

    class Fn:  # stands in for the CloudpickleWrapper the parent sends
        fn = staticmethod(lambda env, suffix: env.get_wrapper_attr("tag") + suffix)

    assert ours.handle((EACH, "each(fn)", Fn, ("!",), [1])) == (OK, ["b!"], [3])
    tag, failures, _ = ours.handle((CALL, "close", (), {}))
    assert tag == FAILED and failures[0].index == 3
    tag, failures = ours.handle((CLOSE,))
    assert tag == CLOSED and [f.index for f in failures] == [3] and ours.closed


def test_build_slice_reports_a_failed_env_fn_a_mismatch_or_a_shared_env():
    def bad():
        raise ValueError("no env")

    cartpole = cartpoles(1)[0]
    spec = SliceSpec(6, cartpole.observation_space, cartpole.action_space, "same")
    envs: list[gym.Env] = []
    answer = build_slice(4, [cartpoles(1).pop, bad], envs, spec)
    assert answer[0] == FAILED and (answer[1][0].index, answer[1][0].method) == (
        5,
        "env_fn",
    )
    assert len(envs) == 1  # built before it, for the caller to close
    pendulum = lambda: gym.make("Pendulum-v1")  # noqa: E731
    answer = build_slice(4, [cartpoles(1).pop, pendulum], [], spec)
    assert answer[:3] == (MISMATCH, "observation space", 5)
    answer = build_slice(4, [lambda: cartpole] * 2, [], spec)
    assert answer == (SHARED_ENV, [[4, 5]])
    assert build_slice(4, [cartpoles(1).pop], [], spec) is None


def test_the_parent_side_packs_rows_and_raises_the_lowest_failure():
    actions = np.arange(8, dtype=np.int16).reshape(4, 2)
    message = slice_message(1, 3, [STEP] * 4, actions, [5, 6, 7, 8], {"a": 1})
    assert message[0] == EXECUTE and message[3] == [6, 7] and message[4] == {"a": 1}
    assert np.array_equal(unpack_rows(message[2]), actions[1:3])
    assert unpack_rows(pack_rows(actions)).dtype == np.int16
    assert slice_message(1, 3, [STEP, KEEP, KEEP, STEP], actions, None, None) is None
    ours = server([Raises(), Raises()], first=0)
    execute(ours, [RESET, RESET])
    answer = execute(ours, [STEP, STEP], [0, 0])
    with pytest.raises(SubEnvError) as caught:
        raise_failure([None, answer], lost=[0, 1])
    assert caught.value.index == 0 and caught.value.lost == (0, 1)
    raise_failure([None, (OK, [])])  # nothing failed: nothing raised


def test_the_loop_serves_messages_through_a_pipe_until_told_to_close():
    parent, child = multiprocessing.Pipe()
    ours = server(cartpoles(2))
    thread = threading.Thread(target=serve, args=(child, ours), daemon=True)
    thread.start()
    reader, send = FrameReader(parent), frame_sender(parent)

    def round_trip(data: bytes):
        send(data)
        return pickle.loads(reader.recv())

    message = (EXECUTE, [RESET, RESET], None, [0, 1], None)
    assert round_trip(pickle.dumps(message, PROTOCOL))[0] == OK
    answer = round_trip(b"not a pickle")  # the worker goes on after it
    assert answer[0] == FAILED and answer[1][0].method == UNPICKLING
    assert round_trip(pickle.dumps((GET_ATTR, "spec"), PROTOCOL))[0] == OK
    assert round_trip(pickle.dumps((CLOSE,), PROTOCOL)) == (CLOSED, [])
    thread.join(5)
    assert not thread.is_alive()  # the loop ended with CLOSE
    parent.close()
    child.close()


def test_a_worker_spins_only_while_messages_come_within_the_spin(monkeypatch):
    """A worker whose last message came later than the spin after its answer
    (a training loop computing between steps) blocks at once for the next one;
    one message that comes within the spin and it spins again."""
    yields = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1), raising=False)
    spin = 0.2  # (the test thread may wait tens of ms for a CPU: loaded CI)
    parent, child = multiprocessing.Pipe()
    bell = Doorbell(multiprocessing.RawArray("q", 2))
    receive, send_answer = _doorbell(child, spin, (bell, 0))
    send = frame_sender(parent)

    def message_after(seconds: float) -> threading.Thread:
        def later() -> None:
            time.sleep(seconds)
            send(b"m")
            bell.rang(0)

        thread = threading.Thread(target=later)
        thread.start()
        return thread

    def yields_while_receiving(seconds: float | None) -> int:
        """Answer, then receive a message sent ``seconds`` later (None: sent
        before the worker looks)."""
        send_answer(b"a")
        assert parent.recv_bytes() == b"a"
        thread = None
        if seconds is None:
            send(b"m")
            bell.rang(0)
        else:
            thread = message_after(seconds)
        before = len(yields)
        assert receive() == b"m"
        if thread is not None:
            thread.join()
        return len(yields) - before

    late = 2 * SPIN_AGAIN * spin
    assert yields_while_receiving(late) > 0  # spins the whole spin in vain
    assert yields_while_receiving(late) == 0  # so it blocks at once
    assert yields_while_receiving(None) == 0  # this one came at once...
    assert yields_while_receiving(spin / 2) > 0  # ...so it spins again
    assert bell.counts.tolist() == [4, 4]  # every message and answer counted
    parent.close()
    child.close()
