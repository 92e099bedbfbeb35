"""What each autoreset mode returns around an episode's end, side by side.

Runs one sub-env of an env in each mode with the same seed and actions, and
labels every returned observation by its episode and step (``s3`` is step 3 of
the first episode, ``s0'`` the first observation of the second, ``s0''`` of the
third), the way the reference animation of the modes shows them. Labels follow the mode's
rules (:func:`vecmode.modes.boundary`) and are checked against the values DISABLED
mode returned; a label ending in ``!`` would mean the value differs.

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

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vecmode.make import make_vec
from vecmode.modes import MODES, AutoresetMode, Boundary, boundary

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


def _first(batch: Any) -> Any:
    """Sub-env 0's observation out of a batch of one."""
    if isinstance(batch, dict):
        return {key: _first(value) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_first(value) for value in batch)
    return batch[0]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(a, b))


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
    # per mode: (call, result, the step's boundary or None for a reset)
    runs: dict[str, list[tuple[str, tuple, Boundary | None]]] = {}
    for mode in MODES:
        envs = make_vec(env_id, num_envs=1, autoreset_mode=mode, **env_kwargs)
        space: Any = envs.action_space
        actions = np.full(space.shape, action, dtype=space.dtype)
        calls: list[tuple[str, tuple, Boundary | None]] = [
            ("reset", envs.reset(seed=seed), None)
        ]
        ended = np.zeros(1, dtype=np.bool_)
        for _ in range(steps):
            result = envs.step(actions)
            b = boundary(mode, result[2], result[3], ended)
            calls.append(("step", result, b))
            ended = b.ended
            if b.needs_reset.any():
                mask = {"reset_mask": b.needs_reset}
                calls.append(("reset(mask)", envs.reset(options=mask), None))
                ended = np.zeros(1, dtype=np.bool_)
        envs.close()
        runs[mode.value] = calls

    # DISABLED sees every observation in order: the catalogue of episodes
    catalogue: list[list[Any]] = [[]]
    for call, result, _ in runs[AutoresetMode.DISABLED.value]:
        if call != "step" and catalogue[-1]:
            catalogue.append([])
        catalogue[-1].append(_first(result[0]))

    def label(episode: int, step: int, seen: Any) -> str:
        """``s{step}``, a prime per episode (``'4`` from the 4th), ``!`` if the value differs."""
        name = f"s{step}" + ("'" * episode if episode <= 3 else f"'{episode}")
        known = catalogue[episode][step] if episode < len(catalogue) else None
        steps_known = episode < len(catalogue) and step < len(catalogue[episode])
        return name if steps_known and _same(known, seen) else f"{name}!"

    table: dict[str, list[TimelineRow]] = {}
    for mode_value, calls in runs.items():
        rows: list[TimelineRow] = []
        episode, t = 0, 0
        for call, result, bound in calls:
            if bound is None:  # reset (all, or DISABLED's masked reset)
                if rows:
                    episode, t = episode + 1, 0
                obs = label(episode, t, _first(result[0]))
                if not rows:
                    rows.append(TimelineRow("reset", obs))
                else:
                    rows[-1] = replace(rows[-1], note=f"then {call} -> {obs}")
                continue
            _, rewards, terminations, truncations, infos = result
            note = ""
            if bound.real[0]:
                t += 1
            if bound.final_in_info[0]:
                final = label(episode, t, infos["final_obs"][0])
                note = f"final_obs={final}"
            if bound.starts[0]:
                episode, t = episode + 1, 0
            if not bound.real[0]:
                note = "reset step, action ignored"
            rows.append(
                TimelineRow(
                    f"step {len(rows)}",
                    label(episode, t, _first(result[0])),
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
