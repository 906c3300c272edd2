"""Topics, message types, QoS, services and node parameters from ``morl_robot/nodes/wire.py``
and the node settings dataclasses (``morl_robot.node_settings.NODE_SETTINGS``)."""
from __future__ import annotations

from . import md, schema


def _qos_text(profile: object) -> str:
    def name(v: object) -> str:
        return getattr(v, "name", str(v)).lower()

    return (f"{name(profile.history)} {profile.depth}, {name(profile.reliability)}, "  # type: ignore[attr-defined]
            f"{name(profile.durability)}")  # type: ignore[attr-defined]


def render() -> str:
    from morl_robot.acting import experience
    from morl_robot.node_settings import NODE_SETTINGS
    from morl_robot.nodes import wire
    from morl_robot.reward_machines import columns

    notes = schema.module_comments(wire)
    parts = ["## Topics\n",
             ("Names are relative to the session's namespace (`/<namespace>`, per actor "
             "`/<namespace>/actor<i>`) unless they start with `/`; `~/` is the node's private namespace.\n"),
             md.table(("topic", "type", "QoS", "publisher", "content"),
                      [(md.code(t.name), md.code(t.type), md.code(t.qos), md.text(t.publisher), md.text(t.description))
                       for t in wire.TOPICS])]
    parts.append("## QoS profiles\n")
    profiles = sorted({t.qos for t in wire.TOPICS})
    parts.append(md.table(("profile", "history, reliability, durability", "why"),
                          [(md.code(p), md.text(_qos_text(getattr(wire, p))), md.text(notes.get(p, "")))
                           for p in profiles]))
    parts.append("## Services\n")
    parts.append(md.table(("service", "type", "what it does"),
                          [(md.code(n), md.code(t), md.text(d)) for n, t, d in wire.SERVICES]))
    parts.append("## Labelled arrays\n")
    layout = [p.replace("docs/reference/topics.md is generated from this module.", "").strip()
              for p in wire.__doc__.split("\n\n")[1:] if "README" not in p]
    parts.append(md.docstring("\n\n".join(layout)))
    exp_notes = schema.module_comments(experience)
    labels = [
        ("task_step header", wire.TASK_STEP_HEADER, notes.get("TASK_STEP_HEADER", "first labels of every task_step")),
        ("command step key", (wire.STEP_KEY_LABEL,), notes.get("STEP_KEY_LABEL", "")),
        ("command session", (wire.SESSION_LABEL,), notes.get("SESSION_LABEL", "")),
        ("experience_allowance", wire.ALLOWANCE_LABELS,
         f"then `{wire.ALLOWANCE_ACK_PREFIX}<actor id>`… " + notes.get("ALLOWANCE_ACK_PREFIX", "")),
        ("experience columns", experience.EXPERIENCE_COLUMNS, exp_notes.get("EXPERIENCE_COLUMNS", "")),
        ("reward-machine columns", (columns.ENV_TERMINATED,),
         f"then `{columns.LABEL_PREFIX}<proposition>`… " + schema.module_comments(columns).get("ENV_TERMINATED", "")),
    ]
    parts.append(md.table(("where", "labels", "meaning"),
                          [(md.text(w), ", ".join(md.code(x) for x in ls), md.text(d)) for w, ls, d in labels]))
    parts.append("## Node parameters\n")
    parts.append("Each node executable (`ros2 run morl_robot <node>`) takes these ROS parameters; a session "
                 "YAML sets them in the node's section (see [configuration files](configs.md)).\n")
    for node, cls in NODE_SETTINGS.items():
        doc = schema._doc_line(cls)
        parts.append(f"### `{node}`\n\n{md.text(doc)}\n\n{schema.render(cls)}")
    return "\n".join(parts)
