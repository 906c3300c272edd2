"""`morl-robot demo`'s before/after table (`morl_robot.cli.demo._table`) shows the per-episode
peak-force distribution and the force rates next to the success rate; built here from real EVAL
objects of the protocol on a tiny budget (the end-to-end demo run is tests/test_demo.py)."""
import json
import math

import numpy as np

from morl_robot.cli.demo import _table
from morl_robot.evaluation.protocol import evaluate_policy, scripted_policy

FORCE_ROWS = ("peak force p50 (N)", "peak force p90 (N)", "peak force max (N)",
              "episodes above force threshold 30 N", "episodes at collision level 40 N")


def _rows(text):
    return {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in text.splitlines()[2:]}


def test_the_demo_table_shows_the_peak_force_distribution_next_to_the_success_rate():
    scripted = scripted_policy("sawyer_peg_in_hole")
    after = json.loads(json.dumps(evaluate_policy(scripted.act, scripted.task, 2, 10_000).to_json()))
    before = json.loads(json.dumps(evaluate_policy(lambda obs: np.array([0.0, 0.0, -1.0]), scripted.task, 2, 0,
                                                   safety=False).to_json()))  # presses down: above 30 N
    rows = _rows(_table(before, after))
    names = list(rows)
    assert names.index("success rate") < names.index(FORCE_ROWS[0]) and set(FORCE_ROWS) <= set(rows)
    for name in FORCE_ROWS[:3]:
        for cell in rows[name]:
            assert math.isfinite(float(cell.split()[0])), (name, cell)
    b, a = rows["episodes above force threshold 30 N"]
    assert b.startswith(f"{before['force']['threshold']['count']}/2 = ") and a.startswith("0/2 = 0 % [0, ")
    assert "peak contact force (N)" not in rows  # its value is the distribution's max


def test_the_demo_table_without_force_readings():
    ev = {"objectives": {"task": {"mean": 1.0, "ci_low": 0.5, "ci_high": 1.5}}, "success_rate": 0.5,
          "terminations": {"time_limit": 2}, "peak_force": None, "force": None}
    rows = _rows(_table(ev, ev))
    assert "success rate" in rows and not set(FORCE_ROWS) & set(rows)
