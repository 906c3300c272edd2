"""The text drawn on each video frame: what the episode has earned so far (per-objective return,
by name), the contact force (N), the active preference (ε of a conditioned policy), the safety
events (the step's, then the newest one held on screen with its time), episode, step and time."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

#: colours (RGB): text, the box behind it, a safety event
TEXT, BOX, ALERT = (255, 255, 255), (0, 0, 0), (255, 80, 60)


@dataclass
class OverlayState:
    """What one frame says.  ``returns``: (name, return so far) per objective; ``force``: N (None: no
    force sensor); ``preference``: text such as ``preference eps  task 0.1   wrist_force 0.01`` (None: not conditioned);
    ``events``: this step's safety events; ``last_event``: (time s, text) of the newest one."""

    title: str
    episode: str
    step: int
    time_s: float
    returns: tuple[tuple[str, float], ...] = ()
    force: float | None = None
    preference: str | None = None
    events: tuple[str, ...] = ()
    last_event: tuple[float, str] | None = None
    termination: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[tuple[str, tuple[int, int, int]]]:
        """The text lines with their colours, top first."""
        out = [(self.title, TEXT), (f"episode {self.episode}   step {self.step}   t = {self.time_s:5.2f} s", TEXT)]
        if self.returns:
            out.append(("return  " + "   ".join(f"{n} {v:+.2f}" for n, v in self.returns), TEXT))
        if self.force is not None:
            out.append((f"contact force {self.force:5.1f} N", TEXT))
        if self.preference:
            out.append((self.preference, TEXT))
        out += [(f"{k}: {v}", TEXT) for k, v in self.extra.items()]
        if self.events:
            out += [(f"SAFETY {e}", ALERT) for e in self.events]
        elif self.last_event is not None:
            out.append((f"last safety event at {self.last_event[0]:.2f} s: {self.last_event[1]}", ALERT))
        if self.termination:
            out.append((f"episode ended: {self.termination}", ALERT if self.termination == "safety" else TEXT))
        return out


@lru_cache(maxsize=8)
def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def draw_overlay(frame: np.ndarray, state: OverlayState) -> np.ndarray:
    """``frame`` (HxWx3 uint8) with ``state``'s lines on a translucent box at the top left."""
    from PIL import Image, ImageDraw

    h = frame.shape[0]
    size = max(8, h // 32)
    font = _font(size)
    img = Image.fromarray(frame)
    lines = state.lines()
    pad, gap = max(2, size // 3), max(1, size // 4)
    width = max(int(font.getlength(text)) for text, _ in lines) + 2 * pad
    height = len(lines) * (size + gap) + 2 * pad
    box = Image.new("RGBA", (min(width, img.width), min(height, img.height)), (*BOX, 150))
    img.paste(box, (0, 0), box)
    draw = ImageDraw.Draw(img)
    for i, (text, colour) in enumerate(lines):
        draw.text((pad, pad + i * (size + gap)), text, fill=colour, font=font)
    return np.asarray(img)
