"""Chat sessions and their turns: the same SQL on SQLite and Postgres (`ChatStore`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..base import ChatMessageRecord, ChatSessionRecord
from ..common import no_session, now, session_taken
from .base import SharedSql
from .dialect import decoded, iso


class SqlChat(SharedSql):
    """The `ChatStore` role on the store's own tables (chat_sessions, chat_messages)."""

    def create_chat_session(self, session_id: str, title: str, collections: Sequence[str] = ()) -> None:
        stamp = now()
        with self._writing() as sql:
            created = sql.execute(
                """INSERT INTO chat_sessions (tenant, id, title, created_at, updated_at, collections) VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (tenant, id) DO NOTHING""",
                (self.tenant, session_id, title, stamp, stamp, json.dumps(sorted(set(collections)))),
            ).rowcount
        if not created:
            raise session_taken(session_id)

    def get_chat_session(self, session_id: str) -> ChatSessionRecord | None:
        sessions = self._chat_sessions("AND s.id = ?", (session_id,))
        return sessions[0] if sessions else None

    def list_chat_sessions(self) -> list[ChatSessionRecord]:
        return self._chat_sessions("", ())

    def _chat_sessions(self, where: str, params: tuple[Any, ...]) -> list[ChatSessionRecord]:
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT s.id, s.title, s.created_at, s.updated_at, count(m.seq), s.collections
                    FROM chat_sessions s
                    LEFT JOIN chat_messages m ON m.tenant = s.tenant AND m.session_id = s.id
                    WHERE s.tenant = ? {where}
                    GROUP BY s.tenant, s.id ORDER BY s.updated_at DESC, s.id{sql.dialect.collate}""",
                (self.tenant, *params),
            ).fetchall()
        return [ChatSessionRecord(id_, title, iso(created), iso(updated), int(count), tuple(json.loads(used)))
                for id_, title, created, updated, count, used in rows]

    def add_chat_message(
        self, session_id: str, role: str, content: str, data: dict[str, Any] | None = None, collections: Sequence[str] = ()
    ) -> None:
        stamp = now()
        with self._writing() as sql:
            # the update first: on Postgres it locks the row, so two turns never lose each other's collections
            touched = sql.execute(
                "UPDATE chat_sessions SET updated_at = ? WHERE tenant = ? AND id = ?", (stamp, self.tenant, session_id)
            ).rowcount
            if not touched:
                raise no_session(session_id)
            if collections:
                (used,) = sql.execute(
                    "SELECT collections FROM chat_sessions WHERE tenant = ? AND id = ?", (self.tenant, session_id)
                ).fetchone()
                merged = sorted({*json.loads(used), *collections})
                sql.execute(
                    "UPDATE chat_sessions SET collections = ? WHERE tenant = ? AND id = ?",
                    (json.dumps(merged), self.tenant, session_id),
                )
            sql.execute(
                """INSERT INTO chat_messages (tenant, session_id, role, content, data, created_at)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (self.tenant, session_id, role, content, None if data is None else json.dumps(data, default=str), stamp),
            )

    def chat_messages(self, session_id: str) -> list[ChatMessageRecord]:
        with self._reading() as sql:
            exists = sql.execute(
                "SELECT 1 FROM chat_sessions WHERE tenant = ? AND id = ?", (self.tenant, session_id)
            ).fetchone()
            rows = sql.execute(
                """SELECT session_id, role, content, data, created_at FROM chat_messages
                   WHERE tenant = ? AND session_id = ? ORDER BY seq""",
                (self.tenant, session_id),
            ).fetchall()
        if exists is None:
            raise no_session(session_id)
        return [ChatMessageRecord(sid, role, content, None if data is None else decoded(data), iso(created))
                for sid, role, content, data, created in rows]

    def delete_chat_session(self, session_id: str) -> None:
        with self._writing() as sql:
            deleted = sql.execute(
                "DELETE FROM chat_sessions WHERE tenant = ? AND id = ?", (self.tenant, session_id)
            ).rowcount
        if not deleted:
            raise no_session(session_id)
