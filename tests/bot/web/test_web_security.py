"""Access to the console: token, cookie login, CSRF, loopback binding."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from click.testing import CliRunner
from pydantic import ValidationError

from bot.app import build_app
from bot.cli.main import cli
from bot.config import ConfigStore
from bot.config.settings import Settings, WebSettings
from bot.web.app import build_web_app
from bot.web.security import COOKIE, FLASH_COOKIE, Credentials, check_host, is_loopback
from memory.clock import ManualClock
from memory.jargon import dictionary
from tests.bot.web.conftest import TOKEN, Console
from tests.conftest import T0
from tests.memory.jargon.jargon_helpers import mine, record

FLASH = re.compile(r'<p class="flash">(.*?)</p>')


async def test_every_page_needs_the_token(console: Console) -> None:
    client = console.client
    for path in ("/", "/jargon", "/config", "/usage"):
        assert (await client.get(path)).status == 401
    assert (await client.get("/", headers={"Authorization": "Bearer wrong"})).status == 401
    assert (await client.get("/?token=wrong")).status == 401
    api = await client.get("/api/jargon")
    assert api.status == 401 and "error" in await api.json()
    assert (await client.get("/", headers={"Authorization": f"Bearer {TOKEN}"})).status == 200
    assert not client.session.cookie_jar.filter_cookies(client.make_url("/")), (
        "a Bearer request sets no cookie"
    )


async def test_token_login_sets_an_httponly_strict_cookie_and_drops_the_token_from_the_url(
    console: Console,
) -> None:
    response = await console.client.get(f"/jargon?status=candidate&token={TOKEN}", allow_redirects=False)
    assert response.status == 200
    assert response.headers["Refresh"] == "0; url=/jargon?status=candidate"
    cookie = response.cookies[COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    assert TOKEN not in cookie.value
    assert (await console.client.get("/jargon")).status == 200
    page = await console.client.get("/config")
    assert "Content-Security-Policy" in page.headers and page.headers["X-Frame-Options"] == "DENY"


async def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(console: Console) -> None:
    ids = await record(console.app.memory, 0, ["xswl 笑死", "真的xswl"])
    entry = await mine(console.app.memory, await console.chat_id(), "xswl", ids)
    csrf = await console.login()
    client = console.client
    assert (await client.post(f"/jargon/{entry}/approve", data={"meaning": "x"})).status == 403
    assert (await client.post(f"/jargon/{entry}/approve", data={"_csrf": "0" * 64})).status == 403
    api = await client.post("/api/jargon/decide", json={"ids": [entry], "action": "approve"})
    assert api.status == 403, "a cookie-authenticated API change needs the CSRF header too"
    async with console.app.db.read() as session:
        assert (await dictionary.get(session, entry)).status == "candidate"  # type: ignore[union-attr]
    ok = await client.post(f"/jargon/{entry}/approve", data={"_csrf": csrf})
    assert ok.status == 200
    async with console.app.db.read() as session:
        assert (await dictionary.get(session, entry)).status == "approved"  # type: ignore[union-attr]


async def test_a_request_naming_another_host_is_refused_even_with_the_token(
    console: Console, tmp_path: Path
) -> None:
    """A page of another site that a DNS rebinding points at 127.0.0.1 sends its own name."""
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    refused = await console.client.get("/api/jargon", headers={**bearer, "Host": "evil.example:8765"})
    assert refused.status == 403 and "loopback" in (await refused.json())["error"]
    for host in ("localhost:8765", "127.0.0.1", "[::1]:8765"):
        assert (await console.client.get("/", headers={**bearer, "Host": host})).status == 200, host
    config = tmp_path / "remote.toml"
    config.write_text('[web]\nhost = "0.0.0.0"\nallow_remote = true\n', encoding="utf-8")
    app = await build_app(ConfigStore.load(config), tmp_path / "remote", ManualClock(T0), watch_config=False)
    client = TestClient(TestServer(build_web_app(app, TOKEN), host="127.0.0.1"))
    await client.start_server()
    try:
        named = await client.get("/", headers={**bearer, "Host": "bot.example.org"})
    finally:
        await client.close()
        await app.close()
    assert named.status == 200, "allow_remote: the console may be reached by any name"


def test_loopback_hosts() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.5", "::", "example.com"))
    check_host("0.0.0.0", allow_remote=True)
    with pytest.raises(ValueError, match="allow_remote"):
        check_host("0.0.0.0", allow_remote=False)


def test_a_non_loopback_host_is_refused_without_allow_remote() -> None:
    with pytest.raises(ValidationError, match="allow_remote"):
        Settings.model_validate({"web": {"host": "0.0.0.0"}})
    assert Settings.model_validate({"web": {"host": "0.0.0.0", "allow_remote": True}}).web.host == "0.0.0.0"
    assert WebSettings().host == "127.0.0.1" and WebSettings().port == 8765
    result = CliRunner().invoke(cli, ["web", "--host", "192.168.1.5"])
    assert result.exit_code != 0 and "not a loopback address" in result.output


def test_a_port_in_use_is_a_one_line_error_naming_the_setting(tmp_path: Path, taken_port: int) -> None:
    """It said which address, not which setting to change."""
    data = str(tmp_path / "data")
    given = CliRunner().invoke(cli, ["web", "--port", str(taken_port), "--data-dir", data])
    config = tmp_path / "config.toml"
    config.write_text(f"[web]\nport = {taken_port}\n", encoding="utf-8")
    configured = CliRunner().invoke(cli, ["web", "--config", str(config), "--data-dir", data])
    for result, setting in ((given, "--port"), (configured, "[web] port")):
        assert result.exit_code == 1
        assert isinstance(result.exception, SystemExit), result.exception
        assert result.output == (
            f"Error: cannot listen on 127.0.0.1:{taken_port} (Address already in use); another program "
            f"holds that port: change {setting}\n"
        )


async def _raw_status(console: Console, request: bytes) -> int:
    """The status of a request sent as raw bytes (a client library would refuse non-UTF-8 headers)."""
    server = console.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(request)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    return int(status_line.split()[1])


async def test_credentials_with_bytes_that_are_not_utf8_are_refused_not_a_server_error(
    console: Console,
) -> None:
    csrf = await console.login()
    session = console.client.session.cookie_jar.filter_cookies(console.client.make_url("/"))[COOKIE].value
    start = b"Host: 127.0.0.1\r\nConnection: close\r\n"
    for path, header, status in (
        (b"GET /", b"Authorization: Bearer \xff\xfe", 401),
        (b"GET /api/jargon", b"Authorization: Bearer \xff\xfe", 401),
        (b"GET /", b"Cookie: qunyi_session=\xff\xfe", 401),
        (
            b"POST /config/reload",
            b"Cookie: qunyi_session=" + session.encode() + b"\r\nX-CSRF-Token: \xff",
            403,
        ),
    ):
        request = path + b" HTTP/1.1\r\n" + start + header + b"\r\nContent-Length: 0\r\n\r\n"
        assert await _raw_status(console, request) == status, (path, header)
    ok = b"Cookie: qunyi_session=" + session.encode() + b"\r\nX-CSRF-Token: " + csrf.encode()
    request = b"POST /config/reload HTTP/1.1\r\n" + start + ok + b"\r\nContent-Length: 0\r\n\r\n"
    assert await _raw_status(console, request) == 303


async def _raw_location(console: Console, request: bytes, header: str = "Location") -> str:
    server = console.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(request)
    await writer.drain()
    head = (await reader.read()).split(b"\r\n\r\n")[0].decode("latin-1")
    writer.close()
    await writer.wait_closed()
    value = next(line.split(": ", 1)[1] for line in head.split("\r\n") if line.startswith(f"{header}: "))
    return value.removeprefix("0; url=")


async def test_redirects_never_leave_the_console(console: Console) -> None:
    ids = await record(console.app.memory, 0, ["xswl 笑死", "真的xswl"])
    entry = await mine(console.app.memory, await console.chat_id(), "xswl", ids)
    for path in (b"//evil.example/", b"///evil.example/x", b"/\\evil.example/"):
        login = b"GET " + path + b"?token=" + TOKEN.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        location = await _raw_location(console, login + b"Connection: close\r\n\r\n", "Refresh")
        assert location.startswith("/") and location[1:2] not in ("/", "\\"), (path, location)
    csrf = await console.login()
    for back in (
        "//evil.example/",
        "/\t/evil.example/",
        "/\n/evil.example/",
        "/\\evil.example/",
        "http://evil.example/",
    ):
        response = await console.client.post(
            "/jargon/batch",
            data={"_csrf": csrf, "action": "approve", "ids": [str(entry)], "back": back},
            allow_redirects=False,
        )
        location = response.headers["Location"]
        assert response.status == 303 and location.startswith("/") and location[1:2] not in ("/", "\\"), back
    kept = await console.client.post(
        "/jargon/batch",
        data={"_csrf": csrf, "action": "reject", "ids": [str(entry)], "back": "/jargon?status=candidate"},
        allow_redirects=False,
    )
    assert kept.headers["Location"] == "/jargon?status=candidate"


async def test_a_malformed_or_oversized_form_is_a_clear_error_not_a_server_error(console: Console) -> None:
    csrf = await console.login()
    form = "application/x-www-form-urlencoded"
    bodies = (
        ("multipart/form-data", b"no boundary"),
        ("multipart/form-data; boundary=XX", b"not the boundary"),
        (f"{form}; charset=no-such-charset", f"_csrf={csrf}&content=x".encode()),
    )
    for auth in ({}, {"Authorization": f"Bearer {TOKEN}"}):
        for content_type, body in bodies:
            response = await console.client.post(
                "/jargon/add", data=body, headers={"Content-Type": content_type, **auth}
            )
            text = await response.text()
            assert response.status == 400 and "the form could not be read" in text, (content_type, auth)
            assert "Qunyi admin" in text
    huge = await console.client.post(
        "/jargon/import",
        data=f"_csrf={csrf}&format=csv&text=" + "x" * (2 * 1024 * 1024),
        headers={"Content-Type": form},
    )
    assert huge.status == 413 and huge.content_type == "text/html"
    assert "Maximum request body size" in await huge.text()
    async with console.app.db.read() as session:
        assert await dictionary.list_entries(session) == []


async def test_a_flash_message_is_shown_once_and_never_taken_from_the_address(console: Console) -> None:
    """The message after an action came from `?msg=` in the address: a reload or a bookmark showed
    "approved" again, and any link could make the console say anything. It is a sealed one-shot
    cookie now, cleared by the page that shows it."""
    ids = await record(console.app.memory, 0, ["xswl 笑死", "真的xswl"])
    entry = await mine(console.app.memory, await console.chat_id(), "xswl", ids)
    csrf = await console.login()
    client = console.client
    approved = await client.post(
        f"/jargon/{entry}/approve", data={"_csrf": csrf, "meaning": "笑死我了"}, allow_redirects=False
    )
    assert approved.status == 303 and approved.headers["Location"] == f"/jargon/{entry}"
    cookie = approved.cookies[FLASH_COOKIE]
    assert (cookie["httponly"], cookie["samesite"], cookie["path"]) == (True, "Strict", "/")
    assert 0 < int(cookie["max-age"]) <= 60
    assert "approved" not in cookie.value, "sealed, not the message in clear"
    shown = await client.get(f"/jargon/{entry}")
    assert FLASH.findall(await shown.text()) == ["approved"]
    assert shown.cookies[FLASH_COOKIE]["max-age"] == "0", "the page that shows it clears it"
    assert FLASH.findall(await (await client.get(f"/jargon/{entry}")).text()) == [], "a reload shows none"
    crafted = await (await client.get(f"/jargon/{entry}?msg=Approved+everything")).text()
    assert FLASH.findall(crafted) == [] and "Approved everything" not in crafted
    for forged in (Credentials("another-token").seal("Approved everything"), "QXBwcm92ZWQ.00", "x"):
        client.session.cookie_jar.update_cookies({FLASH_COOKIE: forged})
        response = await client.get("/jargon")
        assert FLASH.findall(await response.text()) == [], forged
        assert response.cookies[FLASH_COOKIE]["max-age"] == "0", "a cookie that shows nothing goes too"


async def test_member_text_in_a_flash_message_is_isolated(console: Console) -> None:
    """A right-to-left name or term inside a flash message reordered the text after it: it is
    wrapped in FSI … PDI, as `bdi` wraps it in the page."""
    await record(console.app.memory, 0, ["شادي here"])
    chat = await console.chat_id()
    persons = console.app.persons
    assert persons is not None
    [person] = await persons.records(chat)
    csrf = await console.login()
    renamed = await console.client.post(
        f"/chats/{chat}/people/{person.person_id}/rename", data={"_csrf": csrf, "name": "شادي 2"}
    )
    assert FLASH.findall(await renamed.text()) == ["renamed to \u2068شادي 2\u2069"]
    pasted = "content,meaning\nyyds,永远的神\n,معنى\n"
    imported = await console.client.post(
        "/jargon/import", data={"_csrf": csrf, "text": pasted, "format": "csv"}
    )
    [summary] = FLASH.findall(await imported.text())
    assert summary.startswith("imported: 1 created, 0 updated, 1 errors (row 2: \u2068")
    assert summary.endswith("\u2069)")


def test_a_sealed_flash_message_opens_whole_with_its_token_only() -> None:
    credentials = Credentials(TOKEN)
    message = "renamed to 👨‍👩‍👧 阿明哥 <b>"
    sealed = credentials.seal(message)
    assert credentials.unseal(sealed) == message
    data, _, mac = sealed.partition(".")
    assert credentials.unseal(data + "." + mac[::-1]) is None
    assert credentials.unseal(data[:-4] + "." + mac) is None
    assert credentials.unseal(None) is None and credentials.unseal("") is None
    credentials.rotate("rotated-token")
    assert credentials.unseal(sealed) is None, "a new token drops the messages sealed with the old one"


async def test_the_icon_needs_no_token_but_a_loopback_host(console: Console) -> None:
    """Browsers ask every site for /favicon.ico, the login-needed page too: it was a 401, then a 404."""
    icon = await console.client.get("/favicon.ico")
    assert icon.status == 200 and icon.content_type == "image/svg+xml"
    assert icon.headers["Cache-Control"] == "public, max-age=86400"
    assert "default-src 'none'" in icon.headers["Content-Security-Policy"]
    assert (await icon.text()).startswith("<svg xmlns=")
    elsewhere = await console.client.get("/favicon.ico", headers={"Host": "evil.example"})
    assert elsewhere.status == 403
    assert (await console.client.get("/favicon.ico/x")).status == 401, "only the icon itself"
    assert not console.client.session.cookie_jar.filter_cookies(console.client.make_url("/"))
