"""DeskLoop as a Gymnasium environment: one task on one live desktop.

    env = gymnasium.make("DeskLoop/gimp-flip-export-v0")   # or make("gimp-flip-export")
    obs, info = env.reset(seed=0)
    while True:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    env.close()

Every task of the library is registered as ``DeskLoop/<task id>-v0`` when this
package is imported (`register_tasks` registers another folder). Our own `make`
takes a task id or file and answers an unknown id with "did you mean"; so does
`gymnasium.make` for the registered names.

Spaces (`app.env.spaces` says why they are what they are):
    observation   Dict: screen (Box uint8 height×width×3), instruction (text),
                  messages (Sequence of Dict role, kind, text, step, source),
                  step (agent turns taken). A phase's message is in it at once.
    action        Dict: kind (Discrete, an index into `app.core.actions.KINDS`),
                  point and end (Box of pixels), button, count, dy, text, seconds.
`step` also takes an `app.core.actions` action, or its compact or explicit form
(``{"click": [10, 20]}``, ``{"kind": "type", "text": "hi"}``, ``"done"``,
``{"ask": "Which size?"}``, ``{"fail": "stuck"}``), as language agents write them.
An invalid action, in any form, is a rejected step: it uses a step of the budget,
the reward is 0 and `info["rejected"]` says why.

Reward: the episode's state-based score (partial credit in [0, 1]) on the step that
ends it, 0 before. `terminated` when the agent ended it (DONE accepted, FAIL);
`truncated` when the step or time budget ran out, or on an error
(``info["error"]``). The wall-clock budget runs from the end of setup, including
the caller's own thinking time. `reset` records a running episode as aborted;
`render` ("rgb_array") is the last screen; `close` releases the desktop.
"""

from __future__ import annotations

from app.env.environment import DeskLoopEnv, make
from app.env.registration import LIBRARY, env_id, register_tasks
from app.env.spaces import from_space, to_space

__all__ = ["DeskLoopEnv", "env_id", "from_space", "make", "register_tasks", "to_space"]

if LIBRARY.is_dir():
    register_tasks(LIBRARY)
