"""One-time warnings keep each caller's keys apart."""

from __future__ import annotations

from rljax.utils import once


def test_each_group_says_a_key_once_and_groups_do_not_share_keys(monkeypatch):
    monkeypatch.setitem(once.SAID, "first", set())
    monkeypatch.setitem(once.SAID, "second", set())
    assert once.first_time("first", "lr") is True
    assert once.first_time("first", "lr") is False  # said already
    assert once.first_time("second", "lr") is True  # another caller's "lr"
    assert once.SAID["first"] == once.SAID["second"] == {"lr"}
