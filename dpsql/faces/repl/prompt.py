"""The prompt_toolkit session: key bindings, history file, style."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, get_common_complete_suffix
from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.filters import Condition, completion_is_selected
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.styles import Style

from dpsql.faces.repl import statements
from dpsql.faces.repl.completion import SqlCompleter
from dpsql.faces.repl.lexer import DpsqlLexer
from dpsql.home import home

PROMPT = "dpsql> "

if TYPE_CHECKING:
    from dpsql.session import Session


class PromptOwner(Protocol):
    """What the prompt needs of the REPL it serves (:class:`dpsql.faces.repl.app.Repl` is one): the
    session, for completion, and the bottom toolbar. A protocol, so this module imports no loop."""

    session: Session

    def toolbar(self) -> str: ...

STYLE = Style.from_dict({
    "meta-command": "ansicyan bold",
    "bottom-toolbar": "noreverse bg:ansibrightblack fg:ansiwhite",
    "continuation": "ansibrightblack",
})


class _Guarded(Completer):
    """A completer that offers nothing when the one it wraps fails. Inside prompt_toolkit's
    application an exception goes to its own handler, which waits for ENTER instead of showing
    the prompt (a hang with a pipe as input): a completion is a convenience, never worth that."""

    def __init__(self, inner: Completer) -> None:
        self.inner = inner

    def get_completions(self, document: Any, complete_event: CompleteEvent) -> Iterator[Completion]:
        try:
            yield from list(self.inner.get_completions(document, complete_event))
        except Exception:  # noqa: BLE001 - see the class docstring; the completer reads only the policy
            return


def history_file() -> History:
    """The history file in dpsql's home; in memory when that directory cannot be written."""
    try:
        home().mkdir(parents=True, exist_ok=True)
        path = home() / "history"
        path.touch()
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


def key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("tab")
    def _complete(event: Any) -> None:
        """Tab: the completion when there is one, else the common part, else the menu; Tab again
        moves through the menu. Computed at once (the completer only reads the policy), so typing
        ahead after Tab never races the completion."""
        b = event.current_buffer
        if b.complete_state:
            b.complete_next()
            return
        if b.completer is None:
            return
        found = list(b.completer.get_completions(b.document, CompleteEvent(completion_requested=True)))
        common = get_common_complete_suffix(b.document, found) if found else ""
        if len(found) == 1:
            b.apply_completion(found[0])
        elif common:
            b.insert_text(common)
        elif found:
            b.start_completion()  # the menu (asynchronous is fine: the user reads it)

    @kb.add("enter", filter=completion_is_selected)
    def _take_completion(event: Any) -> None:
        """Enter on a highlighted completion takes it (and neither runs the line nor breaks it)."""
        event.current_buffer.complete_state = None

    return kb


def _continuation(width: int, line_number: int, wrap_count: int) -> list[tuple[str, str]]:
    """``...>`` before each new line of the input; spaces before the rest of a line too long for
    the screen (the marker would say a newline was typed where there is none)."""
    return [("class:continuation", ("...> " if not wrap_count else "").rjust(width))]


def _typed() -> str:
    """The text of the input being typed (the default buffer), whichever buffer has the focus."""
    buffer = get_app().layout.get_buffer_by_name(DEFAULT_BUFFER)
    return buffer.text if buffer is not None else ""


def make_session(repl: PromptOwner, *, input: Any = None, output: Any = None,
                 history: History | None = None) -> PromptSession[str]:
    # Enter inserts a newline until the input is complete (ends with ; or is a meta-command).
    # The input is the default buffer's text, not the current buffer's: during Ctrl-R the current
    # buffer is the search string, and reading it flipped the layout to multi-line mid-search,
    # which hid the search prompt and its match.
    incomplete = Condition(lambda: not statements.is_complete(_typed()))
    return PromptSession(
        message=PROMPT,
        prompt_continuation=_continuation,
        multiline=incomplete,
        lexer=DpsqlLexer(),
        completer=_Guarded(SqlCompleter(repl.session)),
        complete_while_typing=True,
        history=history if history is not None else history_file(),
        bottom_toolbar=repl.toolbar,
        key_bindings=key_bindings(),
        style=STYLE,
        enable_suspend=True,
        enable_open_in_editor=True,  # Ctrl-X Ctrl-E, as in bash: the input in $VISUAL / $EDITOR
        input=input,
        output=output,
    )
