"""Package layout: ament_python metadata, share files, console scripts, CI entry."""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_package_xml_format3_ament_python():
    tree = ET.parse(ROOT / "package.xml").getroot()
    assert tree.tag == "package" and tree.get("format") == "3"
    assert tree.findtext("name") == "morl_robot"
    assert tree.find("export/build_type").text == "ament_python"
    deps = {e.text for e in tree.findall("exec_depend")}
    for dep in ("rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "std_srvs", "diagnostic_msgs", "trajectory_msgs"):
        assert dep in deps
    assert (ROOT / "resource" / "morl_robot").exists()


def _setup_kwargs(monkeypatch):
    """Run setup.py with setuptools.setup captured (nothing is built)."""
    import runpy

    import setuptools

    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    return captured


def test_setup_installs_share_trees(monkeypatch):
    kw = _setup_kwargs(monkeypatch)
    installed = {f for _, files in kw["data_files"] for f in files}
    for folder in ("sim", "config", "launch"):
        on_disk = {str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*") if p.is_file()}
        assert on_disk <= installed, f"{folder}/ files missing from data_files: {sorted(on_disk - installed)}"
    targets = {t for t, _ in kw["data_files"]}
    assert "share/ament_index/resource_index/packages" in targets
    assert any(t.startswith("share/morl_robot/sim/") for t in targets)


def test_console_script_points_at_cli(monkeypatch):
    kw = _setup_kwargs(monkeypatch)
    assert "morl-robot = morl_robot.cli:main" in kw["entry_points"]["console_scripts"]
    assert "torch==2.13.0" in kw["install_requires"]


def test_ci_runs_make_test():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


def test_core_does_not_import_rclpy():
    offenders = []
    for path in (ROOT / "morl_robot").rglob("*.py"):
        rel = path.relative_to(ROOT / "morl_robot")
        if rel.parts[0] in ("nodes", "cli"):
            continue
        if re.search(r"^\s*(import rclpy|from rclpy)", path.read_text(), re.MULTILINE):
            offenders.append(str(rel))
    assert not offenders
