import logging
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel

from bot.config import ConfigError, ConfigStore, load_settings
from bot.config.loader import parse_settings
from bot.config.settings import Settings
from bot.web.config import is_secret

REPO_CONFIG = Path(__file__).resolve().parents[3] / "config.toml"


def test_unknown_key_names_key_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[bot]\nname = 'x'\n\n[reply]\nprobabilty = 0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert f"{path}:5: reply.probabilty: unknown key" in str(info.value)


def test_wrong_type_and_out_of_range_name_key_and_line() -> None:
    text = "[reply]\nprobability = 1.5\n\n[context]\ntotal_tokens = 'many'\n"
    with pytest.raises(ConfigError) as info:
        parse_settings(text, "cfg.toml", env={})
    message = str(info.value)
    assert "cfg.toml:2: reply.probability: Input should be less than or equal to 1" in message
    assert "cfg.toml:5: context.total_tokens:" in message


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_data_dir_is_an_error_naming_key_and_line(blank: str) -> None:
    """`data_dir = ""` silently meant the working directory: the database and notes were made wherever
    the bot happened to start."""
    with pytest.raises(ConfigError) as info:
        parse_settings(f"[bot]\nname = 'x'\n\n[storage]\ndata_dir = \"{blank}\"\n", "cfg.toml", env={})
    assert 'cfg.toml:5: storage.data_dir: empty; name a folder ("." for the working directory)' in str(
        info.value
    )
    assert parse_settings("[storage]\ndata_dir = '.'\n", "cfg.toml", env={}).storage.data_dir == "."


def test_a_misspelt_llm_task_table_names_file_line_key_and_the_tasks(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text = "[llm]\nenabled = false\n\n[llm.budgets.jargn]\ntokens_per_hour = 5\n\n"
    text += "[llm.tasks.sumary]\nmodel = 'm'\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    known = "the tasks are reply, topic, summary, jargon, person"
    assert f"{path}:4: llm.budgets.jargn: unknown task ({known})" in str(info.value)
    assert f"{path}:7: llm.tasks.sumary: unknown task ({known})" in str(info.value)


def test_broken_toml_is_reported() -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        parse_settings("[bot\nname=", "cfg.toml", env={})


def test_a_file_saved_with_a_byte_order_mark_loads_and_keeps_its_line_numbers(tmp_path: Path) -> None:
    """Windows Notepad saves UTF-8 with a BOM; TOML refused the invisible character as "Invalid
    statement (at line 1, column 1)", a line that looks fine."""
    path = tmp_path / "config.toml"
    path.write_bytes("\ufeff[bot]\nname = '小助手'\n".encode())
    assert load_settings(path, env={}).bot.name == "小助手"
    path.write_bytes("\ufeff[bot]\nname = '小助手'\n\n[reply]\nprobabilty = 0.5\n".encode())
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert f"{path}:5: reply.probabilty: unknown key" in str(info.value)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml", env={})


def test_environment_overrides_the_file() -> None:
    settings = parse_settings(
        "[bot]\nname = 'file'\n", "c", env={"QUNYI__BOT__NAME": "env", "QUNYI__REPLY__PROBABILITY": "0.25"}
    )
    assert settings.bot.name == "env"
    assert settings.reply.probability == 0.25


def test_string_settings_take_environment_values_as_written() -> None:
    env = {
        "QUNYI__WEB__TOKEN": "123456",
        "QUNYI__BOT__SELF_ID": "10001",
        "QUNYI__ADAPTERS__ONEBOT_V11__ACCESS_TOKEN": "20240101",
        "QUNYI__LLM__API_KEY": "true",
        "QUNYI__LLM__TASKS__JARGON__API_KEY": "0x1F",
        "QUNYI__ADAPTERS__TELEGRAM__TOKEN": '"quoted"',
    }
    settings = parse_settings("", "c", env=env)
    assert settings.web.token == "123456"
    assert settings.bot.self_id == "10001"
    assert settings.adapters.onebot_v11.access_token == "20240101"
    assert settings.llm.api_key == "true"
    assert settings.llm.tasks["jargon"].api_key == "0x1F"
    assert settings.adapters.telegram is not None and settings.adapters.telegram.token == '"quoted"'


def test_other_settings_parse_environment_values_as_toml() -> None:
    env = {
        "QUNYI__REPLY__ENABLED": "false",
        "QUNYI__BOT__ALIASES": '["小忆", "10001"]',
        "QUNYI__LLM__BUDGETS__JARGON__TOKENS_PER_HOUR": "5_000",
        "QUNYI__LOGGING__LEVEL": "DEBUG",
    }
    settings = parse_settings("", "c", env=env)
    assert settings.reply.enabled is False
    assert settings.bot.aliases == ["小忆", "10001"]
    assert settings.llm.budgets["jargon"].tokens_per_hour == 5000
    assert settings.logging.level == "DEBUG"
    with pytest.raises(ConfigError, match=r"reply\.probability"):
        parse_settings("", "c", env={"QUNYI__REPLY__PROBABILITY": "lots"})


def test_bad_reload_keeps_old_settings(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[reply]\nprobability = 0.1\n", encoding="utf-8")
    store = ConfigStore.load(path)
    seen = []
    store.subscribe(lambda old, new: seen.append((old.reply.probability, new.reply.probability)))
    path.write_text("[reply]\nprobability = 7\n", encoding="utf-8")
    assert store.reload() is False
    assert store.current.reply.probability == 0.1
    path.write_text("[reply]\nprobability = 0.3\n", encoding="utf-8")
    assert store.reload() is True
    assert store.current.reply.probability == 0.3
    assert seen == [(0.1, 0.3)]


def test_a_reload_without_a_config_file_says_it_read_the_defaults(caplog: pytest.LogCaptureFixture) -> None:
    """The bot started without a config file logged "config reloaded from None" on `qunyi reload`."""
    store = ConfigStore.load(None)
    with caplog.at_level(logging.INFO, logger="bot.config.store"):
        assert store.reload() is True
    assert "config reloaded from the built-in defaults (no config file)" in caplog.messages


def test_shipped_config_is_the_default() -> None:
    assert load_settings(REPO_CONFIG, env={}) == load_settings(None, env={})


def test_a_bad_environment_value_is_blamed_on_its_variable_not_on_the_files_line() -> None:
    text = "[reply]\nprobability = 0.0\n[bot]\nname = 'ok'\n"
    env = {"QUNYI__REPLY__PROBABILITY": "lots", "QUNYI__BOT__ALIASES": "x"}
    with pytest.raises(ConfigError) as caught:
        parse_settings(text, "cfg.toml", env=env)
    message = str(caught.value)
    assert "environment variable QUNYI__REPLY__PROBABILITY: reply.probability" in message
    assert "environment variable QUNYI__BOT__ALIASES: bot.aliases" in message
    assert "cfg.toml:2" not in message
    with pytest.raises(ConfigError, match=r"cfg\.toml:2: reply\.probability"):
        parse_settings("[reply]\nprobability = 7\n", "cfg.toml", env={"QUNYI__BOT__NAME": "x"})


def test_an_openai_embedder_without_its_endpoint_is_a_config_error_not_a_traceback() -> None:
    expected = r'cfg\.toml:1: recall: .*embedder = "openai" needs base_url and model'
    with pytest.raises(ConfigError, match=expected):
        parse_settings('[recall]\nembedder = "openai"\n', "cfg.toml", env={})
    with pytest.raises(ConfigError, match=r"needs model"):
        parse_settings('[recall]\nembedder = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n', "c", env={})
    text = '[recall]\nembedder = "openai"\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n'
    assert parse_settings(text, "c", env={}).recall.model == "m"


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def test_every_secret_setting_is_left_out_of_reprs() -> None:
    """A token or key must not reach a log line or a traceback through the settings' repr; the web
    console's notion of a secret key decides which fields those are."""
    seen: set[type[BaseModel]] = set()
    shown: list[str] = []
    todo: list[type[BaseModel]] = [Settings]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, field in model.model_fields.items():
            if is_secret(name) and field.repr:
                shown.append(f"{model.__name__}.{name}")
            todo.extend(_models_in(field.annotation))
    assert {"TelegramConfig", "DiscordConfig", "OneBotConfig", "WebSettings"} <= {m.__name__ for m in seen}
    assert shown == []


def test_an_adapter_listed_twice_is_a_config_error_naming_it(tmp_path: Path) -> None:
    """Listed twice, the console read stdin twice (each line went to one of them) and the playground's
    second copy failed to bind its port at start with a message that did not say why."""
    path = tmp_path / "config.toml"
    path.write_text('[adapters]\nenabled = ["console", "playground", "console"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert f"{path}:2: adapters.enabled: Value error, 'console' listed more than once" in str(info.value)
    path.write_text('[adapters]\nenabled = ["console", "playground"]\n', encoding="utf-8")
    assert load_settings(path, env={}).adapters.enabled == ["console", "playground"]


def test_a_file_not_in_utf8_names_the_line_and_says_to_save_it_as_utf8(tmp_path: Path) -> None:
    """A config saved as GBK (an older Notepad's "ANSI" on a Chinese system) was refused with
    "'utf-8' codec can't decode byte 0xd6 in position 24", a byte offset no editor shows; one written
    by PowerShell's `>` (UTF-16) the same at position 0."""
    path = tmp_path / "config.toml"
    path.write_bytes("[bot]\nself_id = 'bot'\nname = '小助手'\n".encode("gbk"))
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert str(info.value).startswith(
        f"{path}:3: byte 0xd6 at column 11 is not UTF-8; save the file as UTF-8"
    )
    path.write_text("[bot]\nname = 'x'\n", encoding="utf-16")
    with pytest.raises(ConfigError, match=r"saved as UTF-16; save it as UTF-8"):
        load_settings(path, env={})
    path.write_text("[bot]\nname = '小助手'\n", encoding="utf-8")
    assert load_settings(path, env={}).bot.name == "小助手"


@pytest.mark.parametrize(
    "url", ["127.0.0.1:3001", "ws//127.0.0.1:3001", "ftp://127.0.0.1:3001", "ws://:3001"]
)
def test_a_onebot_forward_url_that_is_no_websocket_address_is_a_config_error(url: str) -> None:
    """forward_url = "127.0.0.1:3001" (the address NapCat's page shows, without ws://) started: the
    adapter dialled it for ever, logging "OneBot forward connect to 127.0.0.1:3001 failed: 127.0.0.1:3001"."""
    text = f'[adapters.onebot_v11]\nmode = "forward"\nforward_url = "{url}"\n'
    with pytest.raises(ConfigError) as info:
        parse_settings(text, "cfg.toml", env={})
    assert (
        "cfg.toml:1: adapters.onebot_v11: Value error, forward_url must be a WebSocket address such as"
        in str(info.value)
    )


def test_onebot_forward_urls_of_each_scheme_load() -> None:
    for url in ("ws://127.0.0.1:3001", "wss://napcat.example.com/ws", "http://[::1]:3001/", "WS://host"):
        text = f'[adapters.onebot_v11]\nmode = "forward"\nforward_url = "{url}"\n'
        assert parse_settings(text, "cfg.toml", env={}).adapters.onebot_v11.forward_url == url


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.2"])
def test_a_onebot_reverse_server_off_loopback_without_an_access_token_is_a_config_error(host: str) -> None:
    """host = "0.0.0.0" without access_token started a server that took any connection: a client on the
    network posed as the bot's QQ account, posted "/recall 密码" as a member of any group and read the
    answer, that group's memory, in the bot's send_group_msg."""
    text = f'[adapters.onebot_v11]\nhost = "{host}"\n'
    with pytest.raises(ConfigError) as info:
        parse_settings(text, "cfg.toml", env={})
    refusal = f"cfg.toml:1: adapters.onebot_v11: Value error, host '{host}' is not a loopback address: set"
    assert refusal in str(info.value)
    with_token = parse_settings(text, "cfg.toml", env={"QUNYI__ADAPTERS__ONEBOT_V11__ACCESS_TOKEN": "t0ken"})
    assert with_token.adapters.onebot_v11.access_token == "t0ken"
    for local in ("127.0.0.1", "localhost", "::1"):
        loopback = f'[adapters.onebot_v11]\nhost = "{local}"\n'
        assert parse_settings(loopback, "cfg.toml", env={}).adapters.onebot_v11.host == local
    dialling = 'mode = "forward"\nforward_url = "ws://192.0.2.9:3001"'
    forward = f'[adapters.onebot_v11]\n{dialling}\nhost = "{host}"\n'
    assert parse_settings(forward, "cfg.toml", env={}).adapters.onebot_v11.mode == "forward"


def test_numeric_date_order_takes_its_two_values_and_names_them_when_wrong() -> None:
    assert parse_settings("", "cfg.toml", env={}).recall.numeric_date_order == "month_first"
    day_first = parse_settings("[recall]\nnumeric_date_order = 'day_first'\n", "cfg.toml", env={})
    assert day_first.recall.numeric_date_order == "day_first"
    with pytest.raises(ConfigError) as info:
        parse_settings("[recall]\nnumeric_date_order = 'dmy'\n", "cfg.toml", env={})
    assert "cfg.toml:2: recall.numeric_date_order: Input should be 'month_first' or 'day_first'" in str(
        info.value
    )


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("commands_per_member = -1", "reply.commands_per_member: Input should be greater than or equal to 0"),
        ("commands_per_member = 2.5", "reply.commands_per_member: Input should be a valid integer"),
        (
            "commands_window_seconds = 0",
            "reply.commands_window_seconds: Input should be greater than or equal to 1",
        ),
        (
            "commands_window_seconds = nan",
            "reply.commands_window_seconds: Input should be less than or equal to",
        ),
    ],
)
def test_the_members_command_limit_refuses_what_it_cannot_count_naming_key_and_line(
    line: str, error: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(f"[reply]\n{line}\n", "cfg.toml", env={})
    assert f"cfg.toml:2: {error}" in str(info.value)
    unlimited = parse_settings("[reply]\ncommands_per_member = 0\n", "cfg.toml", env={}).reply
    assert (unlimited.commands_per_member, unlimited.commands_window_seconds) == (0, 60.0)
