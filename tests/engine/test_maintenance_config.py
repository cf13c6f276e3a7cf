"""MaintenanceConfig's index and table upkeep settings and the rules that pick an index to rebuild
and a table to vacuum: a bad value is refused at declaration with X_INVALID_ARGUMENT, its cause
and a fix, and a setting that would do nothing is refused rather than ignored."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.records import IndexSize, TableRows
from engine.services.maintenance import REINDEX_MIN_BYTES, MaintenanceConfig, bloated, grown


def test_index_upkeep_defaults_to_a_check_every_ten_minutes_rebuilding_past_twice_the_baseline_and_16_mib() -> None:
    cfg = MaintenanceConfig()
    assert (cfg.reindex_interval, cfg.reindex_growth, cfg.reindex_min_bytes) == (600.0, 2.0, 16 * 1024 * 1024)
    assert MaintenanceConfig(reindex_interval=None).reindex_interval is None  # off


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"reindex_interval": 0}, "reindex_interval=0"),
        ({"reindex_interval": -5.0}, "reindex_interval=-5.0"),
        ({"reindex_interval": True}, "reindex_interval=True"),
        ({"reindex_interval": "600"}, "reindex_interval='600'"),
        ({"reindex_interval": math.inf}, "reindex_interval=inf"),
        ({"reindex_interval": math.nan}, "reindex_interval=nan"),
        ({"reindex_growth": math.inf}, "reindex_growth=inf"),
        ({"reindex_growth": 1.0}, "reindex_growth=1.0"),
        ({"reindex_growth": 0.5}, "reindex_growth=0.5"),
        ({"reindex_growth": False}, "reindex_growth=False"),
        ({"reindex_min_bytes": -1}, "reindex_min_bytes=-1"),
        ({"reindex_min_bytes": 1.5}, "reindex_min_bytes=1.5"),
        ({"reindex_min_bytes": True}, "reindex_min_bytes=True"),
        ({"reindex_interval": None, "reindex_growth": 3.0}, "reindex_growth=3.0"),
        ({"reindex_interval": None, "reindex_min_bytes": 1024}, "reindex_min_bytes=1024"),
    ],
)
def test_a_bad_index_upkeep_setting_is_refused_with_its_value_and_a_fix(options: dict[str, Any], named: str) -> None:
    with pytest.raises(JobsError) as caught:
        MaintenanceConfig(**options)
    assert caught.value.code == X_INVALID_ARGUMENT
    assert named in caught.value.cause
    assert caught.value.fix.startswith("MaintenanceConfig(")


def test_an_index_is_rebuilt_only_past_both_min_bytes_and_growth_times_its_baseline() -> None:
    mib = 1024 * 1024
    assert grown(IndexSize("jobs.i", 40 * mib, 10 * mib), growth=2.0, min_bytes=REINDEX_MIN_BYTES)
    assert not grown(IndexSize("jobs.i", 20 * mib, 10 * mib), growth=2.0, min_bytes=REINDEX_MIN_BYTES)  # x2 exactly
    assert not grown(IndexSize("jobs.i", 15 * mib, 1 * mib), growth=2.0, min_bytes=REINDEX_MIN_BYTES)  # small
    assert grown(IndexSize("jobs.i", 17 * mib, 1 * mib), growth=2.0, min_bytes=REINDEX_MIN_BYTES)


def test_table_upkeep_is_off_by_default_and_scales_a_threshold_by_a_fifth_of_the_live_rows() -> None:
    cfg = MaintenanceConfig()
    assert (cfg.vacuum_threshold, cfg.vacuum_scale_factor) == (None, 0.2)  # off: autovacuum's alone
    assert MaintenanceConfig(vacuum_threshold=10_000).vacuum_threshold == 10_000


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"vacuum_threshold": 0}, "vacuum_threshold=0"),
        ({"vacuum_threshold": -1}, "vacuum_threshold=-1"),
        ({"vacuum_threshold": 10.5}, "vacuum_threshold=10.5"),
        ({"vacuum_threshold": True}, "vacuum_threshold=True"),
        ({"vacuum_scale_factor": -0.1}, "vacuum_scale_factor=-0.1"),
        ({"vacuum_scale_factor": "0.2"}, "vacuum_scale_factor='0.2'"),
        ({"vacuum_threshold": None, "vacuum_scale_factor": 0.5}, "vacuum_scale_factor=0.5"),
    ],
)
def test_a_bad_table_upkeep_setting_is_refused_with_its_value_and_a_fix(options: dict[str, Any], named: str) -> None:
    with pytest.raises(JobsError) as caught:
        MaintenanceConfig(**options)
    assert caught.value.code == X_INVALID_ARGUMENT
    assert named in caught.value.cause
    assert caught.value.fix.startswith("MaintenanceConfig(")


def test_a_table_is_vacuumed_only_past_its_threshold_plus_its_share_of_live_rows() -> None:
    assert bloated(TableRows("jobs.job", 4_000, 10_801, True), threshold=10_000, scale=0.2)
    assert not bloated(TableRows("jobs.job", 4_000, 10_800, True), threshold=10_000, scale=0.2)  # exactly
    assert not bloated(TableRows("jobs.job", 1_000_000, 200_000, True), threshold=10_000, scale=0.2)
    assert bloated(TableRows("jobs.job", 1_000_000, 200_000, True), threshold=10_000, scale=0.0)
