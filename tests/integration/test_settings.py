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


# ------------------------------------------------------------------ mistakes refused at startup


def test_an_unknown_keyword_is_a_type_error_naming_the_closest() -> None:
    from litellm_reasoning import ReasoningCallback

    with pytest.raises(TypeError, match=r"'stor' \(did you mean 'store'\?\)"):
        ReasoningCallback(stor="memory://")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"'namspace' \(did you mean 'namespace'\?\)"):
        ReasoningCallback(namspace="acme")  # type: ignore[call-arg]
    # what LiteLLM's CustomLogger itself takes still passes through
    assert ReasoningCallback(turn_off_message_logging=True).turn_off_message_logging is True


def test_an_unknown_environment_variable_is_warned_about_once_with_the_closest_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    environ = {"LITELLM_REASONING_STROE": "memory://", "LITELLM_REASONING_NAMESPACE": "x"}
    with caplog.at_level(logging.WARNING, logger="litellm_reasoning"):
        settings = Settings.load({}, environ)
        Settings.load({}, environ)
    assert settings.namespace == "x"
    lines = [r.getMessage() for r in caplog.records if "STROE" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "did you mean 'LITELLM_REASONING_STORE'" in lines[0]


@pytest.mark.parametrize("word", ["maybe", "on", "t", "enabled"])
@pytest.mark.parametrize(
    "variable",
    [
        "LITELLM_REASONING_LEGACY_KEYS",
        "LITELLM_REASONING_SCOPE_FROM_CLIENT",
        "LITELLM_REASONING_PATCH_LITELLM",
    ],
)
def test_a_boolean_takes_only_true_false_1_0_yes_no(word: str, variable: str) -> None:
    from litellm_reasoning.settings import SettingsError

    with pytest.raises(SettingsError, match="not a boolean"):
        Settings.load({}, {variable: word})
    for fine in ("true", "False", "1", "0", "yes", "NO"):
        Settings.load({}, {variable: fine})


def test_patch_switch_read_by_the_callback_is_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    from litellm_reasoning import ReasoningCallback

    monkeypatch.setenv("LITELLM_REASONING_PATCH_LITELLM", "maybe")
    with pytest.raises(ValueError, match="LITELLM_REASONING_PATCH_LITELLM='maybe'"):
        ReasoningCallback()


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("redis://127.0.0.1:6379/0?tll=60", r"'tll' .*did you mean 'ttl'"),
        ("redis://127.0.0.1:6379/0?socket_timout=1", r"did you mean 'socket_timeout'"),
        ("redis://127.0.0.1:6379/0?socket_timeout=soon", "socket_timeout"),
        ("sqlite:/tmp/reasoning.db", "three slashes"),
    ],
)
def test_a_bad_store_url_stops_startup_before_the_first_request(url: str, named: str) -> None:
    """Found by the URL check, never by the first write inside redis-py (which the fail-open
    layer would have taken for an outage)."""
    from litellm_reasoning import ReasoningCallback

    with pytest.raises(ValueError, match=named):
        Settings.load({"store": url}, {})
    with pytest.raises(ValueError, match=named):
        ReasoningCallback(store=url)
    # redis-py's own options still pass
    Settings.load({"store": "redis://127.0.0.1:6379/0?health_check_interval=30&ttl=60"}, {})


def test_a_mistake_in_the_section_is_one_line_with_the_closest_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(litellm, "callback_settings", {"litellm_reasoning": {"namspace": "x"}})
    with pytest.raises(RuntimeError) as raised:
        callback_from_environment()
    text = str(raised.value)
    assert "'namspace'" in text and "did you mean 'namespace'" in text
    assert "\n" not in text


def test_the_startup_line_says_whether_the_native_accelerator_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where it was not built (no C compiler, the pure wheel) the operator reads it there."""
    from litellm_reasoning import accelerator
    from litellm_reasoning import settings as settings_module

    settings = Settings.load({}, {})
    callback = litellm_reasoning.ReasoningCallback()
    line = settings_module.startup_line(callback, settings)
    expected = "native accelerator" if accelerator.NATIVE is not None else "pure Python"
    assert f"; {expected}" in line
    monkeypatch.setattr(accelerator, "NATIVE", None)
    assert settings_module.startup_line(callback, settings).endswith(
        "; pure Python (no accelerator)"
    )
