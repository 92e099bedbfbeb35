"""What Gymnasium 1.4's own vector wrappers really do in each autoreset mode.

Pure data (importing it imports no Gymnasium wrapper module). Each verdict was
established by running the wrapper in each mode and comparing what it returns
with what it should return (``tests/registry/test_gymnasium_verdicts.py``
re-establishes every one):

* ``"ok"``: the constructor accepts the mode and the output is correct;
* ``"refuses"``: the class itself raises at construction in that mode;
* ``"wrong"``: it accepts the mode, but the output is wrong, or it raises at the
  first step or reset that uses the mode's features.
"""

#: "module:QualName" -> {"NextStep": (verdict, reason), "SameStep": (...),
#: "Disabled": (...)}; verdict is "ok", "refuses" or "wrong"; reason is "" for "ok".
GYMNASIUM_VERDICTS: dict[str, dict[str, tuple[str, str]]]

_OK = ("ok", "")
_ALL_OK = {"NextStep": _OK, "SameStep": _OK, "Disabled": _OK}

_OBS = "gymnasium.wrappers.vector.vectorize_observation:"
_OBS_REFUSES = (
    "refuses",
    "Gymnasium's VectorObservationWrapper raises ValueError for SameStep: it "
    "transforms the returned observations but not info['final_obs'].",
)
_VECTORIZED_OBS_REFUSES = (
    "refuses",
    "Its base class, Gymnasium's VectorObservationWrapper, raises ValueError for "
    "SameStep, so this class's own code for transforming info['final_obs'] never "
    "runs.",
)
_FINAL_OBS_CRASH = (
    "wrong",
    "The first step on which an episode ends raises BufferError: info['final_obs'] "
    "is a NumPy object array, which the wrapper's DLPack conversion cannot convert.",
)
_JAX_MASK_CRASH = (
    "wrong",
    "Every partial reset raises TypeError: the wrapper converts "
    "options['reset_mask'] to a jax array, but Gymnasium's SyncVectorEnv and "
    "AsyncVectorEnv accept only a NumPy reset_mask (and Gymnasium's jax vector "
    "envs support only NextStep).",
)

GYMNASIUM_VERDICTS = {
    # ----------------------------------------------------------- observations
    _OBS + "TransformObservation": {
        "NextStep": _OK,
        "SameStep": _OBS_REFUSES,
        "Disabled": _OK,
    },
    **{
        _OBS + name: {
            "NextStep": _OK,
            "SameStep": _VECTORIZED_OBS_REFUSES,
            "Disabled": _OK,
        }
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
    "gymnasium.wrappers.vector.stateful_observation:NormalizeObservation": {
        "NextStep": _OK,
        "SameStep": (
            "refuses",
            "NormalizeObservation raises ValueError for every mode but NextStep "
            "(its base class, VectorObservationWrapper, also refuses SameStep, where "
            "info['final_obs'] would stay unnormalised).",
        ),
        "Disabled": (
            "refuses",
            "NormalizeObservation raises ValueError for every mode but NextStep.",
        ),
    },
    # ---------------------------------------------------------------- actions
    "gymnasium.wrappers.vector.vectorize_action:TransformAction": dict(_ALL_OK),
    "gymnasium.wrappers.vector.vectorize_action:VectorizeTransformAction": dict(
        _ALL_OK
    ),
    "gymnasium.wrappers.vector.vectorize_action:ClipAction": dict(_ALL_OK),
    "gymnasium.wrappers.vector.vectorize_action:RescaleAction": dict(_ALL_OK),
    # ---------------------------------------------------------------- rewards
    "gymnasium.wrappers.vector.vectorize_reward:TransformReward": dict(_ALL_OK),
    "gymnasium.wrappers.vector.vectorize_reward:VectorizeTransformReward": dict(
        _ALL_OK
    ),
    "gymnasium.wrappers.vector.vectorize_reward:ClipReward": dict(_ALL_OK),
    "gymnasium.wrappers.vector.stateful_reward:NormalizeReward": {
        "NextStep": _OK,
        "SameStep": (
            "wrong",
            "It restarts the discounted return it scales rewards by at every "
            "episode end, whereas NextStep (like the single-env NormalizeReward) "
            "carries it into the next episode, so the same transitions get "
            "different normalised rewards than in NextStep.",
        ),
        "Disabled": (
            "wrong",
            "Every reset call, a partial one (reset_mask) included, zeroes the "
            "discounted return of every sub-env, not only of the reset ones, so "
            "rewards get different normalised values than in NextStep.",
        ),
    },
    # ----------------------------------------------------------------- common
    "gymnasium.wrappers.vector.common:RecordEpisodeStatistics": {
        "NextStep": _OK,
        "SameStep": _OK,
        "Disabled": (
            "wrong",
            "A partial reset (reset_mask) clears every sub-env's episode return and "
            "length, not only the reset ones', because Gymnasium's vector env pops "
            "reset_mask from the options dict before the wrapper reads it; the "
            "other sub-envs then report too small a return and length. (Directly "
            "over vecmode's envs, which never mutate options, it is right but for "
            "a caveat, and vecmode's check says so there.)",
        ),
    },
    "gymnasium.wrappers.vector.dict_info_to_list:DictInfoToList": dict(_ALL_OK),
    # -------------------------------------------------------------- rendering
    "gymnasium.wrappers.vector.rendering:HumanRendering": {
        "NextStep": _OK,
        "SameStep": (
            "wrong",
            "An episode's last frame is never shown: the sub-env has already been "
            "reset when the step's frame is rendered.",
        ),
        "Disabled": _OK,
    },
    "gymnasium.wrappers.vector.rendering:RecordVideo": {
        "NextStep": _OK,
        "SameStep": (
            "wrong",
            "Videos miss each episode's last frame: the sub-env has already been "
            "reset when the step's frame is captured (Gymnasium warns about this "
            "when the wrapper is built).",
        ),
        "Disabled": (
            "wrong",
            "A partial reset records an extra frame in which the sub-envs that were "
            "not reset have not moved, so their episodes' videos repeat a frame "
            "each time another sub-env is reset.",
        ),
    },
    # ------------------------------------------------------------- conversion
    "gymnasium.wrappers.vector.array_conversion:ArrayConversion": {
        "NextStep": _OK,
        "SameStep": _FINAL_OBS_CRASH,
        "Disabled": _OK,
    },
    "gymnasium.wrappers.vector.numpy_to_torch:NumpyToTorch": {
        "NextStep": _OK,
        "SameStep": _FINAL_OBS_CRASH,
        "Disabled": _OK,
    },
    "gymnasium.wrappers.vector.jax_to_numpy:JaxToNumpy": {
        "NextStep": _OK,
        "SameStep": _FINAL_OBS_CRASH,
        "Disabled": _JAX_MASK_CRASH,
    },
    "gymnasium.wrappers.vector.jax_to_torch:JaxToTorch": {
        "NextStep": _OK,
        "SameStep": _FINAL_OBS_CRASH,
        "Disabled": _JAX_MASK_CRASH,
    },
}

#: Gymnasium's vector wrappers that ``vecmode.wrappers`` offers under the same name
#: and arguments, right in every mode: all of them.
VECMODE_EQUIVALENTS = frozenset(name.rpartition(":")[2] for name in GYMNASIUM_VERDICTS)

#: Gymnasium's vector wrappers that are right in a mode marked "ok" above only
#: while the caller makes no partial reset (``reset_mask``) over Gymnasium's vector
#: envs: what goes wrong after one (the verdict stays "ok", with this caveat).
PARTIAL_RESET_CAVEATS: dict[str, str] = {
    "gymnasium.wrappers.vector.stateful_observation:NormalizeObservation": (
        "a partial reset (reset_mask) raises ValueError: it does not support them."
    ),
    "gymnasium.wrappers.vector.stateful_reward:NormalizeReward": (
        "after a partial reset (reset_mask), wrong: every reset call zeroes the "
        "discounted return of every sub-env, not only of the reset ones."
    ),
    "gymnasium.wrappers.vector.common:RecordEpisodeStatistics": (
        "after a partial reset (reset_mask) over Gymnasium's vector envs, wrong: "
        "they pop reset_mask from the options before the wrapper reads it, so it "
        "clears every sub-env's episode return and length (directly over vecmode's "
        "envs it is right, but for another caveat)."
    ),
}

#: Gymnasium's vector wrappers that write into what the env below returned, in
#: every mode (a caveat of each mode marked "ok").
WRITES_BELOW_CAVEATS: dict[str, str] = {
    **{
        f"gymnasium.wrappers.vector.vectorize_reward:{short}": (
            "it writes its rewards into the array the env below returned "
            "(rewards[i] = func(rewards[i])): a layer below that keeps that array "
            "(a logger, a buffer) then holds the wrapper's rewards, not its own "
            "(Gymnasium's and vecmode's vector envs return a new one each call; "
            f"vecmode.wrappers.{short} returns a new array)."
        )
        for short in ("VectorizeTransformReward", "ClipReward")
    },
    "gymnasium.wrappers.vector.vectorize_observation:VectorizeTransformObservation": (
        "where its observation space is the env's (a transform that keeps it: the "
        "default; its subclasses too, where they keep it), it writes its "
        "observations into the array the env below returned (concatenate(..., "
        "observations)): over an env built with copy=False that hands out its "
        "own batch (Gymnasium's AsyncVectorEnv; vecmode's async and Ray cores), a "
        "masked reset then returns the other sub-envs' observations transformed "
        "twice (vecmode.wrappers.VectorizeTransformObservation returns a new "
        "array)."
    ),
}

#: Gymnasium's vector wrappers whose "wrong" verdicts and caveats all come from
#: the env below popping ``reset_mask`` from the options: over an env that keeps
#: the options (vecmode's cores), they are right in every mode, with this caveat.
CAVEATS_WHERE_OPTIONS_KEPT: dict[str, str] = {
    "gymnasium.wrappers.vector.common:RecordEpisodeStatistics": (
        "The step's info['_episode'] is the wrapper's own array, which a reset "
        "of the sub-envs whose episode ended there clears in place (in Disabled, the "
        "reset that restarts them): read or copy the step's infos before that "
        "reset (vecmode's TransitionCollector does, and vecmode's "
        "RecordEpisodeStatistics returns arrays of its own)."
    )
}

#: Gymnasium's vector wrappers whose statistics pool the sub-envs of a batch (what
#: ``check_wrapper(..., batch_dependent=...)`` is about); they do not say so.
BATCH_DEPENDENT: frozenset[str] = frozenset(
    {
        "gymnasium.wrappers.vector.stateful_observation:NormalizeObservation",
        "gymnasium.wrappers.vector.stateful_reward:NormalizeReward",
    }
)
