"""What to fix, said after each of :func:`~vecmode.testing.check_wrapper`'s
failures (a property's hint)."""

MODES = (
    "Transform final observations (info['final_obs'] in SAME_STEP) like the "
    "others, count each real step once (not NEXT_STEP's reset step), and clear "
    "the state of a masked reset's sub-envs. Draw random numbers per sub-env and "
    "transition (or episode start), not per call. Only if its outputs pool the "
    "sub-envs of a call (a running mean), declare batch_dependent = True."
)
STAGGERED = (
    "Episodes ending together agreed. If its outputs pool the sub-envs of a call "
    "(a running mean), declare batch_dependent = True; else clear the state of a "
    "masked reset's sub-envs (theirs only), count each real step once (not "
    "NEXT_STEP's reset step), transform final observations (info['final_obs'] in "
    "SAME_STEP) like the others, and draw random numbers per sub-env, not per call."
)
CUTS = (
    "A difference at the cut is a final observation not transformed like the "
    "others; one after it is state kept across the masked reset: clear the "
    "sub-env's state on a masked reset."
)
CUTS_NEXT = (
    " In NEXT_STEP, one after it may be the reset step that follows the env's "
    "truncation there counted as a step: count real transitions only "
    "(vecmode.modes.BoundaryTracker says which)."
)
RESET = (
    "Clear NEXT_STEP's pending reset step at reset(): after a reset() the next "
    "step is a real transition, whether or not an episode had just ended."
)
BASES = (
    "vecmode's base is copy=False: it writes each call's observations into the "
    "arrays it returned before, so keep a copy (np.array(obs)) of any you hold "
    "past a call. And Gymnasium's envs pop 'reset_mask' from reset()'s options, "
    "vecmode's leave it: read options['reset_mask'] before passing them down. "
    "Seed any random numbers of your own from reset(seed=...)."
)
DENSE = (
    "Take the dense info['final_obs'] rows of the sub-envs that ended here into "
    "Gymnasium's layout (vecmode.modes.from_dense_finals does it)."
)
EPISODIC = (
    "Clear the state of the sub-envs whose episode starts: at reset, and where "
    "boundary.starts is True (a StatefulWrapper's episode_start). Outputs that "
    "depend on earlier episodes (running statistics) are not episodic."
)
