"""The OpenAI-compatible and Anthropic providers against real local fake servers: request
shape, answers read and validated, every failure typed, retries, time limits, and each failure
falling back to the rules."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from polyg.llm import LLM, LLMError, LLMInvalidOutput, LLMRefusal, LLMTimeout, LLMUnavailable, with_fallback
from polyg.llm.anthropic import API_VERSION, TOOL_NAME, AnthropicLLM
from polyg.llm.base import Message
from polyg.llm.openai_compat import OpenAICompatLLM
from tests.fakes.anthropic_server import FakeAnthropicServer, RawMessage
from tests.fakes.http_fake import FakeHTTPServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.llm.conftest import ANTHROPIC_KEY, GOOD_PLAN, OPENAI_KEY, RULES_PLAN, Plan, rules_plan

pytestmark = pytest.mark.anyio

ASK: list[Message] = [
    {"role": "system", "content": "You classify queries."},
    {"role": "user", "content": "Why did the auth service fail after Tuesday's deploy?"},
]


# -- OpenAI-compatible -------------------------------------------------------------------------


async def test_openai_valid_answer_and_request_shape(openai_srv: FakeOpenAIServer, openai_llm: OpenAICompatLLM) -> None:
    openai_srv.chat_replies = [json.dumps(GOOD_PLAN)]
    plan = await openai_llm.complete_json(ASK, Plan, max_tokens=300)
    assert plan == Plan.model_validate(GOOD_PLAN)
    (request,) = openai_srv.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    body = request.body
    assert body["model"] == "fake-chat" and body["temperature"] == 0 and body["max_tokens"] == 300
    assert body["messages"][1:] == ASK
    assert body["messages"][0]["role"] == "system" and '"confidence"' in body["messages"][0]["content"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == Plan.model_json_schema()


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + json.dumps(GOOD_PLAN) + "\n```",
        "Sure! Here is the JSON you asked for:\n" + json.dumps(GOOD_PLAN) + "\nHope this helps.",
    ],
)
async def test_openai_json_in_fences_or_prose_is_read(
    openai_srv: FakeOpenAIServer, openai_llm: OpenAICompatLLM, content: str
) -> None:
    openai_srv.chat_replies = [content]
    assert await openai_llm.complete_json(ASK, Plan) == Plan.model_validate(GOOD_PLAN)


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        ("I think the deploy broke it.", LLMInvalidOutput, "not JSON"),
        ('{"intents": ["causal", ', LLMInvalidOutput, "not JSON"),
        ('{"intents": [], "confidence": 2}', LLMInvalidOutput, "does not match Plan: intents: .*confidence"),
        ('{"intents": ["astrology"], "confidence": 0.5}', LLMInvalidOutput, "intents.0"),
        ("[1, 2, 3]", LLMInvalidOutput, "does not match Plan"),
        ("", LLMInvalidOutput, "empty"),
        ({"role": "assistant", "content": None, "refusal": "I can't help with that."}, LLMRefusal, "can't help"),
        ({"role": "assistant", "content": "", "finish_reason": "content_filter"}, LLMRefusal, "refused"),
        ({"role": "assistant", "content": '{"intents": ["cau', "finish_reason": "length"}, LLMInvalidOutput, "cut"),
    ],
)
async def test_openai_bad_answers_are_typed_errors(
    openai_srv: FakeOpenAIServer,
    openai_llm: OpenAICompatLLM,
    reply: str | dict[str, Any],
    error: type[LLMError],
    message: str,
) -> None:
    openai_srv.chat_replies = [reply]
    with pytest.raises(error, match=message) as caught:
        await openai_llm.complete_json(ASK, Plan)
    assert caught.value.code == 5003
    assert len(openai_srv.requests) == 1  # a bad answer is not retried


async def test_openai_non_json_response_body(openai_srv: FakeOpenAIServer, openai_llm: OpenAICompatLLM) -> None:
    openai_srv.fail_next(status=200, body="<html>proxy error</html>")
    with pytest.raises(LLMInvalidOutput, match="not JSON: <html>proxy error"):
        await openai_llm.complete_json(ASK, Plan)
    openai_srv.fail_next(status=200, body={"object": "chat.completion", "choices": []})
    with pytest.raises(LLMInvalidOutput, match=r"no choices\[0\].message"):
        await openai_llm.complete_json(ASK, Plan)


@pytest.mark.parametrize("status", [429, 500, 502, 503])
async def test_openai_transient_errors_are_retried(
    openai_srv: FakeOpenAIServer, openai_llm: OpenAICompatLLM, status: int
) -> None:
    openai_srv.fail_next(status=status, body="try again", times=2, headers={"retry-after": "0"})
    openai_srv.chat_replies = [json.dumps(GOOD_PLAN)]
    assert await openai_llm.complete_json(ASK, Plan) == Plan.model_validate(GOOD_PLAN)
    assert len(openai_srv.requests) == 3


async def test_openai_gives_up_after_max_retries(openai_srv: FakeOpenAIServer, openai_llm: OpenAICompatLLM) -> None:
    openai_srv.fail_next(status=500, body="boom", times=5)
    with pytest.raises(LLMUnavailable, match="answered HTTP 500: boom") as caught:
        await openai_llm.complete_json(ASK, Plan)
    assert caught.value.details["status"] == 500
    assert len(openai_srv.requests) == 1 + openai_llm.max_retries


async def test_openai_client_errors_are_not_retried_and_the_key_is_redacted(
    openai_srv: FakeOpenAIServer, openai_llm: OpenAICompatLLM
) -> None:
    openai_srv.fail_next(status=401, body={"error": {"message": f"Incorrect API key provided: {OPENAI_KEY}"}})
    with pytest.raises(LLMUnavailable, match="HTTP 401") as caught:
        await openai_llm.complete_json(ASK, Plan)
    assert OPENAI_KEY not in str(caught.value) and "***" in str(caught.value)
    assert len(openai_srv.requests) == 1


async def test_a_wrong_key_is_refused_by_the_server(openai_srv: FakeOpenAIServer) -> None:
    llm = OpenAICompatLLM(base_url=openai_srv.base_url, model="m", api_key="sk-wrong", retry_backoff_s=0)
    try:
        with pytest.raises(LLMUnavailable, match="HTTP 401"):
            await llm.complete_json(ASK, Plan)
    finally:
        await llm.aclose()


async def test_openai_timeout_covers_the_whole_call(openai_srv: FakeOpenAIServer) -> None:
    openai_srv.delay = 2.0
    openai_srv.chat_replies = [json.dumps(GOOD_PLAN)]
    llm = OpenAICompatLLM(base_url=openai_srv.base_url, model="m", api_key=OPENAI_KEY, timeout_s=0.2)
    try:
        with pytest.raises(LLMTimeout, match=r"no answer within 0\.2 s"):
            await llm.complete_json(ASK, Plan)
    finally:
        await llm.aclose()


async def test_an_unreachable_endpoint_is_retried_then_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nothing listens
    llm = OpenAICompatLLM(base_url=f"http://127.0.0.1:{port}/v1", model="m", retry_backoff_s=0, max_retries=1)
    try:
        with pytest.raises(LLMUnavailable, match="could not be reached: ConnectError"):
            await llm.complete_json(ASK, Plan)
    finally:
        await llm.aclose()


async def test_no_authorization_header_without_a_key() -> None:
    with FakeOpenAIServer(chat_replies=[json.dumps(GOOD_PLAN)]) as srv:
        llm = OpenAICompatLLM(base_url=srv.base_url, model="llama3.2")
        try:
            assert await llm.complete_json(ASK, Plan) == Plan.model_validate(GOOD_PLAN)
        finally:
            await llm.aclose()
        assert "authorization" not in srv.requests[0].headers


# -- Anthropic ---------------------------------------------------------------------------------


async def test_anthropic_valid_answer_and_request_shape(
    anthropic_srv: FakeAnthropicServer, anthropic_llm: AnthropicLLM
) -> None:
    anthropic_srv.replies = [dict(GOOD_PLAN)]
    plan = await anthropic_llm.complete_json(ASK, Plan, max_tokens=200)
    assert plan == Plan.model_validate(GOOD_PLAN)
    (request,) = anthropic_srv.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == ANTHROPIC_KEY
    assert request.headers["anthropic-version"] == API_VERSION
    assert "authorization" not in request.headers
    body = request.body
    assert body["model"] == "fake-claude" and body["max_tokens"] == 200 and body["temperature"] == 0
    assert body["messages"] == [ASK[1]]  # the system message moves to `system`
    assert body["system"].startswith("You classify queries.")
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert body["tools"][0]["input_schema"] == Plan.model_json_schema()


async def test_anthropic_text_answers_are_read_as_json(
    anthropic_srv: FakeAnthropicServer, anthropic_llm: AnthropicLLM
) -> None:
    anthropic_srv.replies = ["```json\n" + json.dumps(GOOD_PLAN) + "\n```"]
    assert await anthropic_llm.complete_json(ASK, Plan) == Plan.model_validate(GOOD_PLAN)


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        ("The deploy broke it, obviously.", LLMInvalidOutput, "not JSON"),
        ('{"intents": ["causal"', LLMInvalidOutput, "not JSON"),
        ({"intents": ["causal"], "confidence": "very"}, LLMInvalidOutput, "confidence"),
        ({"confidence": 0.5}, LLMInvalidOutput, "intents: Field required"),
        (RawMessage([{"type": "text", "text": "I won't classify that."}], "refusal"), LLMRefusal, "refused"),
        (RawMessage([{"type": "text", "text": '{"intents": ['}], "max_tokens"), LLMInvalidOutput, "cut off"),
        (RawMessage([], "end_turn"), LLMInvalidOutput, "empty"),
        (
            RawMessage([{"type": "tool_use", "id": "t", "name": TOOL_NAME, "input": "oops"}], "tool_use"),
            LLMInvalidOutput,
            "not an object",
        ),
    ],
)
async def test_anthropic_bad_answers_are_typed_errors(
    anthropic_srv: FakeAnthropicServer,
    anthropic_llm: AnthropicLLM,
    reply: Any,
    error: type[LLMError],
    message: str,
) -> None:
    anthropic_srv.replies = [reply]
    with pytest.raises(error, match=message):
        await anthropic_llm.complete_json(ASK, Plan)
    assert len(anthropic_srv.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_anthropic_transient_errors_are_retried(
    anthropic_srv: FakeAnthropicServer, anthropic_llm: AnthropicLLM, status: int
) -> None:
    anthropic_srv.fail_next(status=status, body={"type": "error", "error": {"type": "overloaded_error"}})
    anthropic_srv.replies = [dict(GOOD_PLAN)]
    assert await anthropic_llm.complete_json(ASK, Plan) == Plan.model_validate(GOOD_PLAN)
    assert len(anthropic_srv.requests) == 2


async def test_anthropic_wrong_key_is_unavailable_and_redacted(anthropic_srv: FakeAnthropicServer) -> None:
    llm = AnthropicLLM(base_url=anthropic_srv.base_url, model="m", api_key="sk-ant-wrong-key", retry_backoff_s=0)
    anthropic_srv.fail_next(status=401, body="bad key sk-ant-wrong-key")
    try:
        with pytest.raises(LLMUnavailable, match="HTTP 401") as caught:
            await llm.complete_json(ASK, Plan)
    finally:
        await llm.aclose()
    assert "sk-ant-wrong-key" not in str(caught.value)
    assert "sk-ant-wrong-key" not in repr(llm)


async def test_anthropic_timeout(anthropic_srv: FakeAnthropicServer) -> None:
    anthropic_srv.delay = 2.0
    anthropic_srv.replies = [dict(GOOD_PLAN)]
    llm = AnthropicLLM(base_url=anthropic_srv.base_url, model="m", api_key=ANTHROPIC_KEY, timeout_s=0.2)
    try:
        with pytest.raises(LLMTimeout):
            await llm.complete_json(ASK, Plan)
    finally:
        await llm.aclose()


# -- every failure falls back to the rules, on both providers --------------------------------


OPENAI_REPLIES: dict[str, str | dict[str, Any]] = {
    "valid": json.dumps(GOOD_PLAN),
    "garbage": "¯\\_(ツ)_/¯",
    "invalid_json": '{"intents": ["causal",]}',
    "schema_mismatch": '{"intent": "causal"}',
    "refusal": {"role": "assistant", "content": None, "refusal": "No."},
}
ANTHROPIC_REPLIES: dict[str, str | dict[str, Any] | RawMessage] = {
    "valid": dict(GOOD_PLAN),
    "garbage": "¯\\_(ツ)_/¯",
    "invalid_json": '{"intents": ["causal",]}',
    "schema_mismatch": {"intent": "causal"},
    "refusal": RawMessage([], "refusal"),
}


def _misbehave(server: FakeHTTPServer, mode: str) -> None:
    if mode == "http_500":
        server.fail_next(status=500, times=10)
    elif mode == "http_429":
        server.fail_next(status=429, times=10, headers={"retry-after": "0"})
    elif mode == "timeout":
        server.delay = 2.0


EXPECTED_ERROR = {
    "garbage": LLMInvalidOutput,
    "invalid_json": LLMInvalidOutput,
    "schema_mismatch": LLMInvalidOutput,
    "refusal": LLMRefusal,
    "http_500": LLMUnavailable,
    "http_429": LLMUnavailable,
    "timeout": LLMTimeout,
}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("mode", ["valid", *EXPECTED_ERROR])
async def test_each_failure_falls_back_to_the_rules(provider: str, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    server: FakeHTTPServer
    llm: LLM
    # Short only where the timeout is what is tested (the server then answers after 2 s): a
    # loaded machine may take more than half a second to answer the others, which would then
    # fail as timeouts, not as what they are.
    timeout_s = 0.5 if mode == "timeout" else 30.0
    if provider == "openai":
        openai = FakeOpenAIServer(api_key=OPENAI_KEY, chat_replies=[OPENAI_REPLIES.get(mode, "unused")]).start()
        server, llm = (
            openai,
            OpenAICompatLLM(base_url=openai.base_url, model="m", api_key=OPENAI_KEY, timeout_s=timeout_s),
        )
    else:
        anthropic = FakeAnthropicServer(api_key=ANTHROPIC_KEY, replies=[ANTHROPIC_REPLIES.get(mode, "unused")]).start()
        server, llm = (
            anthropic,
            AnthropicLLM(base_url=anthropic.base_url, model="m", api_key=ANTHROPIC_KEY, timeout_s=timeout_s),
        )
    llm.retry_backoff_s = 0
    _misbehave(server, mode)

    async def llm_plan(query: str) -> Plan:
        return await llm.complete_json([{"role": "user", "content": query}], Plan)

    classify = with_fallback(llm_plan, rules_plan, name="classify")
    try:
        answer = await classify.run("why did auth fail?")
    finally:
        await llm.aclose()
        server.stop()
    if mode == "valid":
        assert (answer.value, answer.source, answer.llm_error) == (Plan.model_validate(GOOD_PLAN), "llm", None)
        return
    assert answer.value is RULES_PLAN and answer.source == "rules"
    assert isinstance(answer.llm_error, EXPECTED_ERROR[mode])
    if mode.startswith("http_"):
        assert len(server.requests) == 3  # one call and two retries
    assert "classify: LLM failed" in caplog.text
    assert OPENAI_KEY not in caplog.text and ANTHROPIC_KEY not in caplog.text
