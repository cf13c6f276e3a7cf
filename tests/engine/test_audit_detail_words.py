"""An audit entry's detail in the short words `jobsctl audit` and the console both say: the job's
name first whatever order the database kept the keys in, known keys in words, an option that is
off left out, another key as "key value", an id as its short form."""

from __future__ import annotations

from engine.audit import detail_words

ID = "01a25125-07db-7009-89b4-e1d028cd92fe"


def short(job_id: str) -> str:
    return job_id[-12:]


def test_the_jobs_name_comes_first_whatever_the_order_of_the_keys() -> None:
    assert detail_words({"from": "dead", "name": "charge_card", "queue": "billing"}, short) == [
        "charge_card",
        "was dead",
    ]


def test_known_keys_read_as_words_an_option_off_is_left_out_and_another_key_reads_as_key_and_value() -> None:
    words = detail_words(
        {"changed": 1240, "planned": 1250, "stopped": False, "write": True, "job_id": ID, "shard_of": ID, "seen": True},
        short,
    )
    assert words == [
        "1,240 changed",
        "of 1,250 planned",
        "a write pass",
        f"job {ID[-12:]}",
        f"shard of {ID[-12:]}",
        "seen",
    ]
