"""The proxy's settings: config section and environment, validated at startup."""

from __future__ import annotations

import litellm
import pytest

import litellm_reasoning
from litellm_reasoning.settings import Settings, callback_from_environment


def test_environment_overrides_the_config_section() -> None:
    settings = Settings.load(
        {"namespace": "from-config", "policies": {"zai/*": "all_turns"}},
        {
            "LITELLM_REASONING_NAMESPACE": "from-env",
            "LITELLM_REASONING_CAPTURE_WAIT_SECONDS": "0.5",
        },
    )
    assert settings.namespace == "from-env"
    assert settings.capture_wait_seconds == 0.5
    assert settings.policies["zai/*"].value == "all_turns"


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"LITELLM_REASONING_POLICIES": '{"x": "sometimes"}'}, "policies"),
        ({"LITELLM_REASONING_DIALECTS": '{"x": "klingon"}'}, "klingon"),
        ({"LITELLM_REASONING_DIALECTS": "not json"}, "LITELLM_REASONING_DIALECTS"),
        ({"LITELLM_REASONING_CAPTURE_WAIT_SECONDS": "-1"}, "capture_wait_seconds"),
        ({"LITELLM_REASONING_LOG_LEVEL": "LOUD"}, "LOUD"),
    ],
)
def test_a_bad_setting_fails_at_startup_naming_it(
    environ: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(RuntimeError, match=named):
        callback_from_environment()


def test_proxy_config_section_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """`callback_settings: litellm_reasoning:` in config.yaml reaches the instance."""
    monkeypatch.setattr(
        litellm,
        "callback_settings",
        {"litellm_reasoning": {"namespace": "team-a", "dialects": {"my-*": "no_reasoning"}}},
    )
    callback = callback_from_environment()
    assert callback.namespace == "team-a"
    assert [o.dialect for o in callback.overrides] == ["no_reasoning"]


def test_unknown_key_in_the_section_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litellm, "callback_settings", {"litellm_reasoning": {"stor": "x"}})
    with pytest.raises(RuntimeError, match="stor"):
        callback_from_environment()


def test_the_proxy_default_store_is_sqlite(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """The proxy's instance keeps reasoning in an embedded SQLite file unless told otherwise."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Settings.load({}, {}).store.startswith("sqlite:///")
    assert str(tmp_path) in Settings.load({}, {}).store


def test_the_proxy_attribute_is_one_ready_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """`litellm_reasoning.callback` is an instance, the same on every access, even after the
    module that defines the class has been imported."""
    from litellm_reasoning import ReasoningCallback

    monkeypatch.setenv("LITELLM_REASONING_STORE", "memory://")
    first = litellm_reasoning.callback
    assert isinstance(first, ReasoningCallback)
    assert litellm_reasoning.callback is first


@pytest.mark.parametrize(
    ("sections", "named"),
    [
        ({"litellm-reasoning": {"namespace": "x"}}, "litellm-reasoning"),
        ({"litellm_reasoning": "store: redis://x"}, "not a mapping"),
        ({"litellm_reasoning": {"store": "mongodb://x"}}, "mongodb"),
        ({"litellm_reasoning": {"store": "redis://h:6379/0?ttl=-5"}}, "ttl"),
        ({"litellm_reasoning": {"store": "sqlite:///x.db?colour=red"}}, "colour"),
    ],
)
def test_a_mistake_in_the_config_section_stops_startup_naming_it(
    sections: dict[str, object], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(litellm, "callback_settings", sections)
    with pytest.raises(RuntimeError, match="invalid setting") as raised:
        callback_from_environment()
    assert named in str(raised.value)


def test_the_proxy_instance_logs_through_litellms_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    from litellm._logging import handler

    package = logging.getLogger("litellm_reasoning")
    level = package.level
    monkeypatch.setattr(litellm, "callback_settings", {"litellm_reasoning": {"log_level": "INFO"}})
    try:
        callback_from_environment()
        assert handler in package.handlers
        assert package.level == logging.INFO
    finally:
        package.removeHandler(handler)
        package.setLevel(level)
