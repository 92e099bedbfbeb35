"""What each autoreset mode returns around an episode's end, side by side.

Runs one sub-env of an env in each mode with the same seed and actions, and
labels every returned observation by its episode and step (``s3`` is step 3 of
the first episode, ``s0'`` the first observation of the second, ``s0''`` of the
third), the way the reference animation of the modes shows them.

>>> from vecmode.timeline import timeline
>>> rows = timeline("CartPole-v1", steps=5, max_episode_steps=3)
>>> [row.obs for row in rows["NextStep"]]
['s0', 's1', 's2', 's3', "s0'", "s1'"]
>>> [row.obs for row in rows["SameStep"]]
['s0', 's1', 's2', "s0'", "s1'", "s2'"]
>>> rows["Disabled"][3].note
"then reset(mask) -> s0'"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vecmode.make import make_vec
from vecmode.modes import MODES

__all__ = ["TimelineRow", "format_timeline", "timeline"]


@dataclass(frozen=True)
class TimelineRow:
    """One call of one mode: what sub-env 0 got back."""

    call: str
    obs: str
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False
    note: str = ""


def _label(catalogue: list[list[Any]], obs: Any) -> str:
    for episode, observations in enumerate(catalogue):
        for step, known in enumerate(observations):
            if np.array_equal(known, obs):
                return f"s{step}" + "'" * episode
    return "?"


def timeline(
    env_id: str = "CartPole-v1",
    *,
    steps: int = 7,
    seed: int = 0,
    max_episode_steps: int | None = 3,
    action: int = 1,
    **env_kwargs: Any,
) -> dict[str, list[TimelineRow]]:
    """Per mode value, the rows of calls (reset, then ``steps`` steps).

    ``max_episode_steps`` truncates episodes (default 3: the episode ends after its
    third step, as in the reference's animation); ``None`` keeps the env's own.
    In DISABLED mode the ended sub-env is reset with a ``reset_mask`` call, shown
    as its own row.
    """
    if max_episode_steps is not None:
        env_kwargs["max_episode_steps"] = max_episode_steps
    runs: dict[str, list[tuple[str, tuple]]] = {}
    for mode in MODES:
        envs = make_vec(env_id, num_envs=1, autoreset_mode=mode, **env_kwargs)
        space: Any = envs.action_space
        actions = np.full(space.shape, action, dtype=space.dtype)
        calls: list[tuple[str, tuple]] = [("reset", envs.reset(seed=seed))]
        for _ in range(steps):
            result = envs.step(actions)
            calls.append(("step", result))
            ended = np.logical_or(result[2], result[3])
            if mode.value == "Disabled" and ended.any():
                calls.append(("reset(mask)", envs.reset(options={"reset_mask": ended})))
        envs.close()
        runs[mode.value] = calls

    # DISABLED sees every observation in order: the catalogue of episodes
    catalogue: list[list[Any]] = [[]]
    for call, result in runs["Disabled"]:
        if call != "step" and catalogue[-1]:
            catalogue.append([])
        catalogue[-1].append(np.asarray(result[0])[0])

    table: dict[str, list[TimelineRow]] = {}
    for mode_value, calls in runs.items():
        rows: list[TimelineRow] = []
        reset_next = False
        for call, result in calls:
            obs = _label(catalogue, np.asarray(result[0])[0])
            if call == "reset":
                rows.append(TimelineRow("reset", obs))
                continue
            if call != "step":  # DISABLED's reset of the ended sub-env
                last = rows[-1]
                rows[-1] = TimelineRow(
                    last.call,
                    last.obs,
                    last.reward,
                    last.terminated,
                    last.truncated,
                    f"then {call} -> {obs}",
                )
                continue
            _, rewards, terminations, truncations, infos = result
            note = ""
            if infos.get("_final_obs", [False])[0]:
                note = f"final_obs={_label(catalogue, infos['final_obs'][0])}"
            elif reset_next and mode_value == "NextStep":
                note = "reset step, action ignored"
            reset_next = bool(terminations[0] or truncations[0])
            rows.append(
                TimelineRow(
                    f"step {len(rows)}",
                    obs,
                    float(rewards[0]),
                    bool(terminations[0]),
                    bool(truncations[0]),
                    note,
                )
            )
        table[mode_value] = rows
    return table


def _cell(row: TimelineRow) -> str:
    if row.reward is None:
        return row.obs
    flags = "term" if row.terminated else "trunc" if row.truncated else ""
    return f"{row.obs:<4} r={row.reward:<2g} {flags:<5} {row.note}".rstrip()


def format_timeline(table: dict[str, list[TimelineRow]], header: str = "") -> str:
    """The rows of :func:`timeline` as an aligned text table, one column per mode."""
    modes = list(table)
    calls = [row.call for row in table[modes[0]]]
    columns = [["call", *calls]] + [
        [mode, *(_cell(row) for row in table[mode])] for mode in modes
    ]
    widths = [max(len(cell) for cell in column) for column in columns]
    lines = [header] if header else []
    for i in range(len(columns[0])):
        lines.append(
            "  ".join(
                f"{column[i]:<{width}}"
                for column, width in zip(columns, widths, strict=True)
            ).rstrip()
        )
        if i == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)
