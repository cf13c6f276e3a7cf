"""What the screens' action mixins need of the screen they are mixed into, as protocols.

Flows and BulkFlows are mixed into data screens, BackfillFlows into the backfills screen; their
methods type ``self`` as one of these, which every screen they are mixed into satisfies
(mypy checks it wherever a mixin method is called on a screen).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.text import Text
    from textual.app import App
    from textual.message import Message
    from textual.notifications import SeverityLevel

    from console.screens.confirm import Confirmed
    from console.source import Source
    from engine.projections import JobSummary


# What a confirmed action runs: the operator's answer in, the summary said on screen out.
ActionCall = Callable[["Confirmed"], Awaitable[str]]


class ScreenHost(Protocol):
    """A console screen as its mixins use it: the app, the engine's source, messages and notices."""

    @property
    def app(self) -> App[Any]: ...

    @property
    def source(self) -> Source: ...

    @property
    def is_attached(self) -> bool: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def reload(self) -> None: ...


class FlowHost(ScreenHost, Protocol):
    """A data screen with Flows mixed in."""

    def navigate(self, kind: str, **args: object) -> None: ...

    def leave(self) -> None: ...

    def clear_marks(self) -> None: ...

    def confirm_and_run(
        self, title: str, body: Text | str, verb: str, call: ActionCall, *, note: bool = True
    ) -> object: ...

    async def confirm_then_run(
        self, title: str, body: Text | str, verb: str, call: ActionCall, *, note: bool = True
    ) -> None: ...

    async def children_or_say(self, job_id: str) -> list[JobSummary] | None: ...


class BackfillHost(ScreenHost, Protocol):
    """The backfills screen, with BackfillFlows mixed in."""

    def selected(self) -> Any: ...

    def _refused(self, title: str, err: Any) -> Awaitable[Any]: ...

    async def _run(self, title: str, call: Callable[[Confirmed], Awaitable[str]], c: Confirmed) -> None: ...

    async def _confirm(self, title: str, body: Text, verb: str, *, note: bool) -> Confirmed | None: ...
