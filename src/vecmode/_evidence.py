"""The classes vecmode's tests prove, so :func:`vecmode.check_stack` reports them
verified: ``tests/testing/test_check_wrapper.py`` runs ``check_wrapper`` on each
wrapper, ``tests/test_probe.py`` runs ``probe_mode`` on each env class."""

#: vecmode's wrappers and policies, proven right in their modes, refusing the others.
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

#: Vector env classes that behave as their metadata declares, in every mode.
VERIFIED_ENVS: frozenset[str] = frozenset(
    {
        "vecmode.sync_vector_env:SyncVectorEnv",
        "vecmode.async_vector_env:AsyncVectorEnv",
        "vecmode.ray_vector_env:RayVectorEnv",
        "vecmode.sb3.from_vec_env:FromSB3VectorEnv",
        "gymnasium.vector.sync_vector_env:SyncVectorEnv",
        "gymnasium.vector.async_vector_env:AsyncVectorEnv",
        "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv",
        "ale_py.vector_env:AtariVectorEnv",
        "envpool.python.gymnasium_envpool:GymnasiumEnvPoolMixin",
    }
)
