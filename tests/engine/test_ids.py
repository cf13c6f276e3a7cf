"""Job ids: UUIDv7 from the clock, and random bits no two processes share."""

from __future__ import annotations

import os
import uuid

from engine.clock import FakeClock, SystemClock
from engine.ids import IdFactory


def _rand_b(value: str) -> int:
    return uuid.UUID(value).int & ((1 << 62) - 1)


def test_a_forked_child_mints_other_random_bits_than_its_parent() -> None:
    # The unseeded factory keeps a Mersenne Twister in memory: without the reseed at fork, parent
    # and child would draw the same bits next, and two web workers would mint the same id.
    ids = IdFactory(SystemClock())
    ids.new()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: mint one id, hand it over, leave without running pytest's teardown
        os.write(write, ids.new().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    assert _rand_b(child) != _rand_b(ids.new())


def test_a_seeded_factory_is_reproducible_and_time_ordered() -> None:
    a = IdFactory(FakeClock(), seed=7)
    b = IdFactory(FakeClock(), seed=7)
    first = [a.new() for _ in range(50)]
    assert first == [b.new() for _ in range(50)]
    assert first == sorted(first) and all(uuid.UUID(i).version == 7 for i in first)
