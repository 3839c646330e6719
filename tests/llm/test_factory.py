"""Choosing an LLM from configuration: off by default, the spec's environment names, keys
kept out of reprs and errors, providers registered like the embedders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from polyg.config import load_settings
from polyg.errors import ConfigError
from polyg.llm import LLM, Message, available_llm_providers, create_llm, register_llm
from polyg.llm.anthropic import ANTHROPIC_BASE_URL, AnthropicLLM
from polyg.llm.openai_compat import OLLAMA_BASE_URL, OPENAI_BASE_URL, OllamaLLM, OpenAICompatLLM
from polyg.runtime.providers import llm_from_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.llm.conftest import GOOD_PLAN, Plan

LLM_VARS = (
    "LLM_PROVIDER",
    "LLM_MODEL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OLLAMA_BASE_URL",
    "POLYG_LLM_PROVIDER",
    "POLYG_LLM_MODEL",
    "POLYG_LLM_BASE_URL",
    "POLYG_LLM_API_KEY",
    "POLYG_LLM_TIMEOUT_S",
    "POLYG_LLM_MAX_RETRIES",
    "POLYG_CONFIG",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in LLM_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user config file


def test_off_by_default_even_with_keys_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-present-but-unused")
    settings = load_settings()
    assert settings.llm_provider == "none"
    assert llm_from_settings(settings) is None
    assert create_llm() is None and create_llm("none") is None


def test_spec_environment_names_select_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("LLM_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123")
    monkeypatch.setenv("POLYG_LLM_TIMEOUT_S", "7.5")
    llm = llm_from_settings(load_settings())
    assert isinstance(llm, OpenAICompatLLM)
    assert (llm.model_id, llm.base_url, llm.timeout_s, llm.max_retries) == ("gpt-4o-mini", OPENAI_BASE_URL, 7.5, 2)
    assert "sk-from-env-123" not in repr(llm)


def test_anthropic_takes_its_own_key_and_polyg_key_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    llm = llm_from_settings(load_settings())
    assert isinstance(llm, AnthropicLLM) and llm.base_url == ANTHROPIC_BASE_URL
    assert llm._headers(llm._api_key)["x-api-key"] == "sk-ant-env"
    monkeypatch.setenv("POLYG_LLM_API_KEY", "sk-ant-polyg")
    llm = llm_from_settings(load_settings())
    assert llm is not None and llm._api_key == "sk-ant-polyg"


def test_ollama_needs_no_key_and_reads_ollama_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "ollama")
    llm = llm_from_settings(load_settings())
    assert isinstance(llm, OllamaLLM) and llm.base_url == OLLAMA_BASE_URL and llm.model_id == "llama3.2"
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434")
    llm = llm_from_settings(load_settings(llm_model="qwen2.5"))
    assert llm is not None and (llm.base_url, llm.model_id) == ("http://gpu-box:11434/v1", "qwen2.5")


def test_keys_never_show_in_settings_reprs_or_config_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-anthropic")
    monkeypatch.setenv("POLYG_LLM_API_KEY", "sk-secret-polyg")
    settings = load_settings()
    for text in (repr(settings), str(settings), str(settings.model_dump())):
        assert "sk-secret" not in text
    monkeypatch.setenv("POLYG_LLM_TIMEOUT_S", "-1")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "POLYG_LLM_TIMEOUT_S" in str(caught.value) and "sk-secret" not in str(caught.value)


def test_missing_keys_and_unknown_providers_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="openai LLM provider needs an API key"):
        create_llm("openai")
    with pytest.raises(ConfigError, match="anthropic LLM provider needs an API key"):
        create_llm("anthropic")
    with pytest.raises(ConfigError, match="unknown LLM provider 'gpt5'"):
        create_llm("gpt5")
    with pytest.raises(ConfigError, match="time limit must be positive"):
        create_llm("ollama", timeout_s=0)
    with pytest.raises(ConfigError, match="llm_provider"):
        load_settings(llm_provider="gpt5")
    # A self-hosted OpenAI-compatible server (vLLM, LM Studio) needs no key.
    llm = create_llm("openai", base_url="http://127.0.0.1:1234/v1", model="local")
    assert isinstance(llm, OpenAICompatLLM) and llm._api_key is None


class _ScriptedLLM(LLM):
    """A provider from outside the package: answers from a fixed list, over no network."""

    provider = "scripted"

    def _endpoint(self) -> str:
        return self.base_url

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {}

    def _body(self, messages: Sequence[Message], schema: type[BaseModel], max_tokens: int) -> dict[str, Any]:
        return {"messages": list(messages)}

    def _answer(self, payload: Any) -> str | dict[str, Any]:
        return str(payload["choices"][0]["message"]["content"])


@pytest.mark.anyio
async def test_a_registered_provider_is_built_by_the_factory() -> None:
    def factory(
        *, model: str | None, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int
    ) -> LLM:
        return _ScriptedLLM(base_url=base_url or "", model=model or "scripted", timeout_s=timeout_s)

    register_llm("Scripted", factory)
    assert "scripted" in available_llm_providers()
    with FakeOpenAIServer(chat_replies=[json.dumps(GOOD_PLAN)]) as srv:
        llm = create_llm("scripted", base_url=srv.base_url + "/chat/completions", timeout_s=3)
        assert isinstance(llm, _ScriptedLLM) and llm.timeout_s == 3
        try:
            assert await llm.complete_json([{"role": "user", "content": "q"}], Plan) == Plan.model_validate(GOOD_PLAN)
        finally:
            await llm.aclose()
