"""Which classes' declarations vecmode's own test suite proves (pure data).

:func:`vecmode.check_stack` reports a layer's modes as *verified* when something ran
the class and proved them; this module names the classes of vecmode itself whose
proof is in vecmode's test suite, run by its CI. Gymnasium's wrappers are verified
by ``vecmode._gymnasium``'s entries (``tests/registry/test_gymnasium_verdicts.py``), and a
user's class by recording a :func:`vecmode.testing.check_wrapper` report
(``check_wrapper(MyWrapper).record()``).

The tests hold these sets to what they prove, so the claim cannot drift:
``tests/testing/test_conformance.py`` runs ``check_wrapper`` on every class of
:data:`CONFORMANCE_TESTED` (``PPOStack``'s is in ``tests/wrappers/test_ppo_stack.py``) and
fails if a public vecmode wrapper is missing from it or a class in it has no
conformance run (``GymnasiumFinalObs``'s is over the dense-layout base,
:class:`vecmode.testing.DenseFinalObsVectorEnv`); ``tests/test_probe.py`` runs
``vecmode.probe_mode`` on every env class of :data:`VERIFIED_ENVS` in every mode it
can be built in (or names the test that does).
"""

#: vecmode's wrappers and autoreset policies (``"module:QualName"``) whose declared
#: modes ``tests/testing/test_conformance.py`` proves with ``check_wrapper``: mode
#: equivalence in every mode they support and refusal of the others.
CONFORMANCE_TESTED: frozenset[str] = frozenset(
    {
        "vecmode.autoreset:NextStepAutoreset",
        "vecmode.autoreset:SameStepAutoreset",
        "vecmode.autoreset:DisableAutoreset",
        "vecmode.autoreset:GymnasiumFinalObs",
        "vecmode.autoreset:GymnasiumBatch",
        "vecmode.wrappers.vectorize_observation:TransformObservation",
        "vecmode.wrappers.vectorize_observation:VectorizeTransformObservation",
        "vecmode.wrappers.vectorize_observation:FilterObservation",
        "vecmode.wrappers.vectorize_observation:FlattenObservation",
        "vecmode.wrappers.vectorize_observation:GrayscaleObservation",
        "vecmode.wrappers.vectorize_observation:ResizeObservation",
        "vecmode.wrappers.vectorize_observation:ReshapeObservation",
        "vecmode.wrappers.vectorize_observation:RescaleObservation",
        "vecmode.wrappers.vectorize_observation:DtypeObservation",
        "vecmode.wrappers.stateful_observation:NormalizeObservation",
        "vecmode.wrappers.stateful_observation:FrameStackObservation",
        "vecmode.wrappers.vectorize_action:TransformAction",
        "vecmode.wrappers.vectorize_action:VectorizeTransformAction",
        "vecmode.wrappers.vectorize_action:ClipAction",
        "vecmode.wrappers.vectorize_action:RescaleAction",
        "vecmode.wrappers.vectorize_reward:TransformReward",
        "vecmode.wrappers.vectorize_reward:VectorizeTransformReward",
        "vecmode.wrappers.vectorize_reward:ClipReward",
        "vecmode.wrappers.stateful_reward:NormalizeReward",
        "vecmode.wrappers.common:RecordEpisodeStatistics",
        "vecmode.wrappers.dict_info_to_list:DictInfoToList",
        "vecmode.wrappers.ppo_stack:PPOStack",
        "vecmode.wrappers.rendering:RecordVideo",
        "vecmode.wrappers.rendering:HumanRendering",
        "vecmode.wrappers.array_conversion:ArrayConversion",
        "vecmode.wrappers.array_conversion:NumpyToTorch",
        "vecmode.wrappers.array_conversion:JaxToNumpy",
        "vecmode.wrappers.array_conversion:JaxToTorch",
    }
)

#: Vector env classes (``"module:QualName"``) that behave as the mode their
#: ``metadata["autoreset_mode"]`` declares, in every mode they can be built in:
#: proven by ``vecmode.probe_mode`` runs (``tests/test_probe.py``; the Ray core's
#: in ``tests/cores/test_ray.py``, the SB3 bridge's in ``tests/integrations/test_sb3.py``) and, for
#: vecmode's, by the differential tests against Gymnasium's. ALE's SameStep is
#: proven as vecmode reads it (its dense final observations through
#: ``vecmode.autoreset.GymnasiumFinalObs``); EnvPool builds a subclass of its
#: mixin per task, which ``check_stack`` therefore reports as *inherited*.
VERIFIED_ENVS: frozenset[str] = frozenset(
    {
        "vecmode.sync_vector_env:SyncVectorEnv",
        "vecmode.async_vector_env:AsyncVectorEnv",
        "vecmode.ray_vector_env:RayVectorEnv",
        "vecmode.sb3:FromSB3VectorEnv",
        "gymnasium.vector.sync_vector_env:SyncVectorEnv",
        "gymnasium.vector.async_vector_env:AsyncVectorEnv",
        "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
        "ale_py.vector_env:AtariVectorEnv",
        "envpool.python.gymnasium_envpool:GymnasiumEnvPoolMixin",
    }
)
