"""``loopwright view``: the live viewer of the run store in a browser."""

from __future__ import annotations

import click

from .._errors import ConfigurationError
from ._options import EXIT_OK, db_option

__all__ = ["view_command"]


@click.command("view")
@db_option
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
    help="The port to listen on (0: any free port).",
)  # fmt: skip
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on. Another than this machine's own (127.0.0.1) needs "
    "--token too: anyone reaching the port could read your runs.",
)
@click.option(
    "--token",
    envvar="LOOPWRIGHT_VIEW_TOKEN",
    help="A secret every request must carry (the URL printed has it). Default: none on "
    "127.0.0.1. Also $LOOPWRIGHT_VIEW_TOKEN.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
def view_command(
    db: str | None, port: int, host: str, token: str | None, open_browser: bool
) -> int:
    """See your runs in a browser: runs and evals, conversations, transcripts, live.

    Serves a page over the run store on this machine (until Ctrl-C) and prints its URL.
    Only the run store named is read, and nothing is written to it. Needs the `viewer`
    extra: pip install 'loopwright[viewer]'.
    """
    from ..log._db import resolve_db

    try:
        from ..viewer import LOCAL_HOSTS, serve
    except ImportError as ex:  # starlette or uvicorn missing
        raise ConfigurationError(
            f"loopwright view needs the viewer extra ({ex.name} is missing): "
            "pip install 'loopwright[viewer]'"
        ) from ex
    if host not in LOCAL_HOSTS and not token:
        raise ConfigurationError(
            f"listening on {host} needs --token SECRET (or $LOOPWRIGHT_VIEW_TOKEN): "
            "anyone who can reach the port could read your runs"
        )

    def ready(url: str) -> None:
        click.echo(f"loopwright view: {url}  (Ctrl-C to stop)", err=False)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve(resolve_db(db), host=host, port=port, token=token, ready=ready)
    return EXIT_OK
