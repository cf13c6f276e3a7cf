"""Why-texts say something true and specific: a fraction of a token is no token, and a refill
under a second away is not "in 0s"."""

from __future__ import annotations

from engine.introspect.why import _in, _tokens_sentence


def test_a_fraction_of_a_token_reads_as_no_whole_token_and_never_refills_in_0s() -> None:
    text = _tokens_sentence("smtp", 0.01, _in(0.4))
    assert "no whole token left" in text and "in under a second" in text and "0s" not in text


def test_whole_tokens_read_as_whole_tokens() -> None:
    assert "has 3 tokens left" in _tokens_sentence("smtp", 3.7, _in(12))
    assert "in 12s" in _tokens_sentence("smtp", 3.7, _in(12))
