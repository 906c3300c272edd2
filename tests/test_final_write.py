"""The learner's final write (at total_steps, SIGINT or launch's SIGTERM; issue 41): one ONNX export
serves the final snapshot, its kept copy and policy.onnx, so the write fits launch's shutdown window
(launch/*.launch.py give the learner 30 s: tests/test_launch_paths.py)."""


def test_finish_exports_the_final_policy_once_for_every_artefact(tmp_path, monkeypatch):
    from morl_robot.serving import export
    from morl_robot.training.session import session_for_task

    run = tmp_path / "run"
    session = session_for_task("sawyer_peg_in_hole", None, "mo_mpo_cpu_small", run_dir=run,
                               log=lambda level, message: None)
    session.start()
    session.publish_policy()
    session.learner.num_updates += 1  # the weights changed since: the final checkpoint makes a new version
    calls = []
    real = export.export_policy
    monkeypatch.setattr(export, "export_policy", lambda *a, **k: calls.append(1) or real(*a, **k))
    session.finish("shutdown")
    session.close()
    assert len(calls) == 1
    kept = max((run / "snapshots").glob("policy_*.onnx"))
    assert (run / "policy.onnx").read_bytes() == kept.read_bytes()
    from morl_robot.serving.runtime import OnnxPolicy

    policy = OnnxPolicy.from_file(run / "policy.onnx")
    assert policy.version == 2  # the final checkpoint's version
    session.publish_policy()  # after finish, exports are fresh again (no memo outlives the final write)
    assert len(calls) == 2
