"""The web page: / serves static/index.html, /static/ its script, styles and icons.

No templates and no build step: the page is plain HTML with one ES module that calls the
/v1 API with the API key the user enters (kept in the browser's localStorage). Everything
it shows comes from the public API, so the page can do nothing a key could not do anyway.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(include_in_schema=False)


@router.get("/")
def index() -> FileResponse:
    # no-cache: the page is tiny and must never run against a newer API with an older script
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


def install(app: FastAPI) -> None:
    """Serve the page and its assets from `app`."""
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
