"""What `jobsctl retry | discard | cancel --all` say when the filter names a state the action does
not apply to: each fix is the next step for the jobs that filter names, with the operator's other
filter words kept (never a wider action over `state=dead` or `state=ready` alone, which would reach
every queue's jobs), and it is a line jobsctl parses. Jobs still to run need no retry: the fix is
their queue's why (ready and parked jobs with a queue named) or their list, never a cancel; a
discard of jobs still to run is a cancel of them; ended jobs are not dead letters, so a retry or a
discard is offered over the dead ones of the same filter; a cancel of ended jobs lists them.
A retry refused because a live job holds the key follows that live job (`jobsctl why`), which is
doing the work, instead of cancelling it, and so does a retry from a step of a job still to run.
A pace the API refuses names the API's argument; a filter given with a job's id, and `jobsctl dead`
given a live state, keep every word of the filter in their fix."""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from engine.actions.bulk import check_bulk_options
from engine.actions.jobs import checked_step_retry, key_held
from engine.cli import app
from engine.errors import JobsError
from engine.records import StepRetry
from engine.types import JobState

runner = CliRunner()
MEM = ["--dsn", "memory://"]


def _refusal(action: str, state: str) -> dict[str, str]:
    r = runner.invoke(app, [action, "--all", "-f", "queue=billing", "-f", f"state={state}", "--yes", "--json", *MEM])
    assert r.exit_code == 1, (r.exit_code, r.output)
    err: dict[str, str] = json.loads(r.stderr)["error"]
    assert err["code"] == "X_INVALID_STATE"
    return err


def _parses(fix: str) -> None:
    """The fix runs as jobsctl's own line: no usage error (exit 2), whatever the empty store answers."""
    words = shlex.split(fix)
    assert words[0] == "jobsctl"
    r = runner.invoke(app, [*words[1:], *MEM, *(["--yes"] if "--all" in words else [])])
    assert r.exit_code != 2, (fix, r.output)


@pytest.mark.parametrize("state", ["ready", "parked"])
def test_a_bulk_retry_of_waiting_jobs_of_one_queue_points_at_that_queues_why(state: str) -> None:
    err = _refusal("retry", state)
    assert err["fix"] == "jobsctl why billing"
    assert f"state={state}, jobs still to run: none needs a retry" in err["cause"]
    _parses(err["fix"])


@pytest.mark.parametrize("state", ["delayed", "suspended", "running"])
def test_a_bulk_retry_of_other_jobs_still_to_run_lists_them_with_the_same_filter(state: str) -> None:
    err = _refusal("retry", state)
    assert err["fix"] == f"jobsctl ls --filter queue=billing --filter state={state}"
    assert "cancel" not in err["fix"]
    _parses(err["fix"])


@pytest.mark.parametrize("action", ["retry", "discard"])
@pytest.mark.parametrize("state", ["completed", "cancelled"])
def test_a_bulk_retry_or_discard_of_ended_jobs_offers_the_dead_ones_of_the_same_filter(action: str, state: str) -> None:
    err = _refusal(action, state)
    assert err["fix"] == f"jobsctl {action} --all --filter queue=billing --filter state=dead"
    _parses(err["fix"])


@pytest.mark.parametrize("state", ["ready", "delayed", "parked", "suspended", "running"])
def test_a_bulk_discard_of_jobs_still_to_run_is_a_cancel_of_the_same_filter(state: str) -> None:
    err = _refusal("discard", state)
    assert err["fix"] == f"jobsctl cancel --all --filter queue=billing --filter state={state}"
    _parses(err["fix"])


@pytest.mark.parametrize("state", ["completed", "cancelled", "dead"])
def test_a_bulk_cancel_of_ended_jobs_lists_them_rather_than_cancelling_every_ready_job(state: str) -> None:
    err = _refusal("cancel", state)
    assert err["fix"] == f"jobsctl ls --filter queue=billing --filter state={state}"
    assert "nothing to cancel" in err["cause"]
    _parses(err["fix"])


def test_a_retry_refused_for_a_held_key_follows_the_live_job_doing_the_work() -> None:
    err = key_held("0190aaaa-0000-7000-8000-000000000001", "0190aaaa-0000-7000-8000-000000000002")
    assert err.fix == "jobsctl why 0190aaaa-0000-7000-8000-000000000002"
    assert "cancel 0190aaaa-0000-7000-8000-000000000002 first" in err.cause  # a choice, said, not the fix
    _parses(err.fix)


def test_a_bad_pace_given_to_the_api_is_answered_with_the_apis_argument_not_a_cli_flag() -> None:
    # jobsctl checks --rate itself before the dry run; this refusal reaches the API and the console.
    with pytest.raises(JobsError) as err:
        check_bulk_options(0)
    assert err.value.fix == "per_second=50"


@pytest.mark.parametrize(
    ("state", "fix"),
    [(JobState.READY, "why"), (JobState.RUNNING, "why"), (JobState.SUSPENDED, "why"), (JobState.CANCELLED, "show")],
)
def test_a_retry_from_a_step_of_a_job_still_to_run_points_at_why_as_a_plain_retry_does(
    state: JobState, fix: str
) -> None:
    jid = "0190aaaa-0000-7000-8000-000000000003"
    with pytest.raises(JobsError) as err:
        checked_step_retry(StepRetry(jid, "invalid-state", state=state, step="render"), tenant=None)
    assert err.value.fix == f"jobsctl {fix} {jid}"
    assert err.value.cause.startswith(f"job {jid} is {state.value}")


def test_a_filter_given_with_a_jobs_id_is_refused_with_every_filter_word_kept_in_the_bulk_fix() -> None:
    jid = "0190aaaa-0000-7000-8000-000000000004"
    r = runner.invoke(app, ["retry", jid, "-f", "queue=billing", "-f", "name=send mail", "--json", *MEM])
    assert r.exit_code == 1, r.output
    err = json.loads(r.stderr)["error"]
    assert err["fix"] == "jobsctl retry --all --filter queue=billing --filter 'name=send mail'"
    _parses(err["fix"])
    paced = runner.invoke(app, ["cancel", jid, "--rate", "5", "--json", *MEM])
    assert json.loads(paced.stderr)["error"]["fix"] == "jobsctl cancel --all --filter ... --rate 5"


def test_dead_given_a_live_state_lists_those_jobs_with_every_word_of_the_filter() -> None:
    r = runner.invoke(app, ["dead", "-f", "queue=billing", "-f", "state=ready", "--json", *MEM])
    assert r.exit_code == 1, r.output
    fix = json.loads(r.stderr)["error"]["fix"]
    assert fix == "jobsctl ls --filter queue=billing --filter state=ready"
    _parses(fix)
