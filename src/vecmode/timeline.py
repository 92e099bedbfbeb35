"""What each autoreset mode returns around an episode's end, side by side.

Runs one sub-env in each mode with the same seed and actions, and labels each
returned observation by its episode and step (``s3``: step 3 of the first
episode; ``s0'``: the first observation of the second). A label ending in ``!``
would mean the value differs from DISABLED's. :func:`format_timeline` prints
the rows (``vecmode timeline``), :func:`timeline_svg` draws them.

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

from copy import deepcopy
from dataclasses import dataclass, replace
from typing import Any, cast
from xml.sax.saxutils import escape, quoteattr

import numpy as np
from gymnasium import Space
from gymnasium.spaces import Box, Discrete, MultiBinary, MultiDiscrete
from gymnasium.vector.utils import concatenate, create_empty_array

from vecmode.core import space_row
from vecmode.make import make_vec
from vecmode.modes import MODES, AutoresetMode
from vecmode.transitions import Reading, TransitionReader

__all__ = [
    "TimelineActionError",
    "TimelineRow",
    "format_timeline",
    "timeline",
    "timeline_svg",
]


class TimelineActionError(ValueError):
    """:func:`timeline`'s ``action`` is not an action of the env (a
    ``ValueError``); the message says what the action space holds."""


@dataclass(frozen=True)
class TimelineRow:
    """One call of one mode: what sub-env 0 got back.

    Attributes:
        call: ``"reset"`` or ``"step N"``.
        obs: the returned observation's label (``s3``, ``s0'``...).
        reward: the returned reward (None for the first ``reset``).
        terminated, truncated: the returned flags.
        note: the facts below, as text (what :func:`format_timeline` prints).
        reset_step: NEXT_STEP's reset step: the action was ignored, the sub-env
            reset instead (reward 0, no flags).
        final_obs: the label of ``info["final_obs"]`` (SAME_STEP), else ``""``.
        then_reset: the label a ``reset(options={"reset_mask": ...})`` returned
            right after this step (DISABLED), else ``""``.
        action: the action the step took, as text (``""`` for a reset).
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


#: The spaces whose samples are arrays (an action may be one number for them).
_ARRAY_SPACES = (Box, Discrete, MultiDiscrete, MultiBinary)


def _action_batch(space: Space, action: Any, seed: int) -> Any:
    """The batch of one of the action :func:`timeline` takes (see there);
    ``space``: the single action space.

    >>> from gymnasium.spaces import Box, Text
    >>> _action_batch(Box(-1, 1, (2,)), 0.5, 0), _action_batch(Text(4), "ab", 0)
    (array([[0.5, 0.5]], dtype=float32), ('ab',))
    """
    value = _action_value(space, action)
    if action is None and not space.contains(value):
        sampler = deepcopy(space)  # the env's own space keeps its generator
        sampler.seed(seed)
        value = sampler.sample()
    if not space.contains(value):
        raise TimelineActionError(action_message(action, space))
    return concatenate(space, [value], cast(Any, create_empty_array(space, 1)))


def _plain(value: Any) -> Any:
    """``value`` with NumPy arrays and scalars as lists and Python numbers."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {key: _plain(part) for key, part in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(part) for part in value)
    return value


def _action_value(space: Space, action: Any) -> Any:
    """``action`` as a sample of ``space``: a number filling an array space's
    every entry, anything else as given; None for 1 filling an array space."""
    if not isinstance(space, _ARRAY_SPACES):
        return action
    given = np.asarray(1 if action is None else action)
    integral = np.dtype(space.dtype).kind in "biu"
    if integral and given.dtype.kind not in "biu":  # 1.5 would become 1
        raise TimelineActionError(action_message(action, space))
    try:
        if given.ndim == 0:
            return np.full(space.shape, given, dtype=space.dtype)
        return np.asarray(given, dtype=space.dtype)
    except (TypeError, ValueError) as error:
        raise TimelineActionError(action_message(action, space)) from error


def timeline(
    env_id: str = "CartPole-v1",
    *,
    steps: int = 7,
    seed: int = 0,
    max_episode_steps: int | None = 3,
    action: Any = None,
    **env_kwargs: Any,
) -> dict[str, list[TimelineRow]]:
    """Per mode value, the rows of calls (reset, then ``steps`` steps).

    ``max_episode_steps`` truncates episodes (default 3, as in the reference's
    animation); None keeps the env's own. DISABLED's masked reset of an ended
    sub-env is noted on the step's row.

    ``action`` is taken at every step, in every mode: a sample of the env's
    single action space, or for an array space (Box, Discrete, MultiDiscrete,
    MultiBinary) a number filling every entry. None (default): 1 in every entry
    where the space holds that (CartPole's "push right"), else a sample of the
    space seeded with ``seed``.

    >>> from vecmode.timeline import timeline
    >>> rows = timeline("CartPole-v1", steps=4, action=0)
    >>> [row.obs for row in rows["SameStep"]]
    ['s0', 's1', 's2', "s0'", "s1'"]

    Raises:
        TimelineActionError: ``action`` is not in the env's action space (a
            ``ValueError``).
    """
    if max_episode_steps is not None:
        env_kwargs["max_episode_steps"] = max_episode_steps
    runs = {
        mode.value: _run(env_id, mode, steps, seed, action, env_kwargs)
        for mode in MODES
    }
    # DISABLED sees every observation in order: the catalogue of episodes
    catalogue: list[list[Any]] = [[]]
    for call, obs, _, _ in runs[AutoresetMode.DISABLED.value]:
        if call != "step" and catalogue[-1]:
            catalogue.append([])
        catalogue[-1].append(obs)
    return {mode: _rows(calls, catalogue) for mode, calls in runs.items()}


def _run(
    env_id: str,
    mode: AutoresetMode,
    steps: int,
    seed: int,
    action: Any,
    env_kwargs: dict[str, Any],
) -> list[tuple[str, Any, Reading, str]]:
    """One sub-env's calls in ``mode``: (call, the returned observation, the
    call's reading, the action taken)."""
    envs = make_vec(
        env_id, num_envs=1, vectorization_mode="sync", autoreset_mode=mode,
        **env_kwargs,
    )  # fmt: skip
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
    """``s{step}``, a prime per episode (``'4`` from the 4th), ``!`` if ``seen``
    is not the value DISABLED returned there."""
    name = f"s{step}" + ("'" * episode if episode <= 3 else f"'{episode}")
    known = episode < len(catalogue) and step < len(catalogue[episode])
    return name if known and _same(catalogue[episode][step], seen) else f"{name}!"


def _rows(
    calls: list[tuple[str, Any, Reading, str]], catalogue: list[list[Any]]
) -> list[TimelineRow]:
    """The rows of one mode's calls, labelled from the ``catalogue``."""
    rows: list[TimelineRow] = []
    episode, t = 0, 0
    for call, returned, reading, taken in calls:
        b = reading.boundary
        if call != "step":  # reset (all, or DISABLED's masked reset)
            if rows:
                episode, t = episode + 1, 0
            obs = _label(catalogue, episode, t, returned)
            if not rows:
                rows.append(TimelineRow("reset", obs))
            else:
                note = f"then {call} -> {obs}"
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


def _same(a: Any, b: Any) -> bool:
    """Whether two observations hold the same values (NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    x, y = np.asarray(a), np.asarray(b)
    nan = x.dtype.kind in "fc" and y.dtype.kind in "fc"
    return x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=nan))


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


# --- the picture ----------------------------------------------------------------------

#: Fill colours of the episodes (the first, the second...; then they repeat).
_EPISODE_FILLS = ("#dbeafe", "#dcfce7", "#fef3c7", "#fce7f3")
_INK, _MUTED, _EDGE, _RULE = "#1e293b", "#64748b", "#475569", "#e2e8f0"
_ENDED = "#dc2626"
_FINAL = ("#ede9fe", "#6d28d9")  # fill, ink of the final_obs badge
_MASKED = ("#ffedd5", "#c2410c")  # fill, ink of DISABLED's reset(mask) badge
_FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
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
_LEGEND = (
    ("episodes", "s3 = step 3 of an episode; ' marks the next one (s0' starts it)"),
    ("ended", "term / trunc: the episode ends at this call"),
    ("dashed", "reset step: the action is ignored, reward 0 (NextStep)"),
    ("final", 'final_obs: the ended episode\'s last obs, in info["final_obs"]'),
    ("masked", "reset(mask): the caller resets the ended sub-env (Disabled)"),
)


def _episode(obs: str) -> int:
    """The episode (0: the first) an observation label names.

    >>> [_episode(label) for label in ("s3", "s0'", "s2''", "s1'4", "s0'!")]
    [0, 1, 2, 4, 1]
    """
    _, prime, rest = obs.rstrip("!").partition("'")
    if not prime:
        return 0
    return int(rest) if rest.isdigit() else 1 + rest.count("'")


def _attrs(style: dict[str, str]) -> str:
    """SVG attributes from keyword arguments (``_`` for ``-``)."""
    return "".join(
        f" {key.replace('_', '-')}={quoteattr(v)}" for key, v in style.items()
    )


def _text(x: float, y: float, text: str, size: int, fill: str, **style: str) -> str:
    return (
        f'<text x="{x:g}" y="{y:g}" font-size="{size}" fill="{fill}"{_attrs(style)}>'
        f"{escape(text)}</text>"
    )


def _rect(x: float, y: float, width: float, height: float, **style: str) -> str:
    return (
        f'<rect x="{x:g}" y="{y:g}" width="{width:g}" height="{height:g}"'
        f"{_attrs(style)}/>"
    )


def _badge_width(text: str) -> int:
    return round(len(text) * 11 * _CHAR_W + 14)


def _badges(x: float, row: TimelineRow) -> list[tuple[float, str]]:
    """The badges under the cell of ``row`` at ``x``: (centre, text)."""
    found: list[tuple[float, str]] = []
    if row.final_obs:
        found.append((x + _CELL_W / 2, f"final_obs={row.final_obs}"))
    if row.then_reset:  # between this call and the next: the caller's reset
        centre = x + (_CELL_W + _COL_W) / 2
        found.append((centre, f"reset(mask) \u2192 {row.then_reset}"))
    return found


def _badge(centre: float, y: float, text: str, colours: tuple[str, str]) -> list[str]:
    """A pill holding ``text``, centred on ``centre``, its top at ``y``."""
    width = _badge_width(text)
    fill, ink = colours
    return [
        _rect(centre - width / 2, y, width, 20, rx="10", fill=fill, stroke=ink),
        _text(centre, y + 14, text, 11, ink, text_anchor="middle"),
    ]


def _group(label: str, parts: list[str]) -> list[str]:
    return [f"<g aria-label={quoteattr(label)}>", *(f"  {p}" for p in parts), "</g>"]


def _svg_cell(x: float, y: float, row: TimelineRow) -> list[str]:
    """One call's result: obs label, reward, flags, and the marks of its kind."""
    differs = row.obs.endswith("!")
    fill = _EPISODE_FILLS[_episode(row.obs) % len(_EPISODE_FILLS)]
    dashed = {"stroke_dasharray": "5 3"} if row.reset_step else {}
    edge = _ENDED if differs else _EDGE
    parts = [
        _rect(x, y, _CELL_W, _CELL_H, rx="6", fill=fill, stroke=edge,
              stroke_width="1.5", **dashed),
        _text(x + _CELL_W / 2, y + 24, row.obs, 18, _ENDED if differs else _INK,
              font_weight="bold", text_anchor="middle"),
    ]  # fmt: skip
    if row.reward is not None:
        parts.append(_text(x + 8, y + 43, f"r={row.reward:g}", 12, _INK))
    flags = [
        name for name, on in (("term", row.terminated), ("trunc", row.truncated)) if on
    ]
    if flags:
        parts += [
            _rect(x + _CELL_W - 5, y + 3, 4, _CELL_H - 6, fill=_ENDED),
            _text(x + _CELL_W - 9, y + 43, " ".join(flags), 12, _ENDED,
                  font_weight="bold", text_anchor="end"),
        ]  # fmt: skip
    if row.reset_step:
        parts.append(
            _text(x + _CELL_W / 2, y + 56, "action ignored", 9, _MUTED,
                  text_anchor="middle")
        )  # fmt: skip
    for centre, text in _badges(x, row):
        colours = _FINAL if text.startswith("final_obs") else _MASKED
        parts += _badge(centre, y + _CELL_H + 6, text, colours)
    return _group(f"{row.call}: {row.obs}", parts)


def _swatch(kind: str, x: float, y: float) -> list[str]:
    if kind == "episodes":
        return [
            _rect(x + 9 * i, y, 9, 14, fill=fill, stroke=_EDGE)
            for i, fill in enumerate(_EPISODE_FILLS[:3])
        ]
    if kind == "ended":
        return [_rect(x + 12, y, 4, 14, fill=_ENDED)]
    if kind == "dashed":
        return [
            _rect(x, y, 27, 14, rx="3", fill="none", stroke=_EDGE,
                  stroke_width="1.5", stroke_dasharray="5 3")
        ]  # fmt: skip
    fill, ink = _FINAL if kind == "final" else _MASKED
    return [_rect(x, y, 27, 14, rx="7", fill=fill, stroke=ink)]


def _width(lanes: list[tuple[str, list[TimelineRow]]], columns: int, title: str) -> int:
    """The picture's width: the columns, the legend, the title and the badges
    (a badge of the last column sticks out)."""
    x0 = _PAD + _LABEL_W
    badges_right = max(
        (
            centre + _badge_width(text) / 2
            for _, rows in lanes
            for column, row in enumerate(rows)
            for centre, text in _badges(x0 + column * _COL_W, row)
        ),
        default=0,
    )
    legend_w = 40 + max(len(text) for _, text in _LEGEND) * 12 * _CHAR_W
    title_w = len(title) * 15 * _CHAR_W  # bold, 15 px
    content = _PAD + max(_LABEL_W + columns * _COL_W, legend_w, title_w)
    return round(max(content, badges_right) + _PAD)


def _lane(
    lane: int, mode: str, rows: list[TimelineRow], y: float, width: int
) -> list[str]:
    """One mode's lane: its name, its caption, a rule above, its cells."""
    parts = [_text(_PAD, y + 26, mode, 15, _INK, font_weight="bold")]
    if mode in _CAPTIONS:
        parts.append(_text(_PAD, y + 44, _CAPTIONS[mode], 11, _MUTED))
    if lane:
        parts.append(
            f'<line x1="{_PAD}" y1="{y - 5}" x2="{width - _PAD}" y2="{y - 5}" '
            f'stroke="{_RULE}"/>'
        )
    for column, row in enumerate(rows):
        parts += _svg_cell(_PAD + _LABEL_W + column * _COL_W, y, row)
    return _group(mode, parts)


def timeline_svg(table: dict[str, list[TimelineRow]], title: str = "") -> str:
    """The rows of :func:`timeline` as a self-contained SVG document.

    One lane per mode, one column per call: a cell shows the observation's
    label (in its episode's colour), the reward and the flags; NEXT_STEP's reset
    step is dashed, ``info["final_obs"]`` and DISABLED's ``reset(mask)`` are
    badges, and a legend explains the marks. No scripts, styles or ids; the
    same table always gives the same text.

    >>> from vecmode.timeline import timeline, timeline_svg
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
    width = _width(lanes, len(calls), title)
    height = legend_top + len(_LEGEND) * 22 + _PAD
    body = [
        f"<title>{escape(title or 'What each autoreset mode returns, call by call')}"
        "</title>",
        _rect(0, 0, width, height, fill="#ffffff"),
    ]
    if title:
        body.append(_text(_PAD, _PAD + 16, title, 15, _INK, font_weight="bold"))
    x0 = _PAD + _LABEL_W + _CELL_W / 2
    body += _group("calls", [
        _text(x0 + i * _COL_W, top + 14, call, 12, _MUTED, text_anchor="middle")
        for i, call in enumerate(calls)
    ])  # fmt: skip
    for lane, (mode, rows) in enumerate(lanes):
        body += _lane(lane, mode, rows, lanes_top + lane * _LANE_H, width)
    legend: list[str] = []
    for item, (kind, text) in enumerate(_LEGEND):
        y = legend_top + item * 22
        legend += [*_swatch(kind, _PAD, y), _text(_PAD + 40, y + 11, text, 12, _INK)]
    body += _group("legend", legend)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family={quoteattr(_FONT)}>'
    )
    return "\n".join([head, *(f"  {part}" for part in body), "</svg>"]) + "\n"


#: Why :func:`timeline_svg` refuses a table without rows.
EMPTY = (
    "timeline_svg needs at least one mode with rows, e.g. "
    "timeline_svg(vecmode.timeline.timeline('CartPole-v1'))."
)


def action_message(action: Any, space: Any) -> str:
    """Why ``action`` is refused, and what to give instead."""
    return (
        f"action {action!r} is not in the env's action space {space}; give one it "
        f"holds (vecmode timeline --action A, A a Python literal: a number for "
        f"Discrete or Box, 'abc' for Text, {{'key': ...}} for Dict), or leave it "
        f"out for the default (1 where the space holds it, else a sample of it)."
    )
