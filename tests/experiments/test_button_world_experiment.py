"""`morl-robot experiment button-world` through the real parser on a tiny budget."""
import json

import pytest

from morl_robot.cli import main

PAIR_KEYS = {"term-term", "once-once", "term-cycle", "once-cycle", "cycle-cycle"}


def test_button_world_exact_only_has_the_paper_state_counts(tmp_path):
    out = tmp_path / "bw"
    assert main(["experiment", "button-world", "--out", str(out), "--exact-only", "--no-progress",
                 "--pairs", "term-term", "once-once"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["product_states"] == {"term-term": 5, "once-once": 10}
    assert len(res["pairs"]["term-term"]["exact_front"]) == 2
    assert (out / "plots" / "morm_term-term.png").exists() and (out / "plots" / "front_once-once.png").exists()


def test_button_world_learns_with_and_without_crm_and_resumes(tmp_path, capsys):
    out = tmp_path / "bw"
    argv = ["experiment", "button-world", "--out", str(out), "--quick", "--steps", "400", "--eval-every", "200",
            "--pairs", "term-term", "--no-progress"]
    assert main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    entry = res["pairs"]["term-term"]
    for arm in ("without_crm", "with_crm"):
        seeds = entry[arm]["seeds"]
        assert [c["step"] for c in seeds[0]["curve"]] == [200, 400]
    assert "front_with_crm" in entry and "front_without_crm" in entry
    assert (out / "plots" / "learning_curves.png").exists()
    runs = sorted((out / "runs" / "term-term").rglob("*.json"))
    assert len(runs) == 4  # 2 arms x 2 ε settings x 1 seed
    stamps = [r.stat().st_mtime_ns for r in runs]
    assert main(argv) == 0  # finished runs are read back, not retrained
    assert [r.stat().st_mtime_ns for r in runs] == stamps
    assert "| term-term | 5 |" in capsys.readouterr().out


def test_button_world_rejects_unknown_pair(capsys):
    assert main(["experiment", "button-world", "--out", "/tmp/x", "--pairs", "term-never"]) == 2
    assert "--pairs: unknown pair 'term-never'" in capsys.readouterr().err


def test_committed_paper_budget_runs_are_the_readme_figures():
    """The finished runs of the 50 000-step sweep (results/button_world/runs/, what the README quotes
    and what the command resumes from): term-term without CRM, 3 seeds × 3 ε, each seed's front over
    its ε runs is the exact front {(γ⁹, 0), (0, γ⁹)}."""
    from pathlib import Path

    import numpy as np

    from morl_robot.experiments.button_world import Budget, exact_front

    runs = Path(__file__).resolve().parents[2] / "results" / "button_world" / "runs" / "term-term" / "plain"
    files = sorted(runs.glob("eps*_seed*.json"))
    assert len(files) == 9
    exact = {tuple(np.round(p, 6)) for p in exact_front("term-term")["front"]}
    budget = Budget()
    for seed in budget.seeds:
        finals = []
        for i, eps in enumerate(budget.epsilons):
            run = json.loads((runs / f"eps{i}_seed{seed}.json").read_text())
            assert run["steps"] == budget.steps and run["epsilons"] == list(eps) and run["updates"] == 6195
            finals.append(tuple(np.round(run["curve"][-1][1], 6)))
        assert set(finals) == exact


def test_committed_crm_runs_reach_the_front_before_the_runs_without():
    """The README's term-term comparison at 50 000 steps (3 seeds × 3 ε per arm): every CRM run sits on an exact
    front point from its first evaluation after learning starts (2 000 steps) to the end; every run
    without CRM first gets there at 4 000 steps or later."""
    from pathlib import Path

    import numpy as np

    from morl_robot.experiments.button_world import exact_front

    root = Path(__file__).resolve().parents[2] / "results" / "button_world" / "runs" / "term-term"
    exact = {tuple(np.round(p, 6)) for p in exact_front("term-term")["front"]}

    def first_exact(run: dict) -> int:
        return next(step for step, value in run["curve"] if tuple(np.round(value, 6)) in exact)

    crm = [json.loads(f.read_text()) for f in sorted((root / "crm").glob("eps*_seed*.json"))]
    plain = [json.loads(f.read_text()) for f in sorted((root / "plain").glob("eps*_seed*.json"))]
    assert len(crm) == 9 and all(r["crm"] and r["updates"] == 30945 for r in crm)
    for seed in (0, 1, 2):  # each seed's CRM runs together give the exact front, as without CRM
        assert {tuple(np.round(r["curve"][-1][1], 6)) for r in crm if r["seed"] == seed} == exact
    for run in crm:
        assert first_exact(run) == 2000
        assert all(tuple(np.round(v, 6)) in exact for s, v in run["curve"] if s >= 2000)
    assert min(first_exact(r) for r in plain) >= 4000


@pytest.mark.extended  # make test-extended: an experiment's sittings, 26 s
def test_button_world_finished_only_summarises_cached_runs_without_training(tmp_path, capsys):
    """A sweep over several sittings: --finished-only trains nothing, counts a seed only when all
    its ε runs are finished, and names the missing runs."""
    out = tmp_path / "bw"
    base = ["experiment", "button-world", "--out", str(out), "--quick", "--steps", "200", "--eval-every", "200",
            "--pairs", "term-term", "--no-progress"]
    assert main(base) == 0  # seed 0: 2 arms x 2 ε
    capsys.readouterr()
    (out / "runs" / "term-term" / "crm" / "eps1_seed0.json").unlink()
    assert main(base + ["--seeds", "0", "1", "--finished-only"]) == 0
    printed = capsys.readouterr().out
    assert not (out / "runs" / "term-term" / "crm" / "eps1_seed0.json").exists()  # nothing retrained
    assert not list((out / "runs").rglob("*seed1.json"))
    entry = json.loads((out / "results.json").read_text())["pairs"]["term-term"]
    assert sorted(entry["missing_runs"]) == ["crm/eps0_seed1", "crm/eps1_seed0", "crm/eps1_seed1",
                                             "plain/eps0_seed1", "plain/eps1_seed1"]
    assert [s["seed"] for s in entry["without_crm"]["seeds"]] == [0]
    assert entry["with_crm"]["seeds"] == []  # seed 0 has one of its two CRM runs: not a front
    assert "term-term: 5 runs not finished yet" in printed
    assert "| 1 / 0 |" in printed
    assert main(base + ["--exact-only", "--finished-only"]) == 2
    capsys.readouterr()
    # a corrupt cached run is named, not a traceback, and counts as missing
    (out / "runs" / "term-term" / "plain" / "eps0_seed0.json").write_text("{not json")
    assert main(base + ["--finished-only"]) == 0
    printed = capsys.readouterr().out
    assert "plain/eps0_seed0 exists but was not counted: unreadable (JSONDecodeError" in printed
    entry = json.loads((out / "results.json").read_text())["pairs"]["term-term"]
    assert "plain/eps0_seed0" in entry["missing_runs"] and entry["without_crm"]["seeds"] == []
    # another budget matches nothing: refused, and the summary already written is kept
    before = (out / "results.json").read_bytes()
    assert main(base + ["--steps", "300", "--finished-only"]) == 2
    assert "no run in" in capsys.readouterr().err
    assert (out / "results.json").read_bytes() == before
    # nor when a later pair is summarised first: nothing is written until the end
    assert main(base + ["--steps", "300", "--finished-only", "--pairs", "term-term", "term-cycle"]) == 2
    assert (out / "results.json").read_bytes() == before


def test_committed_results_crm_learns_faster_on_every_pair():
    """The README's 50 000-step table (results/button_world/results.json, assembled with --finished-only
    from the committed runs): on every variant pair and every complete seed, MO-MPO + CRM reaches 99 % of
    the EUM MO-MPO without CRM ends at by 3 000 environment steps; without CRM no seed gets within 1 %
    of its own final EUM before 5 000; CRM's EUM area (mean over training / exact) is larger."""
    from pathlib import Path

    res = json.loads((Path(__file__).resolve().parents[2] / "results" / "button_world" / "results.json").read_text())
    assert set(res["pairs"]) == PAIR_KEYS and res["budget"]["steps"] == 50_000

    def first_at(seed: dict, level: float) -> int:
        return next(c["step"] for c in seed["curve"] if c["eum"] >= 0.99 * level)

    for pair, entry in res["pairs"].items():
        crm, plain = entry["with_crm"]["seeds"], entry["without_crm"]["seeds"]
        # the whole sweep: 3 seeds per arm, nothing missing, nothing at another budget
        assert [s["seed"] for s in crm] == [s["seed"] for s in plain] == [0, 1, 2], pair
        assert entry["missing_runs"] == [] and entry["mismatched_runs"] == {}, pair
        level = max(p["final_eum"] for p in plain)
        assert all(first_at(s, level) <= 3000 for s in crm), pair
        assert all(first_at(s, s["final_eum"]) >= 5000 for s in plain), pair
        assert entry["with_crm"]["eum_auc_ratio_median"] > entry["without_crm"]["eum_auc_ratio_median"], pair
