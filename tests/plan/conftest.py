"""Helpers of the plan tests."""

from __future__ import annotations

import threading

import py4j.clientserver as clientserver


def round_trips(monkeypatch) -> list:
    """The Py4J commands this thread sends from now on (not the releaser's batches),
    as a list that grows while the patch holds."""
    sent: list = []
    send = clientserver.ClientServerConnection.send_command
    main = threading.current_thread()

    def counting(self, command):
        if threading.current_thread() is main:
            sent.append(command)
        return send(self, command)

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", counting)
    return sent
