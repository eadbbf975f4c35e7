"""The live viewer: a local web page over the run store (``loopwright view``).

It lists runs and evals, shows a run's conversation, its transcript as an event tree, its
store and configuration, and an eval's samples; a run still going updates as its events
are written. Pages come from bounded SQLite queries (``loopwright.log``'s page readers),
so a run of a million events opens as fast as one of ten. Every asset ships in the
package. Needs the ``viewer`` extra (starlette, uvicorn), imported when used.
"""

from ._app import STATIC, create_app
from ._serve import LOCAL_HOSTS, serve

__all__ = ["LOCAL_HOSTS", "STATIC", "create_app", "serve"]
