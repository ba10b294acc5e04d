"""Request and response models of the HTTP API: the OpenAPI schema at /openapi.json is built from them.

Response shapes mirror the library's `to_dict()`s (the CLI's JSON contract), so a script
moving from `sourcebook search --json` to `POST /v1/search` reads the same fields.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler, StringConstraints
from pydantic import Strict as PydanticStrict
from pydantic.json_schema import JsonSchemaValue
from typing_extensions import TypeAliasType

from ..models import DocumentRecord, DocumentStatus, check_metadata

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
NAME_OR_EMPTY_PATTERN = r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})?$"
"""A form field's name: form parsing takes an empty field for an absent one (its default), so
the schema allows the empty text that the server accepts."""
# A question, query or chat message: something other than whitespace (blank text is a 400, so the
# schema says so and the fuzz run never sends it as valid). Python's str.strip() also strips the
# separators \x1c-\x1f, which regex \s does not match, so the pattern names them.
UserText = Annotated[
    str, Field(min_length=1, max_length=4000, pattern=r"[^\s\x1c-\x1f]", description="at least one non-blank character")
]
CollectionName = Annotated[str, Field(pattern=NAME_PATTERN, description="letters, digits, '_', '.', '-'; at most 64")]


def _not_a_boolean(value: Any) -> Any:
    """JSON `true` is not the number 1, though pydantic's lax mode would take it (the schema fuzz
    run sent `"top_k": true`); strict mode is no cure, as it refuses `44.0`, a JSON integer."""
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return value


NoBool = BeforeValidator(_not_a_boolean)
Finite = Field(allow_inf_nan=False)
"""Python's json reads NaN, Infinity and 1e999 (inf), none of them JSON numbers: refused (422)."""
Boolean = Annotated[bool, PydanticStrict()]
"""The converse of NoBool: JSON `true`/`false` only, not 0, 1 or "yes" (pydantic's lax mode takes
them; the schema fuzz run sent `"rewrite": 0`). The JSON Schema stays `{"type": "boolean"}`."""
NoNulText = Annotated[str, StringConstraints(pattern=r"^[^\x00]*$")]
"""Text a store can keep: PostgreSQL's text and jsonb refuse the NUL character."""


class KeysWithoutNul:
    """JSON Schema of an object whose keys are `NoNulText`: pydantic writes `patternProperties`,
    which lets a key matching no pattern through as an additional property (the schema fuzz run
    sent one); `propertyNames` says what the validator enforces."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        ((pattern, values),) = schema.pop("patternProperties").items()
        return {**schema, "propertyNames": {"pattern": pattern}, "additionalProperties": values}


MetadataValue = TypeAliasType(
    "MetadataValue",
    "NoNulText | bool | int | float | None | list[MetadataValue] | Annotated[dict[NoNulText, MetadataValue], KeysWithoutNul()]",
)
JsonMetadata = Annotated[dict[NoNulText, MetadataValue], KeysWithoutNul(), AfterValidator(check_metadata)]
"""Free-form metadata a document keeps: JSON a store can hold (finite numbers, valid Unicode, no
NUL), the schema saying as much as JSON Schema can."""


class Strict(BaseModel):
    """Unknown fields are a client's mistake worth hearing about (422), not silently dropped."""

    model_config = ConfigDict(extra="forbid")


# Errors -------------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    code: str = Field(description="stable, machine-readable: e.g. document_not_found, rate_limited")
    message: str = Field(description="what failed and what to do about it")


class ErrorBody(BaseModel):
    error: ErrorDetail


# Collections ----------------------------------------------------------------------------
class CollectionCreate(Strict):
    name: CollectionName


class Collection(BaseModel):
    name: str
    embedding_model: str
    dimension: int
    document_count: int
    chunk_count: int


class CollectionList(BaseModel):
    collections: list[Collection]


# Documents --------------------------------------------------------------------------------
# A document is the library's own `DocumentRecord` (a dataclass pydantic validates and documents
# as it is), so the API's shape cannot drift from what the facade returns.
class DocumentList(BaseModel):
    documents: list[DocumentRecord]


class DocumentsQueued(BaseModel):
    """Accepted for ingestion: poll GET /v1/documents/{id} (or stream /events) until ready or error."""

    documents: list[DocumentRecord]


class UrlAdd(Strict):
    urls: list[Annotated[str, Field(pattern=r"^https?://[^/]", max_length=2000)]] = Field(
        min_length=1, max_length=100, description="http(s) URLs to fetch and add"
    )
    collection: CollectionName = "default"
    metadata: JsonMetadata = Field(default_factory=dict)


Location = Annotated[str, Field(
    description='where in its document: "page 3", "slide 2: Pricing", "sheet Sales, rows 2-40", or the heading path'
)]
"""A passage's place (`locations.location`): what a citation names."""


class Chunk(BaseModel):
    chunk_id: str
    position: int
    heading_path: list[str]
    page: int | None
    location: Location = ""
    text: str


class DocumentDetail(BaseModel):
    document: DocumentRecord
    chunks: list[Chunk]


class StatusEvent(BaseModel):
    """One `status` event of GET /v1/documents/{id}/events."""

    id: str
    status: DocumentStatus
    error: str | None
    chunk_count: int


# Search -----------------------------------------------------------------------------------
MetadataFilter = Annotated[
    dict[Annotated[str, StringConstraints(pattern=r'^[^"\x00]+$')], str | int | Annotated[float, Finite] | bool],  # the store refuses " and NUL
    Field(json_schema_extra={"additionalProperties": False}),  # keys not matching the pattern are refused
]
"""Exact matches on document metadata: key -> a string, number or boolean."""
Scope = CollectionName | Annotated[list[CollectionName], Field(max_length=100)] | None


class SearchRequest(Strict):
    query: UserText
    top_k: Annotated[int, Field(ge=1, le=100), NoBool] | None = None
    mode: Literal["keyword", "vector", "hybrid"] | None = None
    collection: Scope = Field(None, description="a collection name or a list of them; default: every one the key may read")
    document_ids: list[str] | None = Field(None, max_length=1000)
    metadata: MetadataFilter | None = Field(None, description="exact-match metadata filter")
    min_score: Annotated[float, Finite, NoBool] | None = None
    per_document: Annotated[int, Field(ge=0, le=100), NoBool] | None = None


class RetrieverScore(BaseModel):
    rank: int | None
    score: float | None


class Hit(BaseModel):
    rank: int
    score: float
    document_id: str
    source: str
    title: str
    chunk_id: str
    text: str
    heading_path: list[str]
    page: int | None
    location: Location = ""
    collection: str
    position: int
    retrievers: dict[str, RetrieverScore]


class SearchResponse(BaseModel):
    query: str
    hits: list[Hit]


# Answers -------------------------------------------------------------------------------------
class AskRequest(Strict):
    question: UserText
    collection: Scope = Field(None, description="a collection name or a list of them; default: every one the key may read")
    document_ids: list[str] | None = Field(None, max_length=1000)
    metadata: MetadataFilter | None = Field(None, description="exact-match metadata filter")
    top_k: Annotated[int, Field(ge=1, le=50), NoBool] | None = None
    mode: Literal["retrieval", "full-context", "auto"] | None = None
    rewrite: Boolean | None = None


class Citation(BaseModel):
    n: int
    document_id: str
    source: str
    chunk_id: str
    quote: str
    title: str
    heading_path: list[str]
    page: int | None
    location: Location = ""
    supported: bool | None


class RelatedDocument(BaseModel):
    """A document like another one, or one an answer retrieved but did not cite."""

    document_id: str
    source: str
    title: str
    collection: str
    score: float = Field(description="cosine similarity of its best matching chunk (an answer's: its hit's score)")
    chunk_id: str = Field(description="that chunk: where to start reading")


class RelatedList(BaseModel):
    documents: list[RelatedDocument]


class Answer(BaseModel):
    question: str
    answer: str
    abstained: bool
    citations: list[Citation]
    confidence: float
    mode: str
    queries: list[str]
    usage: dict[str, Any]
    follow_up_questions: list[str]
    citation_check: dict[str, Any] | None
    answerer: str
    related: list[RelatedDocument] = Field(
        default_factory=list, description="you may also want to read: retrieved documents the answer did not cite"
    )


class Summary(BaseModel):
    """A document's or a collection's summary, as `sourcebook summarize --json` prints it."""

    document_id: str | None = Field(description="the document summarized; null for a collection")
    source: str | None
    title: str
    collection: str
    summary: str = Field(description="sentences ending in [n] citation markers")
    citations: list[Citation]
    summarizer: str = Field(description="extractive, or the provider:model that wrote it")
    citation_check: dict[str, Any] | None = Field(description="the check of the LLM's text; null when extractive")
    documents: list[str] = Field(description="ids of the documents it draws on")
    usage: dict[str, Any]
    cached: bool = Field(description="read from the summary cache (the document had not changed)")


class TokenEvent(BaseModel):
    """One `token` event of POST /v1/ask/stream: the next piece of the answer's text."""

    text: str


# Chat ---------------------------------------------------------------------------------------
class ChatSessionCreate(Strict):
    title: str = Field("", max_length=200)


class ChatSession(BaseModel):
    id: str
    title: str
    created_at: str
    updated_at: str
    message_count: int
    collections: list[str] = Field(
        description='the collections the session was used in ("*": every collection); a key sees the session '
                    "only if it may read all of them (none yet: every key of the tenant)"
    )


class ChatSessionList(BaseModel):
    sessions: list[ChatSession]


class ChatMessageCreate(Strict):
    content: UserText
    collection: Scope = None
    mode: Literal["retrieval", "full-context", "auto"] | None = None


class ChatMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str
    answer: Answer | None = Field(None, description="the full answer object, on assistant turns")
    created_at: str


class ChatHistory(BaseModel):
    session: ChatSession
    messages: list[ChatMessage]


class ChatReply(BaseModel):
    session_id: str
    answer: Answer


# Knowledge graph ---------------------------------------------------------------------------
# Names and filters reach SQL as parameters; control characters are refused (Postgres cannot store NUL).
GraphText = Annotated[str, Field(max_length=200, pattern=r"^[^\x00-\x1f]*$")]


class EntityFields(BaseModel):
    """What a graph node and an entity both say (graph/models.py EntityRecord)."""

    name: str
    type: str
    summary: str
    mentions: int = Field(description="how many times its chunks name it")
    documents: int
    aliases: list[str] = Field(description="other names (keys) of the same entity, such as an acronym")


class GraphNode(EntityFields):
    id: str = Field(description="the entity's key (its name normalised: case, plural, article)")


class GraphEdge(BaseModel):
    source: str = Field(description="a node id")
    target: str = Field(description="a node id")
    relation: str
    weight: float
    chunk_ids: list[str] = Field(description="the chunks that support the relation")


class GraphStats(BaseModel):
    entities: int
    relations: int
    documents: int = Field(description="documents whose graph is built")


class Graph(BaseModel):
    """`kb.graph(limit)`: the most mentioned entities and the relations among them."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    stats: GraphStats = Field(description="the whole graph's size (the nodes are at most `limit` of it)")
    can_build: bool = Field(description="whether this API key may build the graph (POST /v1/graph/build)")


class GraphExport(BaseModel):
    """GET /v1/graph/export?format=json: the whole graph."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]


class Entity(EntityFields):
    key: str = Field(description="the id of its node in GET /v1/graph")


class EntityList(BaseModel):
    """As `sourcebook graph list --json` prints it."""

    entities: list[Entity]
    graph: GraphStats


class Passage(BaseModel):
    chunk_id: str
    document_id: str
    source: str
    title: str
    heading_path: list[str]
    page: int | None
    location: Location = ""
    text: str


class Neighbour(BaseModel):
    entity: str = Field(description="the key of the entity at the other end")
    outgoing: bool = Field(description="true when this entity is the relation's source")
    source: str
    source_name: str
    relation: str
    target: str
    target_name: str
    weight: float
    chunk_ids: list[str]
    passages: list[Passage] = Field(description="the passages that support the relation")


class EntityDetail(BaseModel):
    """As `sourcebook graph show --json` prints it."""

    entity: Entity
    passages: list[Passage] = Field(description="passages that mention the entity")
    neighbours: list[Neighbour]


class GraphUsage(BaseModel):
    calls: list[dict[str, Any]]
    input_tokens: int
    output_tokens: int


class GraphBuildReport(BaseModel):
    """As `sourcebook graph build --json` prints it."""

    extractor: str
    documents: int = Field(description="documents whose graph was (re)built")
    up_to_date: int
    chunks: int
    extracted: int = Field(description="chunks sent to the extractor (not in its cache)")
    cached: int
    failed: int
    errors: list[str]
    usage: GraphUsage
    graph: GraphStats


# Usage ------------------------------------------------------------------------------------------
class UsageRow(BaseModel):
    """A tenant's counts for one UTC day and API key ("" for ingestion jobs no key ran)."""

    tenant: str
    day: str
    api_key: str
    requests: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    embedding_calls: int
    embedded_texts: int


class UsageResponse(BaseModel):
    tenant: str
    usage: list[UsageRow]


# Health -----------------------------------------------------------------------------------------
class Health(BaseModel):
    status: Literal["ok"]
    version: str
    auth: bool
    queue_depth: int


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for a route: each status it can answer with, as an ErrorBody.

    Every authenticated route can answer 401, 422 and 429; pass the others it adds."""
    from .errors import ERROR_DESCRIPTIONS

    wanted = sorted({401, 422, 429, *statuses})
    return {status: {"model": ErrorBody, "description": ERROR_DESCRIPTIONS[status]} for status in wanted}


def component(name: str) -> dict[str, str]:
    """A reference to a model the API's other routes already put in the schema's components."""
    return {"$ref": f"#/components/schemas/{name}"}


def inline(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema to embed in the OpenAPI document (models it uses are in its components)."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    return schema


def event_stream(description: str, events: dict[str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entry for a server-sent event stream: the schema of one event, an
    object whose `event` names it and whose `data` is JSON of the given schema."""
    one_event = [
        {
            "type": "object", "required": ["event", "data"],
            "properties": {
                "event": {"const": name},
                "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": schema},
            },
        }
        for name, schema in events.items()
    ]
    return {200: {"description": description, "content": {"text/event-stream": {"schema": {"oneOf": one_event}}}}}
