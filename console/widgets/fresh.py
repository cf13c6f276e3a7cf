"""Update a Static only when what it shows changed.

An update with the same content still costs a visualize, a layout pass and a repaint of the
widget; a refresh where most of a screen is unchanged (the usual case) then pays for all of it.
Rich ``Text`` compares by its plain text and spans, so an equal Text is an unchanged one.
"""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static


def update_changed(widget: Static, content: VisualType, *, layout: bool = True) -> bool:
    """Show ``content`` unless it is what the widget shows already; answer whether it changed."""
    if type(widget.content) is type(content) and widget.content == content:
        return False
    widget.update(content, layout=layout)
    return True
