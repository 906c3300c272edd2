"""Exit codes of every ``morl-robot`` command: one table, the source of docs/reference/exit_codes.md.

:data:`EXIT_CODES` maps a command (as typed after ``morl-robot``; ``"*"`` = every command) to
``{code: meaning}``.  A command's own entry adds to (or sharpens) the ``"*"`` codes.  The
safety test's verdict codes come from :data:`morl_robot.safety.testing.VERDICTS`.
"""
from __future__ import annotations

#: Codes every command can end with.
COMMON: dict[int, str] = {
    0: "success (and `morl-robot`, `morl-robot bench`, `morl-robot experiment`, `morl-robot rm` without a "
       "sub-command: their help, printed on stdout, as `ros2` does)",
    1: "the command ran and failed (a node or learner exited with an error, a measured goal not met); an "
       "unexpected Python exception (a bug: its traceback is printed) also ends with 1",
    2: "usage or configuration error, nothing started or nothing changed: a bad option or value (argparse), "
       "a YAML file or `--set` key that is wrong (named with its file), an unknown task/robot/profile, a run "
       "directory that refuses to resume, a graph that stalled (MorlRobotError: one line on stderr)",
    130: "interrupted (Ctrl-C, SIGTERM or SIGHUP): nodes stopped cleanly; a training run resumes from its "
         "checkpoint when the same command runs again",
}


def _safety_test_codes() -> dict[int, str]:
    try:
        from morl_robot.safety.testing import VERDICTS
    except ImportError:  # the verdict table not there yet: the codes the command has always used
        return {0: "PASS: every rule passed", 1: "FAIL: at least one rule failed",
                3: "INCOMPLETE: a threshold the probes could not reach (e.g. nobody pressed the gauge on hardware)"}
    return {v.code: f"{v.label}: {v.meaning} What to do: {v.action}" for v in VERDICTS}


def _table() -> dict[str, dict[int, str]]:
    return {
        "*": dict(COMMON),
        "train": {
            1: "the learner node exited with an error (its first error line and its log are named)",
            130: "interrupted: every node stopped, the learner wrote its checkpoint; run the same command to resume",
        },
        "deploy": {
            2: "also: the sim-to-sim check stalled (no episode progress for --stall-timeout s; every node's "
               "newest status is printed) or the monitor kept e-stopping before the counted episodes",
            130: "interrupted (or, without --episodes, ended with Ctrl-C before --duration)",
        },
        "safety-test": _safety_test_codes(),
        "replay": {0: "no e-stop-level violation replayed (NO TRIP under the rules given)",
                   1: "WOULD TRIP: the replayed rules found an e-stop-level violation (the first one is printed)",
                   2: "also: the recording is missing, empty, corrupt or has none of the safety rules' topics"},
        "release": {1: "the safety monitor was not released within --timeout (its last refusal is printed)"},
        "demo": {1: "a step (train or the deploy check) failed; its own code is returned"},
        "experiment sawyer-front": {3: "not every run finished in this sitting (--time-limit): run the same command "
                                       "again to resume"},
        "experiment shadow-front": {3: "not every run finished in this sitting (--time-limit) or a run failed "
                                       "(named on stdout): run the same command again to resume"},
        "bench safety": {1: "no trip was measured across processes (see the node logs)"},
        "bench soak": {1: "an unsafe command was forwarded or a fault reversal was seen during the soak"},
        "bench preference-live": {130: "interrupted before the episodes finished"},
    }


#: command → exit code → meaning (plain data for docs/reference/exit_codes.md).
EXIT_CODES: dict[str, dict[int, str]] = _table()


def codes_for(command: str) -> dict[int, str]:
    """Every code ``command`` can end with: the common ones, sharpened by its own."""
    return dict(sorted({**COMMON, **EXIT_CODES.get(command, {})}.items()))
