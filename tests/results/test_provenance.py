"""Every results file written records its command, code commit, date and machine."""
import json
import subprocess
from datetime import datetime

from morl_robot.cli import main
from morl_robot.evaluation.provenance import SOURCE_ROOT, provenance, write_results_json


def test_provenance_names_command_commit_date_machine():
    p = provenance(["evaluate", "results/demo/seed0/policy.onnx", "--out", "a b"])
    assert p["command"] == "morl-robot evaluate results/demo/seed0/policy.onnx --out 'a b'"
    head = subprocess.run(["git", "-C", str(SOURCE_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=False)
    if head.returncode == 0:
        assert p["commit"] == head.stdout.strip() and isinstance(p["dirty"], bool)
    else:
        assert p["commit"] is None and p["version"]
    assert datetime.fromisoformat(p["date"]).utcoffset().total_seconds() == 0
    assert {"hostname", "cpu", "cpu_count", "os", "python", "torch", "mujoco"} <= set(p["machine"])


def test_write_results_json_adds_the_block_and_leaves_the_data(tmp_path):
    data = {"score": 1.5}
    write_results_json(tmp_path / "results.json", data, argv=["experiment", "x"])
    written = json.loads((tmp_path / "results.json").read_text())
    assert data == {"score": 1.5} and written["score"] == 1.5
    assert written["provenance"]["command"] == "morl-robot experiment x"


def test_a_cli_experiment_records_the_command_it_ran(tmp_path, capsys):
    argv = ["experiment", "epic-gridworld", "--out", str(tmp_path)]
    assert main(argv) == 0
    prov = json.loads((tmp_path / "results.json").read_text())["provenance"]
    assert prov["command"] == "morl-robot " + " ".join(argv)
    assert "backfilled" not in prov


def committed_results() -> list:
    return sorted((SOURCE_ROOT / "results").rglob("results.json"))


def test_every_committed_results_json_records_its_provenance():
    assert len(committed_results()) >= 70
    for path in committed_results():
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or set(data) <= {"mo-mpo", "scalarized-mpo"}:
            continue  # simple-world's results.json is keyed by algorithm (its provenance is in runs.json)
        prov = data.get("provenance")
        assert prov, f"{path}: no provenance"
        assert {"command", "commit", "date", "machine"} <= set(prov), path
        assert prov["command"] == "not recorded" or prov["command"].split()[0] in ("morl-robot", "python"), path
        assert len(prov["commit"] or "") == 40 or prov.get("version"), path
        datetime.fromisoformat(prov["date"])
        if prov.get("backfilled"):  # commit and date of the git commit that last changed the file
            assert prov["machine"] == "not recorded", path
