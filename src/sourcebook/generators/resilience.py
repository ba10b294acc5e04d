"""Retries, timing and error translation shared by every SDK-backed generator, and the fallback chain.

Why our own retry loop instead of the SDKs': the three SDKs retry differently (Gemini's not
at all by default), and one loop gives every provider the same behaviour -- exponential
backoff with jitter on 429/5xx/timeouts, `retry-after` (and `retry-after-ms`) honoured --
and lets the answer record how many attempts each call took. The SDKs' own retries are
switched off (max_retries=0) so the two loops never multiply.

A stream is retried only until its first event arrives: once text has reached the caller
it cannot be taken back, so a later failure is raised, not retried.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import ClassVar, Literal, TypeVar

import pydantic

from ..errors import (
    GeneratorError,
    MalformedResponseError,
    MissingAPIKeyError,
    ProviderUnavailableError,
    UnknownModelError,
)
from .base import Generation, GenerationRequest, StreamEvent, Usage

T = TypeVar("T")
FailureKind = Literal["transient", "unknown_model", "auth", "malformed", "rejected"]


@dataclass(frozen=True)
class Failure:
    """A provider error, classified: only "transient" ones are retried."""

    kind: FailureKind
    message: str
    retry_after: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    """A server asking us to wait longer than this is treated as unavailable now."""
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry `attempt` (1-based): the server's word, else jittered backoff."""
        if retry_after is not None:
            return retry_after
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return backoff * random.uniform(0.5, 1.0)  # jitter: many clients must not retry in lockstep


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """`retry-after-ms`, or `retry-after` as seconds or an HTTP date; None when absent or unreadable."""
    if not headers:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def classify_status(status: int, message: str, headers: Mapping[str, str] | None) -> Failure:
    """The meaning of an HTTP error status, the same for every provider."""
    if status in (408, 409, 429) or status >= 500:
        return Failure("transient", f"HTTP {status}: {message}", retry_after_seconds(headers))
    if status == 404:
        return Failure("unknown_model", message)
    if status in (401, 403):
        return Failure("auth", message)
    return Failure("rejected", f"HTTP {status}: {message}")


def classify_parse_error(exc: Exception) -> Failure | None:
    """A body that is not the JSON (or the shape) the protocol promises."""
    if isinstance(exc, json.JSONDecodeError | pydantic.ValidationError):
        return Failure("malformed", f"unreadable response ({type(exc).__name__}: {str(exc)[:200]})")
    return None


class SDKGenerator(ABC):
    """A generator over a provider SDK: subclasses send requests and classify the SDK's errors."""

    provider: ClassVar[str]
    key_variable: ClassVar[str | None] = None

    def __init__(self, model: str, retry: RetryPolicy) -> None:
        self.model = model
        self.retry = retry

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"

    @abstractmethod
    def _complete(self, request: GenerationRequest) -> tuple[str, Usage]:
        """Send the request and return the reply's text (JSON text for structured output) and usage."""

    @abstractmethod
    def _open_stream(self, request: GenerationRequest) -> Iterator[str | Usage]:
        """Text deltas and usage reports (partial ones merge by maximum) as they arrive."""

    @abstractmethod
    def _classify(self, exc: Exception) -> Failure | None:
        """What a raised exception means; None for exceptions that are not the provider's (bugs)."""

    def generate(self, request: GenerationRequest) -> Generation:
        start = time.monotonic()
        (text, usage), attempts = self._with_retries(lambda: self._complete(request))
        return Generation(text, self.provider, self.model, usage, (time.monotonic() - start) * 1000, attempts)

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        start = time.monotonic()

        def open_stream() -> tuple[Iterator[str | Usage], list[str | Usage]]:
            events = iter(self._open_stream(request))
            first = next(events, None)  # the request goes out; connection errors surface here
            if first is None:  # every provider reports usage or text: silence is a broken body
                raise self._error(Failure("malformed", "the stream ended before its first event"), 1)
            return events, [first]

        (events, head), attempts = self._with_retries(open_stream)
        parts: list[str] = []
        usage = Usage()
        try:
            for event in chain(head, events):
                if isinstance(event, Usage):
                    usage = Usage(max(usage.input_tokens, event.input_tokens), max(usage.output_tokens, event.output_tokens))
                elif event:
                    parts.append(event)
                    yield event
        except Exception as exc:
            failure = self._classify(exc)
            if failure is None:
                raise
            raise self._error(failure, attempts, streamed=len(parts)) from exc
        yield Generation("".join(parts), self.provider, self.model, usage, (time.monotonic() - start) * 1000, attempts)

    def _with_retries(self, call: Callable[[], T]) -> tuple[T, int]:
        return with_retries(call, self._classify, self.retry, self._error)

    def _error(self, failure: Failure, attempts: int, streamed: int = 0) -> GeneratorError:
        return typed_error(self.spec, failure, attempts, self.key_variable, streamed)


def with_retries(
    call: Callable[[], T],
    classify: Callable[[Exception], Failure | None],
    retry: RetryPolicy,
    fail: Callable[[Failure, int], Exception],
) -> tuple[T, int]:
    """(call's result, attempts): transient failures retried per `retry`, others raised as `fail` makes them."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except GeneratorError:
            raise
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            too_long = (failure.retry_after or 0) > retry.max_retry_after
            if failure.kind != "transient" or attempt > retry.max_retries or too_long:
                raise fail(failure, attempt) from exc
            retry.sleep(retry.delay(attempt, failure.retry_after))


def typed_error(spec: str, failure: Failure, attempts: int, key_variable: str | None, streamed: int = 0) -> GeneratorError:
    """The typed error for a failure: it names the provider, the model and what to do."""
    if failure.kind == "unknown_model":
        return UnknownModelError(f"{spec}: the provider does not know this model ({failure.message}); check its name")
    if failure.kind == "auth":
        return MissingAPIKeyError(f"{spec}: the provider rejected the credentials ({failure.message}); check {key_variable or 'the API key'}")
    if failure.kind == "malformed":
        return MalformedResponseError(f"{spec}: {failure.message}; the server does not speak the provider's protocol correctly")
    if failure.kind == "rejected":
        return GeneratorError(f"{spec} rejected the request: {failure.message}")
    if streamed:
        return ProviderUnavailableError(f"{spec}: the stream broke after {streamed} text events ({failure.message}); ask again")
    waited = f", asked to retry after {failure.retry_after:.0f}s" if failure.retry_after else ""
    return ProviderUnavailableError(
        f"{spec} failed after {attempts} attempt(s){waited}: {failure.message}; "
        f"try again later, raise llm_timeout, or configure llm_fallbacks"
    )


_FALLBACK_ON = (ProviderUnavailableError, MalformedResponseError)


class FallbackGenerator:
    """Tries each generator in order; moves on when one is unavailable or talks nonsense.

    Configuration errors (missing key, unknown model, rejected request) are raised at once:
    falling back would hide a mistake the user must fix.
    """

    provider = "fallback"

    def __init__(self, generators: Sequence[object]) -> None:
        self.generators = list(generators)
        self.model = " -> ".join(g.spec for g in self.generators)  # type: ignore[attr-defined]

    @property
    def spec(self) -> str:
        return self.model

    def generate(self, request: GenerationRequest) -> Generation:
        failures: list[str] = []
        for generator in self.generators:
            try:
                result: Generation = generator.generate(request)  # type: ignore[attr-defined]
            except _FALLBACK_ON as exc:
                failures.append(str(exc))
                continue
            return replace(result, failures=tuple(failures))
        raise ProviderUnavailableError("every LLM in the fallback chain failed: " + " | ".join(failures))

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        failures: list[str] = []
        for generator in self.generators:
            events: Iterator[StreamEvent] = generator.stream(request)  # type: ignore[attr-defined]
            try:
                first = next(events)
            except _FALLBACK_ON as exc:
                failures.append(str(exc))
                continue
            for event in chain([first], events):
                yield replace(event, failures=tuple(failures)) if isinstance(event, Generation) else event
            return
        raise ProviderUnavailableError("every LLM in the fallback chain failed: " + " | ".join(failures))


def classify_stainless(exc: Exception, sdk: object) -> Failure | None:
    """Errors of the anthropic and openai SDKs, which share one design (both are Stainless-generated)."""
    if isinstance(exc, sdk.APIStatusError):  # type: ignore[attr-defined]
        return classify_status(exc.status_code, getattr(exc, "message", str(exc)), exc.response.headers)
    if isinstance(exc, sdk.APIConnectionError):  # timeouts included  # type: ignore[attr-defined]
        return Failure("transient", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, sdk.APIResponseValidationError):  # type: ignore[attr-defined]
        return Failure("malformed", str(exc))
    return classify_parse_error(exc)
