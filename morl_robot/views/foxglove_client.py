"""A minimal Foxglove WebSocket client (subprotocol ``foxglove.sdk.v1``): what the Foxglove app does
to read a live view, for tests and for the dashboard frame (docs/howto/rviz_foxglove.md).

Protocol: the server sends ``serverInfo`` and ``advertise`` (JSON text frames); the client sends
``subscribe`` with its own subscription ids; the server sends binary frames ``0x01 | u32 subscription
id | u64 log time ns | payload``.  JSON channels are decoded; other encodings (the scene's protobuf
``foxglove.SceneUpdate``) are returned as bytes (:func:`decode_protobuf` decodes them with the
schema the advertisement carries).
"""
from __future__ import annotations

import base64
import json
import struct
import time
from dataclasses import dataclass, field
from typing import Any

SUBPROTOCOL = "foxglove.sdk.v1"


@dataclass
class Received:
    """What a client read: the advertised channels by topic and the messages per topic
    ((log time ns, payload) with JSON payloads decoded)."""

    server: dict[str, Any] = field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)


def read_live_view(url: str, seconds: float, topics: list[str] | None = None, connect_timeout: float = 30.0,
                   until: Any = None) -> Received:
    """Connect to ``url`` (retrying until ``connect_timeout``), subscribe to ``topics`` (None: every
    advertised one, as they are advertised) and read for ``seconds`` (or until ``until(received)``
    is true, or the server closes)."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    deadline = time.monotonic() + connect_timeout
    while True:
        try:
            ws = connect(url, subprotocols=[SUBPROTOCOL], open_timeout=5, max_size=None)  # type: ignore[list-item]
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    got = Received()
    by_sub: dict[int, str] = {}
    end = time.monotonic() + seconds
    with ws:
        while time.monotonic() < end and not (until is not None and until(got)):
            try:
                frame = ws.recv(timeout=0.2)
            except TimeoutError:
                continue
            except ConnectionClosed:  # the session ended: what was read is the answer
                break
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg.get("op") == "serverInfo":
                    got.server = msg
                elif msg.get("op") == "advertise":
                    subs = []
                    for ch in msg["channels"]:
                        got.channels[ch["topic"]] = ch
                        if topics is None or ch["topic"] in topics:
                            sid = len(by_sub) + 1
                            by_sub[sid] = ch["topic"]
                            subs.append({"id": sid, "channelId": ch["id"]})
                    if subs:
                        ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))
                continue
            if frame[0] != 0x01:
                continue
            sid, log_time = struct.unpack_from("<IQ", frame, 1)
            topic = by_sub.get(sid)
            if topic is None:
                continue
            payload: Any = bytes(frame[13:])
            if got.channels[topic].get("encoding") == "json":
                payload = json.loads(payload)
            got.messages.setdefault(topic, []).append((log_time, payload))
    return got


def decode_protobuf(channel: dict[str, Any], data: bytes) -> Any:
    """A protobuf message of ``channel`` (its ``schemaName`` and base64 FileDescriptorSet ``schema``)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))
    return cls.FromString(data)
