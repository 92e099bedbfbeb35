"""What Gymnasium 1.4's vector wrappers really do in each autoreset mode (data that
``tests/registry/test_gymnasium_verdicts.py`` re-establishes): ``"ok"``,
``"refuses"`` (raises when built) or ``"wrong"`` (wrong output, or raises later)."""

_GWV = "gymnasium.wrappers.vector."
_Verdict = tuple[str, str]
_OK: _Verdict = ("ok", "")


def _verdicts(
    next_step: _Verdict = _OK, same_step: _Verdict = _OK, disabled: _Verdict = _OK
) -> dict[str, _Verdict]:
    return {"NextStep": next_step, "SameStep": same_step, "Disabled": disabled}


_VECTORIZED_OBS_REFUSES = (
    "refuses",
    "Its base class, Gymnasium's VectorObservationWrapper, raises ValueError for "
    "SameStep, so its own code for info['final_obs'] never runs.",
)
_NEXT_STEP_ONLY = (
    "refuses",
    "NormalizeObservation raises ValueError for every mode but NextStep.",
)
_FINAL_OBS_CRASH = (
    "wrong",
    "The first step on which an episode ends raises BufferError: its DLPack "
    "conversion cannot convert info['final_obs'], a NumPy object array.",
)
_JAX_MASK_CRASH = (
    "wrong",
    "Every partial reset raises TypeError: it converts options['reset_mask'] to a "
    "jax array, but Gymnasium's SyncVectorEnv and AsyncVectorEnv take only a "
    "NumPy one (and its jax vector envs support only NextStep).",
)

#: "module:QualName" -> {mode name: (verdict, reason)}; the reason is "" for "ok".
GYMNASIUM_VERDICTS: dict[str, dict[str, tuple[str, str]]] = {
    _GWV + "vectorize_observation:TransformObservation": _verdicts(
        same_step=(
            "refuses",
            "Gymnasium's VectorObservationWrapper raises ValueError for SameStep: "
            "it transforms the returned observations but not info['final_obs'].",
        )
    ),
    **{
        _GWV + f"vectorize_observation:{name}": _verdicts(
            same_step=_VECTORIZED_OBS_REFUSES
        )
        for name in (
            "VectorizeTransformObservation",
            "FilterObservation",
            "FlattenObservation",
            "GrayscaleObservation",
            "ResizeObservation",
            "ReshapeObservation",
            "RescaleObservation",
            "DtypeObservation",
        )
    },
    _GWV + "stateful_observation:NormalizeObservation": _verdicts(
        same_step=_NEXT_STEP_ONLY, disabled=_NEXT_STEP_ONLY
    ),
    **{
        _GWV + f"vectorize_action:{name}": _verdicts()
        for name in (
            "TransformAction",
            "VectorizeTransformAction",
            "ClipAction",
            "RescaleAction",
        )
    },
    **{
        _GWV + f"vectorize_reward:{name}": _verdicts()
        for name in ("TransformReward", "VectorizeTransformReward", "ClipReward")
    },
    _GWV + "stateful_reward:NormalizeReward": _verdicts(
        same_step=(
            "wrong",
            "It restarts the discounted return it scales rewards by at every "
            "episode end, where NextStep (and the single-env NormalizeReward) "
            "carries it on, so rewards are normalised differently than in NextStep.",
        ),
        disabled=(
            "wrong",
            "Every reset call, a partial one included, zeroes every sub-env's "
            "discounted return, so rewards are normalised differently than in "
            "NextStep.",
        ),
    ),
    _GWV + "common:RecordEpisodeStatistics": _verdicts(
        disabled=(
            "wrong",
            "A partial reset clears every sub-env's episode return and length, as "
            "Gymnasium's vector envs pop reset_mask from the options before the "
            "wrapper reads it. (Over vecmode's envs, which keep the options, it is "
            "right but for a caveat.)",
        )
    ),
    _GWV + "dict_info_to_list:DictInfoToList": _verdicts(),
    _GWV + "rendering:HumanRendering": _verdicts(
        same_step=(
            "wrong",
            "An episode's last frame is never shown: the sub-env is already reset "
            "when the step's frame is rendered.",
        )
    ),
    _GWV + "rendering:RecordVideo": _verdicts(
        same_step=(
            "wrong",
            "Videos miss each episode's last frame: the sub-env is already reset "
            "when the step's frame is captured (Gymnasium warns about it).",
        ),
        disabled=(
            "wrong",
            "A partial reset records a frame in which the other sub-envs have not "
            "moved, so their videos repeat a frame at each reset of another.",
        ),
    ),
    _GWV + "array_conversion:ArrayConversion": _verdicts(same_step=_FINAL_OBS_CRASH),
    _GWV + "numpy_to_torch:NumpyToTorch": _verdicts(same_step=_FINAL_OBS_CRASH),
    _GWV + "jax_to_numpy:JaxToNumpy": _verdicts(
        same_step=_FINAL_OBS_CRASH, disabled=_JAX_MASK_CRASH
    ),
    _GWV + "jax_to_torch:JaxToTorch": _verdicts(
        same_step=_FINAL_OBS_CRASH, disabled=_JAX_MASK_CRASH
    ),
}

#: The wrappers ``vecmode.wrappers`` offers too, right in every mode: all of them.
VECMODE_EQUIVALENTS = frozenset(name.rpartition(":")[2] for name in GYMNASIUM_VERDICTS)

#: Wrappers right in an "ok" mode until the caller makes a partial reset
#: (``reset_mask``) over Gymnasium's vector envs: what goes wrong then.
PARTIAL_RESET_CAVEATS: dict[str, str] = {
    _GWV + "stateful_observation:NormalizeObservation": (
        "a partial reset (reset_mask) raises ValueError: it does not support them."
    ),
    _GWV + "stateful_reward:NormalizeReward": (
        "after a partial reset (reset_mask), wrong: every reset call zeroes every "
        "sub-env's discounted return."
    ),
    _GWV + "common:RecordEpisodeStatistics": (
        "after a partial reset (reset_mask) over Gymnasium's vector envs, wrong: "
        "they pop reset_mask before the wrapper reads it, so it clears every "
        "sub-env's episode return and length (over vecmode's envs it is right, but "
        "for another caveat)."
    ),
}

#: Wrappers that write into what the env below returned, in every "ok" mode.
WRITES_BELOW_CAVEATS: dict[str, str] = {
    **{
        _GWV + f"vectorize_reward:{short}": (
            "it writes its rewards into the array the env below returned, so a "
            "layer below that keeps that array (a logger, a buffer) holds the "
            f"wrapper's rewards (vecmode.wrappers.{short} returns a new array)."
        )
        for short in ("VectorizeTransformReward", "ClipReward")
    },
}

#: Wrappers right in NextStep but for its reset step: what they do there.
NEXT_STEP_CAVEATS: dict[str, str] = {
    _GWV + f"vectorize_reward:{name}": (
        "In NextStep it transforms the reset step's reward 0 too, whose action the "
        "env ignored: where func(0) is not 0 (ClipReward's bounds exclude 0), that "
        "step gets a reward; vecmode.wrappers' classes keep 0."
    )
    for name in ("TransformReward", "VectorizeTransformReward", "ClipReward")
}

#: Wrappers that read the infos as Gymnasium's batched dict (they assert it).
DICT_INFO_READERS = frozenset(
    _GWV + name
    for name in ("common:RecordEpisodeStatistics", "dict_info_to_list:DictInfoToList")
)
#: Why they are wrong over a ``DictInfoToList``.
LISTED_INFOS = (
    "a DictInfoToList below it makes the infos a list, which it cannot read: its "
    "reset or step raises AssertionError. Make DictInfoToList the outermost wrapper."
)

#: Wrappers that write into the env's batch, and so are wrong where a masked reset
#: reaches them over an env that keeps the rows it hands out (see
#: :func:`vecmode.env_classes.keeps_rows`); right over others.
KEPT_ROWS_FAULTS: dict[str, str] = {
    _GWV + "vectorize_observation:VectorizeTransformObservation": (
        "where it keeps the env's observation space (the default), it writes its "
        "observations into the array the env below returned: over an env that "
        "hands out its own batch (copy=False: Gymnasium's AsyncVectorEnv, vecmode's "
        "async and Ray cores), a masked reset then returns the other sub-envs' "
        "observations transformed twice (vecmode.wrappers."
        "VectorizeTransformObservation returns a new array)."
    ),
}

#: Wrappers whose "wrong" verdicts and caveats all come from the env below popping
#: ``reset_mask``: over an env that keeps the options, right with this caveat.
CAVEATS_WHERE_OPTIONS_KEPT: dict[str, str] = {
    _GWV + "common:RecordEpisodeStatistics": (
        "The step's info['_episode'] is the wrapper's own array, which a masked "
        "reset reaching it (the caller's in Disabled, or a policy's above it) "
        "clears in place: read or copy the step's infos before such a reset "
        "(vecmode's TransitionCollector and SameStepAutoreset do; vecmode's "
        "RecordEpisodeStatistics returns arrays of its own)."
    )
}

#: Wrappers whose statistics pool the sub-envs of a batch (``check_wrapper(...,
#: batch_dependent=...)``).
BATCH_DEPENDENT: frozenset[str] = frozenset(
    {
        _GWV + "stateful_observation:NormalizeObservation",
        _GWV + "stateful_reward:NormalizeReward",
    }
)

#: Wrappers that compare metadata["autoreset_mode"] with each ``AutoresetMode``
#: member, so a mode declared as a string (equal to none) is misread silently
#: (the others that read the mode raise when built, or test SameStep alone).
MISREAD_STRING_MODES: frozenset[str] = frozenset({_GWV + "rendering:RecordVideo"})
