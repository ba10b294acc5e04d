"""The HTTP service (`sourcebook serve`): a FastAPI app over the `KnowledgeBase` facade.

Needs the `server` extra: `pip install 'sourcebook[server]'`. See README "HTTP service".
"""

from .app import create_app
from .config import ServerSettings

__all__ = ["ServerSettings", "create_app"]
