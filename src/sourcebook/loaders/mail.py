"""E-mail loaders (the standard library's `email`): one message (.eml) or a mailbox (.mbox).

A message's subject is its title, and its sender, recipients and date are both metadata
(to filter on) and a line of body text (so "the mail from Ada in March" finds it). The body
is the plain-text part, else the HTML part read as a page; attachments are named in the
metadata, not read. A mailbox is one document with one level-1 section per message (its
subject), parsed one message at a time so memory holds a single parsed message at once.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import re
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

from ..errors import EmptyDocumentError, LoaderError
from ..models import ParsedDocument
from .html import add_html
from .text import DocumentBuilder, clean_inline, split_paragraphs

_FROM_LINE = re.compile(rb"^From [^\r\n]*\r?\n", re.MULTILINE)
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
_HEADER_LINE = re.compile(rb"^[!-9;-~]+:", re.MULTILINE)  # a "Name:" header field
NO_SUBJECT = "(no subject)"


def _check_not_empty(data: bytes, source: str) -> None:
    if not data.strip():
        raise EmptyDocumentError(source, "empty file")


def _parse(data: bytes, source: str) -> EmailMessage:
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)  # what policy.default builds
    if message.defects and not message.keys():
        raise LoaderError(source, f"not an e-mail message ({message.defects[0].__class__.__name__})")
    return message


def _header(message: EmailMessage, name: str) -> str:
    """A header's decoded text; one too malformed to parse reads as empty, not as a failure."""
    try:
        value = message.get(name)
    except Exception:  # the default policy parses headers lazily, and may raise on odd ones
        return ""
    return clean_inline(str(value or ""))


def _date(message: EmailMessage) -> str:
    """The Date header as ISO 8601 when it parses, else as written."""
    raw = _header(message, "Date")
    try:
        return email.utils.parsedate_to_datetime(raw).isoformat() if raw else ""
    except (TypeError, ValueError):
        return raw


def message_metadata(message: EmailMessage) -> dict[str, Any]:
    """Subject, sender, recipients, date and attachment names (empty fields left out)."""
    fields: dict[str, Any] = {
        "subject": _header(message, "Subject"),
        "sender": _header(message, "From"),
        "to": _header(message, "To"),
        "date": _date(message),
        "message_id": _header(message, "Message-ID"),
    }
    attachments = [part.get_filename() or "" for part in message.iter_attachments()]
    fields["attachments"] = [name for name in attachments if name]
    return {key: value for key, value in fields.items() if value}


def _add_body(builder: DocumentBuilder, message: EmailMessage, source: str) -> None:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # an unknown charset or a damaged transfer encoding
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return
    if part.get_content_subtype() == "html":
        add_html(builder, content, source)
    else:
        for paragraph in split_paragraphs(content):
            builder.add("paragraph", paragraph)


def _add_message(builder: DocumentBuilder, message: EmailMessage, source: str) -> dict[str, Any]:
    """The message's header line and body; returns its metadata."""
    metadata = message_metadata(message)
    parts = [f"From: {metadata['sender']}" if "sender" in metadata else "",
             f"To: {metadata['to']}" if "to" in metadata else "",
             f"Date: {metadata['date']}" if "date" in metadata else ""]  # fmt: skip
    builder.add("paragraph", " · ".join(part for part in parts if part))
    _add_body(builder, message, source)
    return metadata


class EmlLoader:
    name: str = "eml"
    media_types: tuple[str, ...] = ("message/rfc822",)
    extensions: tuple[str, ...] = (".eml",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        _check_not_empty(data, source)
        if not _HEADER_LINE.match(data.lstrip()):
            raise LoaderError(source, "not an e-mail message (it does not start with header fields)")
        builder = DocumentBuilder()
        metadata = _add_message(builder, _parse(data, source), source)
        return builder.build(source, metadata.get("subject"), self.media_types[0], metadata)


def _mbox_messages(data: bytes) -> Iterator[bytes]:
    """Each message's bytes, without its "From " separator line, in file order, with body
    lines the mailbox escaped (">From ...", so they are not separators) unescaped."""
    separators = _FROM_LINE.finditer(data)
    current = next(separators, None)
    while current is not None:
        following = next(separators, None)
        message = data[current.end() : following.start() if following else len(data)]
        yield _ESCAPED_FROM.sub(rb"\1", message)
        current = following


class MboxLoader:
    name: str = "mbox"
    media_types: tuple[str, ...] = ("application/mbox",)
    extensions: tuple[str, ...] = (".mbox",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        _check_not_empty(data, source)
        if not data.startswith(b"From "):
            raise LoaderError(source, 'not an mbox mailbox (it does not start with a "From " line)')
        builder = DocumentBuilder()
        count = 0
        for raw in _mbox_messages(data):
            message = _parse(raw, source)
            builder.heading(1, _header(message, "Subject") or NO_SUBJECT)
            _add_message(builder, message, source)
            count += 1
        return builder.build(source, None, self.media_types[0], {"messages": count})
