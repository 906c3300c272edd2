"""`morl-robot rm inspect` through the real parser."""
import json

from morl_robot.cli import main


def test_rm_inspect_prints_counts_and_writes_diagrams(tmp_path, capsys):
    dot, png = tmp_path / "tt.dot", tmp_path / "tt.png"
    assert main(["rm", "inspect", "button_world/abb_term", "button_world/baa_term", "--dot", str(dot),
                 "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "7 reachable (5 non-terminal, 2 terminal) of 16 in the full product" in out
    assert dot.read_text().startswith("digraph MORM") and "doublecircle" in dot.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rm_inspect_json(capsys):
    assert main(["rm", "inspect", "button_world/abb_cycle", "button_world/baa_cycle", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["objectives"] == ["abb_cycle", "baa_cycle"] and info["nonterminal_states"] == info["product_states"]


def test_rm_inspect_bad_machine_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\npropositions: [a]\ninitial: u0\nstates:\n  u0: [{guard: a, to: u0}]\n")
    assert main(["rm", "inspect", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "state 'u0': guards are not exhaustive: none holds on {}" in err and "bad.yaml" in err
