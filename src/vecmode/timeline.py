"""What each autoreset mode returns around an episode's end, side by side.

:func:`timeline` runs one sub-env in each mode with the same seed and actions and
labels what it returns (``s3``: step 3 of the first episode, ``s0'``: the first
of the second); :func:`format_timeline` prints the rows, :func:`timeline_svg`
draws them.

>>> rows = timeline("CartPole-v1", steps=5, max_episode_steps=3)
>>> [row.obs for row in rows["NextStep"]]
['s0', 's1', 's2', 's3', "s0'", "s1'"]
>>> [row.obs for row in rows["SameStep"]]
['s0', 's1', 's2', "s0'", "s1'", "s2'"]
>>> rows["Disabled"][3].note
"caller: reset(mask) -> s0'"
"""

from __future__ import annotations

import functools
from copy import deepcopy
from dataclasses import dataclass, replace
from typing import Any, cast
from xml.sax.saxutils import escape, quoteattr

import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Discrete, MultiBinary, MultiDiscrete
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array

from vecmode.core import space_row
from vecmode.make import make_vec
from vecmode.modes import MODES
from vecmode.replay.compare import same
from vecmode.transitions import Reading, TransitionReader

__all__ = [
    "TimelineActionError",
    "TimelineRow",
    "episode_legend",
    "format_timeline",
    "timeline",
    "timeline_svg",
]


class TimelineActionError(ValueError):
    """:func:`timeline`'s ``action`` is not an action of the env."""


@dataclass(frozen=True)
class TimelineRow:
    """One call (``"reset"``, ``"step N"``) of one mode: what sub-env 0 got back.

    ``obs``, ``final_obs`` and ``then_reset`` label the returned observation,
    SAME_STEP's ``info["final_obs"]`` and what DISABLED's ``reset(mask)`` returned
    next (``""``: none); ``reset_step`` marks NEXT_STEP's reset step.
    """

    call: str
    obs: str
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False
    note: str = ""
    reset_step: bool = False
    final_obs: str = ""
    then_reset: str = ""
    action: str = ""


def _action_batch(space: Space, action: Any, seed: int) -> Any:
    """A batch of one ``action`` (see :func:`timeline`) for the single ``space``."""
    value = action
    if isinstance(space, (Box, Discrete, MultiDiscrete, MultiBinary)):
        given = np.asarray(1 if action is None else action)
        if np.dtype(space.dtype).kind in "biu" and given.dtype.kind not in "biu":
            raise TimelineActionError(action_message(action, space))  # 1.5 -> 1
        try:  # a number fills every entry
            value = np.full(space.shape, given) if given.ndim == 0 else given
            value = np.asarray(value, dtype=space.dtype)
        except (TypeError, ValueError) as error:
            raise TimelineActionError(action_message(action, space)) from error
    if action is None and not space.contains(value):
        sampler = deepcopy(space)  # the env's own space keeps its generator
        sampler.seed(seed)
        value = sampler.sample()
    if not space.contains(value):
        raise TimelineActionError(action_message(action, space))
    return concatenate(space, [value], cast(Any, create_empty_array(space, 1)))


def _plain(value: Any) -> Any:
    """``value`` with NumPy arrays and scalars as lists and Python numbers."""
    if isinstance(value, dict):
        return {key: _plain(part) for key, part in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(part) for part in value)
    return value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value


def timeline(
    env_id: str = "CartPole-v1",
    *,
    steps: int = 7,
    seed: int = 0,
    max_episode_steps: int | None = 3,
    action: Any = None,
    **env_kwargs: Any,
) -> dict[str, list[TimelineRow]]:
    """Per mode, the rows of one sub-env's calls: a reset, then ``steps`` steps.

    ``max_episode_steps`` truncates episodes (None: the env's own ends).
    ``action`` is taken at every step: a sample of the action space, or a number
    filling an array space; None: 1 where the space holds it, else a sample.
    Raises :class:`TimelineActionError` if it is not in the env's action space.
    """
    if max_episode_steps is not None:
        env_kwargs["max_episode_steps"] = max_episode_steps
    make = functools.partial(make_vec, env_id, 1, "sync", **env_kwargs)
    runs = {
        mode.value: _run(make(autoreset_mode=mode), mode, steps, seed, action)
        for mode in MODES
    }
    # DISABLED returns every observation in order: the catalogue of episodes
    catalogue: list[list[Any]] = [[]]
    for call, obs, _, _ in runs[AutoresetMode.DISABLED.value]:
        if call != "step" and catalogue[-1]:
            catalogue.append([])
        catalogue[-1].append(obs)
    return {mode: _rows(calls, catalogue) for mode, calls in runs.items()}


def _run(
    envs: VectorEnv, mode: AutoresetMode, steps: int, seed: int, action: Any
) -> list[tuple[str, Any, Reading, str]]:
    """The calls of ``envs`` in ``mode``: (call, observation, reading, action)."""
    try:
        actions = _action_batch(envs.single_action_space, action, seed)
        taken = repr(_plain(space_row(envs.single_action_space, actions, 0)))
        reader = TransitionReader(mode, 1, envs)
        readings = [("reset", reader.reset(*envs.reset(seed=seed)), "")]
        for _ in range(steps):
            reading = reader.step(actions, *envs.step(actions))
            readings.append(("step", reading, taken))
            mask = reading.boundary.needs_reset
            if mask.any():
                again = envs.reset(options={"reset_mask": mask})
                readings.append(("reset(mask)", reader.reset(*again, mask), ""))
        space = envs.single_observation_space
    finally:
        envs.close()
    return [(c, space_row(space, r.returned, 0), r, a) for c, r, a in readings]


def _label(catalogue: list[list[Any]], episode: int, step: int, seen: Any) -> str:
    """``s{step}``, a prime per episode, ``!`` if ``seen`` is not DISABLED's."""
    name = f"s{step}" + ("'" * episode if episode <= 3 else f"'{episode}")
    known = episode < len(catalogue) and step < len(catalogue[episode])
    if known and same(catalogue[episode][step], seen, strict=False):
        return name
    return f"{name}!"


def _rows(
    calls: list[tuple[str, Any, Reading, str]], catalogue: list[list[Any]]
) -> list[TimelineRow]:
    """The rows of one mode's calls, labelled from the ``catalogue``."""
    (_, first, _, _), *later = calls
    rows = [TimelineRow("reset", _label(catalogue, 0, 0, first))]
    episode, t = 0, 0
    for call, returned, reading, taken in later:
        b = reading.boundary
        if call != "step":  # DISABLED's masked reset
            episode, t = episode + 1, 0
            obs = _label(catalogue, episode, t, returned)
            note = f"caller: {call} -> {obs}"
            rows[-1] = replace(rows[-1], note=note, then_reset=obs)
            continue
        note = final = ""
        t += int(b.real[0])
        if b.final_in_info[0]:
            final = _label(catalogue, episode, t, reading.transitions()[0].next_obs)
            note = f"final_obs={final}"
        if b.starts[0]:
            episode, t = episode + 1, 0
        if not b.real[0]:
            note = "reset step, action ignored"
        rows.append(
            TimelineRow(
                f"step {len(rows)}",
                _label(catalogue, episode, t, returned),
                float(reading.rewards[0]),
                bool(reading.terminations[0]),
                bool(reading.truncations[0]),
                note,
                reset_step=not b.real[0],
                final_obs=final,
                action=taken,
            )
        )
    return rows


def _flags(row: TimelineRow) -> str:
    """``term``, ``trunc``, both or neither."""
    on = (("term", row.terminated), ("trunc", row.truncated))
    return " ".join(name for name, flag in on if flag)


def _cell(row: TimelineRow) -> str:
    if row.reward is None:
        return row.obs
    return f"{row.obs:<4} r={row.reward:<2g} {_flags(row):<5} {row.note}".rstrip()


def episode_legend(table: dict[str, list[TimelineRow]]) -> str:
    """What the labels mean, told with the first episode's last step shown, or
    saying that no episode ended in the steps shown."""
    rows = next((rows for rows in table.values() if rows), [])
    ends = [row.final_obs or row.obs for row in rows if _flags(row)]
    label = (ends or [rows[-1].obs if rows else "s0"])[0].rstrip("!")
    shown = f"{label} = step {label[1:]} of the first episode"
    if ends:
        return f"{shown}, s0' = first observation of the second episode."
    return f"{shown}; no episode ended in the steps shown."


def format_timeline(table: dict[str, list[TimelineRow]], header: str = "") -> str:
    """The rows of :func:`timeline` as an aligned text table, one column per mode."""
    calls = [row.call for row in next(iter(table.values()))]
    columns = [["call", *calls]]
    columns += [[mode, *map(_cell, rows)] for mode, rows in table.items()]
    widths = [max(map(len, column)) for column in columns]
    head, *body = zip(*columns, strict=True)
    lines = [header] if header else []
    for cells in [head, ["-" * width for width in widths], *body]:
        line = "  ".join(f"{cell:<{w}}" for cell, w in zip(cells, widths, strict=True))
        lines.append(line.rstrip())
    return "\n".join(lines)


# --- the picture ----------------------------------------------------------------------

#: Fill colours of the episodes (the first, the second...; then they repeat).
_FILLS = ("#dbeafe", "#dcfce7", "#fef3c7", "#fce7f3")
_INK, _MUTED, _EDGE, _RULE = "#1e293b", "#64748b", "#475569", "#e2e8f0"
_ENDED = "#dc2626"
#: The badges' fill and ink: SAME_STEP's final_obs, DISABLED's reset(mask).
_FINAL, _MASKED = ("#ede9fe", "#6d28d9"), ("#ffedd5", "#c2410c")
_FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
_BOLD = ' font-weight="bold"'
_MIDDLE, _END = ' text-anchor="middle"', ' text-anchor="end"'
_DASH = 'stroke-width="1.5" stroke-dasharray="5 3"'
#: Under a lane's name: who resets an ended sub-env, and when.
_CAPTIONS = {
    AutoresetMode.NEXT_STEP.value: "reset: next step",
    AutoresetMode.SAME_STEP.value: "reset: same step",
    AutoresetMode.DISABLED.value: "reset: by caller",
}
#: Layout, in pixels: margin, lane name column, column pitch, cell, lane pitch.
_PAD, _LABEL_W, _COL_W, _CELL_W, _CELL_H, _LANE_H = 16, 136, 104, 88, 62, 100
#: A monospace glyph's width, in font sizes (to size badges and the legend).
_CHAR_W = 0.62
#: The legend's marks, each a swatch (its rectangles: x, width, style) ...
_SWATCHES = (
    [(9 * i, 9, f'fill="{c}" stroke="{_EDGE}"') for i, c in enumerate(_FILLS[:3])],
    [(12, 4, f'fill="{_ENDED}"')],
    [(0, 27, f'rx="3" fill="none" stroke="{_EDGE}" {_DASH}')],
    [(0, 27, f'rx="7" fill="{_FINAL[0]}" stroke="{_FINAL[1]}"')],
    [(0, 27, f'rx="7" fill="{_MASKED[0]}" stroke="{_MASKED[1]}"')],
)
#: ... and what it means (the first: :func:`episode_legend`).
_MEANINGS = (
    "term / trunc: the episode ends at this call",
    "reset step: the action is ignored, reward 0 (NextStep)",
    'final_obs: the ended episode\'s last obs, in info["final_obs"]',
    "reset(mask): the caller resets the ended sub-env (Disabled)",
)


def _text(x: float, y: float, text: str, size: int, fill: str, more: str = "") -> str:
    """A ``<text>``; ``more``: further attributes, as SVG text."""
    where = f'x="{x:g}" y="{y:g}" font-size="{size}" fill="{fill}"{more}'
    return f"<text {where}>{escape(text)}</text>"


def _rect(x: float, y: float, width: float, height: float, style: str) -> str:
    """A ``<rect>``; ``style``: its other attributes, as SVG text."""
    return f'<rect x="{x:g}" y="{y:g}" width="{width:g}" height="{height:g}" {style}/>'


def _group(label: str, parts: list[str]) -> list[str]:
    return [f"<g aria-label={quoteattr(label)}>", *(f"  {p}" for p in parts), "</g>"]


def _badge_width(text: str) -> int:
    return round(len(text) * 11 * _CHAR_W + 14)


def _badges(x: float, row: TimelineRow) -> list[tuple[float, str, tuple[str, str]]]:
    """The badges under ``row``'s cell at ``x``: (centre, text, colours)."""
    found = []
    if row.final_obs:
        found.append((x + _CELL_W / 2, f"final_obs={row.final_obs}", _FINAL))
    if row.then_reset:  # between this call and the next: the caller's reset
        text = f"reset(mask) \u2192 {row.then_reset}"
        found.append((x + (_CELL_W + _COL_W) / 2, text, _MASKED))
    return found


def _svg_cell(x: float, y: float, row: TimelineRow) -> list[str]:
    """One call's result: obs label, reward, flags, and the marks of its kind."""
    ink, edge = (_ENDED, _ENDED) if row.obs.endswith("!") else (_INK, _EDGE)
    _, prime, rest = row.obs.rstrip("!").partition("'")  # the episode: s0' is 1
    episode = (int(rest) if rest.isdigit() else 1 + rest.count("'")) if prime else 0
    fill = _FILLS[episode % len(_FILLS)]
    stroke = f'stroke="{edge}" ' + (_DASH if row.reset_step else 'stroke-width="1.5"')
    middle = x + _CELL_W / 2
    parts = [
        _rect(x, y, _CELL_W, _CELL_H, f'rx="6" fill="{fill}" {stroke}'),
        _text(middle, y + 24, row.obs, 18, ink, _BOLD + _MIDDLE),
    ]
    if row.reward is not None:
        parts.append(_text(x + 8, y + 43, f"r={row.reward:g}", 12, _INK))
    if flags := _flags(row):
        parts += [
            _rect(x + _CELL_W - 5, y + 3, 4, _CELL_H - 6, f'fill="{_ENDED}"'),
            _text(x + _CELL_W - 9, y + 43, flags, 12, _ENDED, _BOLD + _END),
        ]
    if row.reset_step:
        parts.append(_text(middle, y + 56, "action ignored", 9, _MUTED, _MIDDLE))
    for centre, text, (badge, badge_ink) in _badges(x, row):
        width = _badge_width(text)
        style = f'rx="10" fill="{badge}" stroke="{badge_ink}"'
        parts += [
            _rect(centre - width / 2, y + _CELL_H + 6, width, 20, style),
            _text(centre, y + _CELL_H + 20, text, 11, badge_ink, _MIDDLE),
        ]
    return _group(f"{row.call}: {row.obs}", parts)


def _width(
    lanes: list[tuple[str, list[TimelineRow]]], columns: int, title: str, legend: int
) -> int:
    """The picture's width: columns, ``legend`` (its longest line's characters),
    title and the badges that stick out."""
    badges = [
        centre + _badge_width(text) / 2
        for _, rows in lanes
        for column, row in enumerate(rows)
        for centre, text, _ in _badges(_PAD + _LABEL_W + column * _COL_W, row)
    ]
    legend_width = 40 + legend * 12 * _CHAR_W
    title_width = len(title) * 15 * _CHAR_W  # bold, 15 px
    content = _PAD + max(_LABEL_W + columns * _COL_W, legend_width, title_width)
    return round(max([content, *badges]) + _PAD)


def _lane(
    lane: int, mode: str, rows: list[TimelineRow], y: float, width: int
) -> list[str]:
    """One mode's lane: its name, its caption, a rule above, its cells."""
    parts = [_text(_PAD, y + 26, mode, 15, _INK, _BOLD)]
    if mode in _CAPTIONS:
        parts.append(_text(_PAD, y + 44, _CAPTIONS[mode], 11, _MUTED))
    if lane:
        ends = f'x1="{_PAD}" y1="{y - 5}" x2="{width - _PAD}" y2="{y - 5}"'
        parts.append(f'<line {ends} stroke="{_RULE}"/>')
    for column, row in enumerate(rows):
        parts += _svg_cell(_PAD + _LABEL_W + column * _COL_W, y, row)
    return _group(mode, parts)


def timeline_svg(table: dict[str, list[TimelineRow]], title: str = "") -> str:
    """The rows of :func:`timeline` as a self-contained, deterministic SVG document:
    one lane per mode, one column per call, and a legend of the marks.

    >>> svg = timeline_svg(timeline("CartPole-v1", steps=4), title="CartPole-v1")
    >>> svg.startswith("<svg ") and "final_obs=s3" in svg
    True
    """
    lanes = [(mode, rows) for mode, rows in table.items() if rows]
    if not lanes:
        raise ValueError(EMPTY)
    calls = [row.call for row in max((rows for _, rows in lanes), key=len)]
    top = _PAD + (28 if title else 0)
    lanes_top = top + 24
    legend_top = lanes_top + len(lanes) * _LANE_H + 8
    meanings = (episode_legend(table), *_MEANINGS)
    width = _width(lanes, len(calls), title, max(map(len, meanings)))
    height = legend_top + len(meanings) * 22 + _PAD
    name = escape(title or "What each autoreset mode returns, call by call")
    body = [f"<title>{name}</title>", _rect(0, 0, width, height, 'fill="#ffffff"')]
    if title:
        body.append(_text(_PAD, _PAD + 16, title, 15, _INK, _BOLD))
    x0 = _PAD + _LABEL_W + _CELL_W / 2
    columns = enumerate(calls)
    body += _group(
        "calls",
        [_text(x0 + i * _COL_W, top + 14, c, 12, _MUTED, _MIDDLE) for i, c in columns],
    )
    for lane, (mode, rows) in enumerate(lanes):
        body += _lane(lane, mode, rows, lanes_top + lane * _LANE_H, width)
    legend: list[str] = []
    for item, (swatch, text) in enumerate(zip(_SWATCHES, meanings, strict=True)):
        y = legend_top + item * 22
        legend += [_rect(_PAD + dx, y, w, 14, style) for dx, w, style in swatch]
        legend.append(_text(_PAD + 40, y + 11, text, 12, _INK))
    body += _group("legend", legend)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family={quoteattr(_FONT)}>'
    )
    return "\n".join([head, *(f"  {part}" for part in body), "</svg>"]) + "\n"


EMPTY = "timeline_svg needs at least one mode with rows, as timeline() returns."


def action_message(action: Any, space: Any) -> str:
    """Why :func:`timeline` refuses ``action``, and what to give instead."""
    return (
        f"action {action!r} is not in the env's action space {space}. Give one it "
        f"holds (a number fills a Discrete or Box; 'abc' for Text, {{'key': ...}} "
        f"for Dict), or leave it out for the default."
    )
