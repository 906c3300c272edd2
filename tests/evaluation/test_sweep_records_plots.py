"""Sweep runner (2 spawned processes), atomic JSON, plots."""
from __future__ import annotations

import json
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from morl_robot.evaluation import Setting, run_sweep
from morl_robot.evaluation.plots import (
    plot_action_probabilities,
    plot_learning_curves,
    plot_pareto_fronts,
)
from morl_robot.records import write_json_atomic


def trivial_returns(setting: Setting) -> np.ndarray:
    """Module-level (picklable): a point on the line x + y = 1, or an error for 'bad'."""
    if setting.name == "bad":
        raise RuntimeError("boom")
    w = float(setting.params["w"])
    import torch

    return np.array([w, 1.0 - w]) * (1.0 if torch.get_num_threads() == 1 else np.nan)


def test_run_sweep_two_processes(tmp_path: Path) -> None:
    settings = [Setting(name=f"w={w}", params={"w": w}, seed=i) for i, w in enumerate([0.0, 0.25, 0.5, 0.5])]
    settings.append(Setting(name="bad", params={"w": 0.0}))
    out = tmp_path / "sweep.json"
    result = run_sweep(settings, trivial_returns, processes=2, ref=[-1.0, -1.0], out_path=out, progress=False)
    assert result.processes == 2
    assert len(result.records) == 5
    failures = [r for r in result.records if not r.ok]
    assert len(failures) == 1 and "boom" in failures[0].error
    # Each return vector is kept with the setting that produced it.
    for rec in result.ok_records:
        np.testing.assert_allclose(rec.returns, [rec.setting.params["w"], 1 - rec.setting.params["w"]])
    assert len(result.front) == 3
    dup = [group for group in result.front_settings if len(group) == 2]
    assert len(dup) == 1 and {s.seed for s in dup[0]} == {2, 3}
    # Union of boxes from (−1, −1): x + y = 1 staircase at 0, .25, .5 -> 1.5·2... computed exactly:
    assert result.hypervolume == pytest.approx(1.0 * 2.0 + 0.25 * 1.75 + 0.25 * 1.5)
    data = json.loads(out.read_text())
    assert data["failures"] == 1 and len(data["records"]) == 5 and data["not_run"] == []
    assert data["hypervolume"] == pytest.approx(result.hypervolume)


def test_run_sweep_inline_and_time_limit(tmp_path: Path) -> None:
    settings = [Setting(name=str(w), params={"w": w}) for w in (0.1, 0.9)]
    result = run_sweep(settings, trivial_returns, processes=1, ref=[0.0, 0.0], progress=False)
    assert len(result.ok_records) == 2
    cut = run_sweep(settings, trivial_returns, processes=1, time_limit_s=0.0, progress=False)
    assert cut.records == [] and len(cut.not_run) == 2 and cut.hypervolume is None


def test_a_resumed_sweep_reports_every_sittings_wall_time(tmp_path: Path) -> None:
    """A sweep run in sittings (the fronts resume from their progress file: ``resumes``) adds them up;
    a progress file from before sittings were recorded counts as one sitting; an unreadable one is
    named and left as it was."""
    from morl_robot.errors import ConfigError

    settings = [Setting(name=str(w), params={"w": w}) for w in (0.1, 0.9)]
    out = tmp_path / "sweep_progress.json"
    write_json_atomic(out, {"wall_time_s": 100.0, "records": []})  # an earlier sitting, older format
    first = run_sweep(settings, trivial_returns, processes=1, out_path=out, progress=False, resumes=True)
    assert first.earlier_sittings_s == [100.0]
    assert first.total_wall_time_s == pytest.approx(100.0 + first.wall_time_s)
    second = run_sweep(settings[:1], trivial_returns, processes=1, out_path=out, progress=False, resumes=True)
    data = json.loads(out.read_text())
    assert data["sittings_wall_time_s"] == pytest.approx([100.0, first.wall_time_s, second.wall_time_s])
    assert data["total_wall_time_s"] == pytest.approx(sum(data["sittings_wall_time_s"]))
    assert second.total_wall_time_s > 100.0 + first.wall_time_s
    out.write_text('{"wall_time_s": ')
    with pytest.raises(ConfigError, match="sweep_progress.json: not a readable sweep progress file"):
        run_sweep(settings, trivial_returns, processes=1, out_path=out, progress=False, resumes=True)
    assert out.read_text() == '{"wall_time_s": '
    # a sweep that does not resume (Deep Sea Treasure reruns every setting) starts its timing afresh
    fresh = run_sweep(settings[:1], trivial_returns, processes=1, out_path=out, progress=False)
    assert fresh.earlier_sittings_s == []
    assert json.loads(out.read_text())["sittings_wall_time_s"] == pytest.approx([fresh.wall_time_s])


def test_a_sweep_keeps_what_earlier_sittings_finished(tmp_path: Path) -> None:
    """``keep_finished``: a later sitting reruns only failed and new settings (a setting is the same
    when name, params and seed are), keeps the rest with their returns and extras, and refuses a
    progress file made with another budget (``meta``) without touching it."""
    from morl_robot.errors import ConfigError

    calls: list[str] = []

    def fn(setting: Setting):
        calls.append(f"{setting.name}/{setting.seed}")
        return trivial_returns(setting), {"converged_at": 7}

    a, bad, b = (Setting(name="a", params={"w": 0.1}), Setting(name="bad", params={"w": 0.5}),
                 Setting(name="b", params={"w": 0.9}))
    out = tmp_path / "sweep.json"
    meta = {"steps_per_run": 100, "learner_changes": {}}
    first = run_sweep([a, bad], fn, processes=1, out_path=out, progress=False, keep_finished=True, meta=meta)
    assert calls == ["a/0", "bad/0"] and first.kept == 0 and len(first.ok_records) == 1
    calls.clear()
    a_reseeded = Setting(name="a", params={"w": 0.1}, seed=1)
    second = run_sweep([a, bad, b, a_reseeded], fn, processes=1, out_path=out, progress=False,
                       keep_finished=True, meta=dict(meta))
    assert calls == ["bad/0", "b/0", "a/1"]  # a (seed 0) kept; the failure, the new and the reseeded run
    assert second.kept == 1 and len(second.records) == 4
    kept = next(r for r in second.records if r.setting == a)
    assert kept.returns.tolist() == [0.1, 0.9] and kept.extras == {"converged_at": 7}
    assert kept.seconds == first.records[0].seconds
    data = json.loads(out.read_text())
    assert data["meta"] == meta and data["kept_from_earlier_sittings"] == 1
    assert len(data["sittings_wall_time_s"]) == 2  # keeping implies resumed timing
    before = out.read_text()
    with pytest.raises(ConfigError, match=r"sweep.json was run with other settings \(steps_per_run differ"):
        run_sweep([a], fn, processes=1, out_path=out, progress=False, keep_finished=True,
                  meta={"steps_per_run": 200, "learner_changes": {}})
    assert out.read_text() == before
    # a sitting over fewer settings keeps the others' records in the file for a later sitting
    calls.clear()
    only_b = run_sweep([b], fn, processes=1, out_path=out, progress=False, keep_finished=True, meta=meta)
    assert calls == [] and only_b.kept == 1 and len(only_b.records) == 1
    assert {r["setting"]["name"] for r in json.loads(out.read_text())["records_of_other_settings"]} == {"a"}
    again = run_sweep([a, b, a_reseeded], fn, processes=1, out_path=out, progress=False, keep_finished=True,
                      meta=meta)
    assert calls == [] and again.kept == 3
    calls.clear()
    everything = run_sweep([a], fn, processes=1, out_path=out, progress=False)  # without it: run again
    assert calls == ["a/0"] and everything.kept == 0


def test_write_json_atomic(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.json"
    write_json_atomic(path, {"a": np.arange(3), "b": np.float32(0.5), "c": float("nan"), "d": (1, 2)})
    assert json.loads(path.read_text()) == {"a": [0, 1, 2], "b": 0.5, "c": None, "d": [1, 2]}
    # A failing write leaves the old file intact and no temp file behind.
    with mock.patch("os.replace", side_effect=OSError("disk full")), pytest.raises(OSError):
        write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text())["a"] == [0, 1, 2]
    assert os.listdir(path.parent) == ["results.json"]


def test_plots(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    p2 = plot_pareto_fronts({"a": rng.random((20, 2)), "b": rng.random((5, 2))}, tmp_path / "f2.png",
                            ref=[0, 0], true_front=[[1, 0], [0, 1]], objective_names=["x", "y"])
    p3 = plot_pareto_fronts({"a": rng.random((20, 3))}, tmp_path / "f3.png", ref=[0, 0, 0])
    csv_path = tmp_path / "metrics.csv"
    csv_path.write_text("env_steps,return_task,return_pain,loss\n0,1,2,0.1\n10,,3,0.2\n20,3,4,0.3\n")
    p4 = plot_learning_curves(csv_path, tmp_path / "curves.png")
    p5 = plot_action_probabilities({"equal": {"left": 0.2, "up": 0.6, "right": 0.2}}, tmp_path / "bars.png")
    for p in (p2, p3, p4, p5):
        assert p.exists() and p.stat().st_size > 1000
        assert p.read_bytes()[:4] == b"\x89PNG"
