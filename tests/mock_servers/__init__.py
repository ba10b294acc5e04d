"""Local mock servers for the hosted LLM providers' wire protocols (see core.py)."""

from .anthropic import AnthropicProtocol
from .core import Fail, Hang, Malformed, MockServer, Recorded, Reply, fake_vector
from .gemini import GeminiProtocol
from .openai import OpenAIProtocol

__all__ = [
    "AnthropicProtocol", "Fail", "GeminiProtocol", "Hang", "Malformed", "MockServer", "OpenAIProtocol",
    "Recorded", "Reply", "fake_vector",
]
