"""`jobsctl retry|cancel|discard --all` asks before it changes anything and changes what its dry
run counted: Enter alone at the question is a no; a job dead while the question was open stays dead
(with and without --children); `--tenant` holds the dry run and the action to that tenant's jobs;
`--rate` paces a retry with --children too."""

from __future__ import annotations

import json

import pytest

from engine.actions import Operator
from engine.types import JobState
from tests.engine.test_cli_introspect import cli, seed


def _dead(pg_dsn: str) -> list[str]:
    r = cli("ls", "--filter", "state=dead", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 0, r.output
    return [j["id"] for j in json.loads(r.stdout)["items"]]


@pytest.mark.parametrize("verb", ["retry", "discard"])
def test_pressing_enter_alone_at_a_bulk_confirmation_is_a_no_and_changes_nothing(pg_dsn: str, verb: str) -> None:
    jobs = seed(pg_dsn, JobState.DEAD, JobState.DEAD, tenant="acme")
    r = cli(verb, "--all", "--filter", "tenant=acme", "--dsn", pg_dsn, input="\n")
    assert r.exit_code == 5, r.output
    assert "not confirmed; nothing changed" in r.stderr
    assert sorted(_dead(pg_dsn)) == sorted(j.id for j in jobs)


@pytest.mark.parametrize("children", [False, True], ids=["plain", "children"])
def test_a_job_dead_while_the_bulk_retry_question_was_open_stays_dead(
    pg_dsn: str, children: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = seed(pg_dsn, JobState.DEAD, JobState.DEAD, tenant="acme")
    late: list[str] = []

    def answer_yes_after_one_more_dies(question: str) -> bool:
        assert question.startswith("retry 2 jobs")
        late.extend(j.id for j in seed(pg_dsn, JobState.DEAD, tenant="acme"))
        return True

    monkeypatch.setattr("engine.cli.ops.confirmed", answer_yes_after_one_more_dies)
    r = cli("retry", "--all", *(["--children"] if children else []), "--filter", "tenant=acme", "--dsn", pg_dsn)
    assert r.exit_code == 0, r.output
    assert len(late) == 1 and _dead(pg_dsn) == late  # the two counted ran again; the late one did not
    assert not {j.id for j in counted} & set(_dead(pg_dsn))


def test_rate_paces_a_bulk_retry_with_children(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(pg_dsn, JobState.DEAD, tenant="acme")
    asked: list[float | None] = []
    each = Operator.retry_all_with_children

    def paced(self: Operator, where=None, **kw):  # type: ignore[no-untyped-def]
        asked.append(kw.get("per_second"))
        return each(self, where, **kw)

    monkeypatch.setattr(Operator, "retry_all_with_children", paced)
    args = ("retry", "--all", "--children", "--filter", "tenant=acme", "--rate", "40", "--yes", "--dsn", pg_dsn)
    r = cli(*args)
    assert r.exit_code == 0, r.output
    assert asked == [40.0] and _dead(pg_dsn) == []


@pytest.mark.parametrize("verb", ["retry", "cancel", "discard"])
def test_a_bulk_with_a_tenant_counts_and_changes_that_tenants_jobs_only(pg_dsn: str, verb: str) -> None:
    state = JobState.READY if verb == "cancel" else JobState.DEAD
    seed(pg_dsn, state, tenant="acme")
    (theirs,) = seed(pg_dsn, state, tenant="globex")
    r = cli(verb, "--all", "--tenant", "acme", "--yes", "--dsn", pg_dsn)
    assert r.exit_code == 0, r.output
    assert f"dry run: {verb} 1 jobs matching tenant=acme" in r.stdout and f"{verb}: 1 changed" in r.stdout
    theirs_now = cli("ls", "--filter", "tenant=globex", "--dsn", pg_dsn, "--json")
    assert theirs_now.exit_code == 0, theirs_now.output
    assert [(j["id"], j["state"]) for j in json.loads(theirs_now.stdout)["items"]] == [(theirs.id, state.value)]
