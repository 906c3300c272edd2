"""The policy contract (``morl_robot/serving/contract.py``): ONNX inputs/outputs and metadata keys."""
from __future__ import annotations

import dataclasses

from . import md, schema


def render() -> str:
    from morl_robot.robots.spec import ControlMode
    from morl_robot.serving import contract as c
    from morl_robot.serving import runtime

    comments = schema.field_comments(c.PolicyContract)
    parts = ["## Model inputs and outputs\n",
             md.table(("name", "kind", "shape"), [
                 (md.code(runtime.INPUT), "input", md.text("[B, O]: the observation, O = len(observation_labels)")),
                 (md.code(runtime.PREFERENCE_INPUT), "input",
                  md.text("[B, K]: the preference ε, ε-conditioned policies only (contract key preferences)")),
                 *[(md.code(o), "output", md.text("[B, D], D = len(action_labels)")) for o in runtime.OUTPUTS],
             ])]
    parts.append("## Metadata keys\n")
    parts.append(f"Every key is a JSON-encoded string in the model's `metadata_props`, plus "
                 f"`contract_format` = {md.code(c.CONTRACT_FORMAT)}. *Must match*: the field must agree for a "
                 "new model to replace a running one (`~/reload`, policy snapshots).\n")
    rows = []
    for f in dataclasses.fields(c.PolicyContract):
        default, _ = schema._default(f)
        required = "required" if default == "required" else f"optional, default {default}"
        if f.name in c.OPTIONAL_FIELDS:
            required = "only when set"
        rows.append((md.code(f.name), md.text(c._FIELD_TYPES.get(f.name, "")), required,
                     "yes" if f.name in c.COMPATIBILITY_FIELDS else "", md.text(comments.get(f.name, ""))))
    parts.append(md.table(("key", "type", "presence", "must match", "meaning"), rows))
    parts.append("## Allowed values\n")
    parts.append(md.table(("key", "values"), [
        (md.code("control_mode"), ", ".join(md.code(m.value) for m in ControlMode)),
        (md.code("algorithm"), ", ".join(md.code(a) for a in c.ALGORITHMS)),
        (md.code("action_mode"), ", ".join(md.code(a) for a in c.ACTION_MODES)),
        (md.code("observation_normalizer"), ", ".join(md.code(a) for a in c.NORMALIZERS)),
    ]))
    parts.append("## `preferences`\n")
    parts.append(md.docstring(c.PreferenceInputs.__doc__ or "") + "\n" + schema.render(c.PreferenceInputs))
    parts.append("## `reward_machine`\n")
    parts.append(md.docstring(c.RewardMachineInputs.__doc__ or "") + "\n" + schema.render(c.RewardMachineInputs))
    return "\n".join(parts)
