"""The timeline of the modes: its rows, and its picture (``timeline_svg``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import gymnasium as gym
import numpy as np
import pytest

import vecmode.timeline
from vecmode.replay.compare import same
from vecmode.timeline import TimelineRow, episode_legend, timeline, timeline_svg

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def rows():
    return timeline("CartPole-v1", steps=7, max_episode_steps=3)


def texts(element) -> list[str]:
    return [node.text or "" for node in element.iter(f"{SVG}text")]


def lanes(root) -> dict[str, ET.Element]:
    """The lane groups, by their first text (the mode)."""
    groups = [g for g in root.findall(f"{SVG}g") if g.get("aria-label") not in
              ("calls", "legend")]  # fmt: skip
    return {texts(g)[0]: g for g in groups}


def cells(lane) -> list[ET.Element]:
    return lane.findall(f"{SVG}g")


# ------------------------------------------------------------------ the rows
def test_rows_carry_the_marks_as_fields(rows):
    """reset_step, final_obs and then_reset are set exactly where the notes say."""
    for mode_rows in rows.values():
        for row in mode_rows:
            assert row.reset_step == (row.note == "reset step, action ignored")
            assert row.final_obs == row.note.removeprefix("final_obs=") * (
                row.note.startswith("final_obs=")
            )
            assert row.then_reset == row.note.removeprefix(
                "caller: reset(mask) -> "
            ) * (row.note.startswith("caller: reset(mask)"))
    assert [r.call for r in rows["NextStep"] if r.reset_step] == ["step 4"]
    assert [(r.call, r.final_obs) for r in rows["SameStep"] if r.final_obs] == [
        ("step 3", "s3"),
        ("step 6", "s3'"),
    ]
    assert [(r.call, r.then_reset) for r in rows["Disabled"] if r.then_reset] == [
        ("step 3", "s0'"),
        ("step 6", "s0''"),
    ]


def test_an_action_outside_the_space_is_refused():
    with pytest.raises(ValueError) as refused:
        timeline("CartPole-v1", action=2)
    assert str(refused.value) == vecmode.timeline.action_message(
        2, gym.spaces.Discrete(2)
    )


# ------------------------------------------------------------------ the picture
def test_svg_is_well_formed_and_self_contained(rows):
    svg = timeline_svg(rows, title="CartPole-v1")
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert root.find(f"{SVG}title").text == "CartPole-v1"
    for outside in ("<script", "href", "@import", "url(", "<style", " id="):
        assert outside not in svg
    assert not svg.startswith("<?xml")  # can be inlined in HTML as it is


def test_svg_is_deterministic():
    """Two separate runs give the same bytes (reproducible docs builds)."""
    first = timeline_svg(timeline("CartPole-v1", steps=5), "t")
    second = timeline_svg(timeline("CartPole-v1", steps=5), "t")
    assert first.encode() == second.encode()
    assert first != timeline_svg(timeline("CartPole-v1", steps=5), "u")


def test_svg_has_one_lane_per_mode_with_each_calls_labels(rows):
    root = ET.fromstring(timeline_svg(rows))
    found = lanes(root)
    assert list(found) == ["NextStep", "SameStep", "Disabled"]
    for mode, lane in found.items():
        lane_cells = cells(lane)
        assert len(lane_cells) == len(rows[mode])
        for cell, row in zip(lane_cells, rows[mode], strict=True):
            shown = texts(cell)
            assert shown[0] == row.obs
            if row.reward is not None:
                assert f"r={row.reward:g}" in shown
            flags = " ".join(
                f
                for f, on in (("term", row.terminated), ("trunc", row.truncated))
                if on
            )
            assert (flags in shown) == bool(flags)
    calls = texts(next(g for g in root.findall(f"{SVG}g") if g.get("aria-label") ==
                       "calls"))  # fmt: skip
    assert calls == [row.call for row in rows["NextStep"]]


def test_svg_marks_reset_steps_final_obs_and_masked_resets(rows):
    found = lanes(ET.fromstring(timeline_svg(rows)))
    for mode, lane in found.items():
        for cell, row in zip(cells(lane), rows[mode], strict=True):
            box = cell.find(f"{SVG}rect")
            shown = texts(cell)
            assert (box.get("stroke-dasharray") is not None) == row.reset_step
            assert ("action ignored" in shown) == row.reset_step
            assert (f"final_obs={row.final_obs}" in shown) == bool(row.final_obs)
            assert (f"reset(mask) \u2192 {row.then_reset}" in shown) == bool(
                row.then_reset
            )
    # where the reference puts them: NextStep's reset step after the end, the final
    # obs of SameStep and the caller's reset in Disabled at the end
    assert "action ignored" in texts(cells(found["NextStep"])[4])
    assert "final_obs=s3" in texts(cells(found["SameStep"])[3])
    assert "reset(mask) \u2192 s0'" in texts(cells(found["Disabled"])[3])


def test_svg_colours_cells_by_episode(rows):
    found = lanes(ET.fromstring(timeline_svg(rows)))
    fills = {
        mode: [cell.find(f"{SVG}rect").get("fill") for cell in cells(lane)]
        for mode, lane in found.items()
    }
    # NextStep: s0 s1 s2 s3 | s0' s1' s2' s3'
    assert len(set(fills["NextStep"][:4])) == 1
    assert len(set(fills["NextStep"][4:])) == 1
    assert fills["NextStep"][0] != fills["NextStep"][4]
    # SameStep: s0 s1 s2 | s0' s1' s2' | s0'' s1''
    assert fills["SameStep"][3] == fills["NextStep"][4]
    assert fills["SameStep"][6] not in (fills["SameStep"][0], fills["SameStep"][3])


def test_svg_colours_repeat_after_four_episodes():
    """From the fifth episode (``s0'4``) on, the episodes' colours repeat."""
    labels = ["s0", "s1'", "s0''", "s0'''", "s0'4", "s1'5!"]
    rows = {
        "NextStep": [TimelineRow(f"step {i}", s, 0.0) for i, s in enumerate(labels)]
    }
    [lane] = lanes(ET.fromstring(timeline_svg(rows))).values()
    fills = [cell.find(f"{SVG}rect").get("fill") for cell in cells(lane)]
    assert len(set(fills[:4])) == 4
    assert fills[4:] == fills[:2]


def test_svg_has_a_legend(rows):
    root = ET.fromstring(timeline_svg(rows))
    legend = next(g for g in root.findall(f"{SVG}g") if g.get("aria-label") == "legend")
    shown = " ".join(texts(legend))
    for term in ("s0'", "term / trunc", "reset step", "final_obs", "reset(mask)"):
        assert term in shown
    assert "s3 = step 3 of the first episode" in shown


def test_the_legend_follows_the_episode_shown():
    two = timeline("CartPole-v1", steps=4, max_episode_steps=2)
    assert episode_legend(two).startswith("s2 = step 2 of the first episode, s0' = ")
    assert "s2 = step 2 of the first episode" in timeline_svg(two)
    assert "s3 = " not in timeline_svg(two)
    none = timeline("CartPole-v1", steps=2, max_episode_steps=5)
    assert episode_legend(none) == (
        "s2 = step 2 of the first episode; no episode ended in the steps shown."
    )


def test_svg_escapes_text():
    rows = {"A<&>": [TimelineRow("reset", "s0"), TimelineRow("step 1", "s1<", 1.0)]}
    svg = timeline_svg(rows, title='x < y & "z"')
    root = ET.fromstring(svg)
    assert root.find(f"{SVG}title").text == 'x < y & "z"'
    assert "A<&>" in texts(root) and "s1<" in texts(root)


def test_svg_flags_a_label_whose_value_differs():
    rows = {"NextStep": [TimelineRow("reset", "s0"), TimelineRow("step 1", "s1!", 1.0)]}
    root = ET.fromstring(timeline_svg(rows))
    [lane] = lanes(root).values()
    good, bad = (cell.find(f"{SVG}rect").get("stroke") for cell in cells(lane))
    assert good != bad


def test_svg_of_nothing_is_refused():
    for empty in ({}, {"NextStep": []}):
        with pytest.raises(ValueError) as refused:
            timeline_svg(empty)
        assert str(refused.value) == vecmode.timeline.EMPTY


@pytest.mark.parametrize("steps", [2, 3, 6, 20])
def test_svg_is_wide_enough_for_every_column_and_badge(steps):
    """Also when the last call ends an episode (its badges stick out)."""
    root = ET.fromstring(timeline_svg(timeline("CartPole-v1", steps=steps)))
    width = int(root.get("width"))
    right = max(
        float(rect.get("x")) + float(rect.get("width"))
        for rect in root.iter(f"{SVG}rect")
        if rect.get("width") != str(width)  # the background
    )
    assert right <= width - 8
    assert width >= 16 + 136 + (steps + 1) * 104


def test_svg_is_wide_enough_for_its_title():
    """The CLI's title names the env, the episodes, the seed and the action."""
    title = "SomeEnvironment-v0, " + "a long title " * 12
    root = ET.fromstring(timeline_svg(timeline("CartPole-v1", steps=2), title))
    assert int(root.get("width")) >= 2 * 16 + len(title) * 15 * 0.62


# ------------------------------------------------------- any observation, any action
_TEXT = gym.spaces.Text(8, charset="abcdefgh")
_SMALL = gym.spaces.Box(0, 9, (1,), np.float32)


def _observation(kind: str, t: int):
    """Step ``t``'s observation: a different one at every step."""
    if kind == "Text":
        return "h" * t + "cafe"
    if kind == "Graph":
        nodes = np.full((t + 1, 2), t, dtype=np.float32)
        return gym.spaces.GraphInstance(nodes, None, None)
    if kind == "Sequence":
        return (t % 5,) * (t + 1)
    if kind == "Dict(Text)":
        return {"n": np.array([t], np.float32), "word": "a" * (t + 1)}
    return np.array([t], np.float32)


_OBSERVATION_SPACES = {
    "Text": _TEXT,
    "Graph": gym.spaces.Graph(gym.spaces.Box(0, 9, (2,), np.float32), None),
    "Sequence": gym.spaces.Sequence(gym.spaces.Discrete(5)),
    "Dict(Text)": gym.spaces.Dict(n=_SMALL, word=_TEXT),
}
_ACTION_SPACES = {
    "Text": gym.spaces.Text(4),
    "Dict": gym.spaces.Dict(a=gym.spaces.Discrete(2), b=gym.spaces.Text(3)),
    "Tuple": gym.spaces.Tuple(
        (gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(3))
    ),
    "Graph": gym.spaces.Graph(gym.spaces.Box(0, 1, (1,), np.float32), None),
    "Discrete(start=5)": gym.spaces.Discrete(2, start=5),
}
#: The actions the action-space envs were given, in order.
_TAKEN: list = []


class _KindsEnv(gym.Env):
    """Observations of ``obs`` kind, actions of ``act`` kind (refusing any other)."""

    def __init__(self, obs: str = "Box", act: str = "Discrete"):
        self.kind = obs
        self.observation_space = _OBSERVATION_SPACES.get(obs, _SMALL)
        self.action_space = _ACTION_SPACES.get(act, gym.spaces.Discrete(2))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return _observation(self.kind, 0), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        _TAKEN.append(action)
        self.t += 1
        return _observation(self.kind, self.t), 1.0, False, False, {}


def _env_id(role: str, kind: str) -> str:
    """The id ``_KindsEnv`` is registered under, with ``kind`` as ``role``."""
    return f"Timeline{role.title()}{''.join(c for c in kind if c.isalnum())}-v0"


for _role, _kinds in (("obs", _OBSERVATION_SPACES), ("act", _ACTION_SPACES)):
    for _kind in _kinds:
        if _env_id(_role, _kind) not in gym.registry:
            gym.register(
                _env_id(_role, _kind), entry_point=_KindsEnv, kwargs={_role: _kind}
            )


@pytest.mark.parametrize("kind", list(_OBSERVATION_SPACES))
def test_observations_batched_as_tuples_get_no_false_marks(kind, rows):
    """Text, Graph, Sequence (and a Dict holding Text) observations are batched
    as tuples of samples: each label is checked against the right value, so
    SameStep's final_obs is s3, not s3! (it was read as a Tuple space's batch)."""
    found = timeline(_env_id("obs", kind), steps=7, max_episode_steps=3)
    for mode, mode_rows in found.items():
        labels = [(r.obs, r.final_obs, r.then_reset) for r in mode_rows]
        assert labels == [(r.obs, r.final_obs, r.then_reset) for r in rows[mode]]
    assert not any("!" in r.obs + r.final_obs for rs in found.values() for r in rs)


@pytest.mark.parametrize("kind", list(_ACTION_SPACES))
def test_any_action_space_gets_one_fixed_action_by_default(kind, rows):
    """Without ``action``: a sample of the action space seeded with ``seed``
    (where the all-1 action is not in it), the same in every mode and run."""
    _TAKEN.clear()
    found = timeline(_env_id("act", kind), steps=7, max_episode_steps=3)
    assert [r.obs for r in found["SameStep"]] == [r.obs for r in rows["SameStep"]]
    taken = list(_TAKEN)
    assert len(taken) == 3 * 7 - 1  # NextStep's reset step (step 4) takes none
    assert all(same(a, taken[0]) for a in taken)
    _TAKEN.clear()
    timeline(_env_id("act", kind), steps=2)
    assert same(_TAKEN[0], taken[0])


def test_an_action_of_any_space_can_be_given():
    _TAKEN.clear()
    timeline(_env_id("act", "Text"), steps=2, action="ab")
    timeline(_env_id("act", "Dict"), steps=2, action={"a": 1, "b": "xyz"})
    assert _TAKEN[0] == "ab" and _TAKEN[-1] == {"a": 1, "b": "xyz"}
    timeline("CartPole-v1", steps=2, action=np.int64(0))


@pytest.mark.parametrize(
    ("env_id", "action"),
    [
        (_env_id("act", "Text"), "too long"),
        (_env_id("act", "Text"), 3),
        (_env_id("act", "Dict"), {"a": 1}),
        ("CartPole-v1", 0.5),  # would be 0 as an int
        ("CartPole-v1", "push"),
        ("Pendulum-v1", "push"),
    ],
)
def test_an_action_that_does_not_fit_the_space_is_refused(env_id, action):
    with pytest.raises(vecmode.timeline.TimelineActionError) as refused:
        timeline(env_id, steps=2, action=action)
    space = gym.make(env_id).action_space
    assert str(refused.value) == vecmode.timeline.action_message(action, space)
    assert isinstance(refused.value, ValueError)
