"""What every SDK-backed provider needs from the environment: the SDK, a key, a base URL, retries.

Keys come from the providers' usual environment variables (never from sourcebook.toml, so
they are not committed by accident); base URLs from `Settings.llm_base_urls[provider]`,
else the SDK's own variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GEMINI_BASE_URL).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from types import ModuleType

from ..errors import ConfigurationError, MissingAPIKeyError
from ..settings import Settings
from .resilience import RetryPolicy


def import_sdk(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(
            f"the {module} SDK is not installed: run `pip install 'sourcebook[{extra}]'`"
        ) from exc


def api_key(provider: str, variables: Sequence[str], *, required: bool = True) -> str | None:
    for variable in variables:
        if value := os.environ.get(variable, "").strip():
            return value
    if required:
        raise MissingAPIKeyError(
            f"{provider} needs an API key: set {' or '.join(variables)}, or choose another LLM with --llm "
            f"(a local model needs none: llamacpp:/path/to/model.gguf)"
        )
    return None


def base_url(provider: str, settings: Settings, variable: str) -> str | None:
    return settings.llm_base_urls.get(provider) or os.environ.get(variable) or None


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(max_retries=settings.llm_max_retries, base_delay=settings.llm_retry_base_delay)
