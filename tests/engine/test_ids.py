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


def test_an_id_is_the_canonical_uuidv7_text_of_its_time() -> None:
    clock = FakeClock()
    ids = IdFactory(clock, seed=3)
    at = clock.now()
    for got in [ids.new(at) for _ in range(20)] + [ids.new() for _ in range(20)]:
        u = uuid.UUID(got)
        assert got == str(u) and u.version == 7 and u.variant == uuid.RFC_4122
        assert u.int >> 80 == int(at.timestamp() * 1000)  # the 48-bit unix-ms timestamp
