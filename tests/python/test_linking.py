"""Account linking driven by an independent OAuth client library (Authlib), as Alexa+ drives it:
discovery, the authorization request with PKCE S256, the consent form submitted over HTTP with
a link code from `hearth admin link-code`, the code exchange, a tool call with the household's
own token through the official MCP SDK, refresh with rotation, and reuse detection.

The linked server (MCP_REDIRECT_URIS set) shares its store with the unlinked one, so
`hearth admin` reaches it the same way."""

import asyncio
import html
import re
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.integrations.base_client.errors import OAuthError

from mcp_client import session_flow
from test_households import _admin, _required

SCOPE = "mcp:service"


@pytest.fixture(scope="module")
def linked_url():
    return _required("HEARTH_TEST_LINKED_URL")


@pytest.fixture(scope="module")
def redirect_uri():
    return _required("HEARTH_TEST_REDIRECT_URI")


@pytest.fixture(scope="module")
def metadata(linked_url):
    """The discovery chain: protected-resource metadata, then the authorization server's."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(linked_url))
    resource = requests.get(origin + "/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    assert resource["resource"] == linked_url
    issuer = resource["authorization_servers"][0]
    server = requests.get(issuer + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert server["issuer"] == issuer
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert {"authorization_code", "refresh_token"} <= set(server["grant_types_supported"])
    return server


def _client(client_credentials, redirect_uri, method="client_secret_basic"):
    client_id, client_secret = client_credentials
    return OAuth2Session(
        client_id,
        client_secret,
        scope=SCOPE,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        token_endpoint_auth_method=method,
    )


def _consent(url):
    """GETs the consent page without following redirects; returns the page, its form fields
    and the browser session that holds its cookie."""
    browser = requests.Session()
    page = browser.get(url, allow_redirects=False, timeout=10)
    assert page.status_code == 200, page.text
    # Scripts only from this origin (where passkeys are set up, Sign in with a passkey needs
    # them), never inline or from elsewhere.
    csp = page.headers["content-security-policy"]
    assert "unsafe" not in csp, csp
    for directive in csp.split(";"):
        if directive.strip().startswith(("script-src", "connect-src")):
            assert directive.split()[1:] == ["'self'"], csp
    # The link-code form is the first; the passkey's and sign-up's come after it.
    first_form = page.text.split("</form>", 1)[0]
    fields = {
        name: html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', first_form)
    }
    return page, fields, browser


def _authorize(metadata, client, linked_url, link_code):
    """The person's part: open the authorization URL, enter the code, allow. Returns the
    redirect the client receives, and the verifier."""
    verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier, resource=linked_url
    )
    page, fields, browser = _consent(url)
    assert "Link your household to Hearth" in page.text
    answer = browser.post(
        metadata["authorization_endpoint"],
        data={**fields, "link_code": link_code, "decision": "allow"},
        allow_redirects=False,
        timeout=10,
    )
    assert answer.status_code == 303, answer.text
    location = answer.headers["location"]
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == [state]
    assert query["iss"] == [metadata["issuer"]]
    return location, verifier


def _explain(linked_url, token, action):
    async def steps(session, _init):
        result = await session.call_tool("explain_why", {"action": action})
        return result

    return asyncio.run(session_flow(linked_url, token, steps))


def _record(linked_url, token, action, reason):
    async def steps(session, _init):
        return await session.call_tool(
            "record_decision", {"action": action, "reason": reason, "approver": "Authlib"}
        )

    return asyncio.run(session_flow(linked_url, token, steps))


def test_a_household_links_with_an_oauth_library_and_its_tokens_rotate(
    linked_url, redirect_uri, metadata, client_credentials
):
    household = _admin(linked_url, "household", "create", "Authlib Home")["household_id"]
    link = _admin(linked_url, "link-code", household)
    assert re.fullmatch(r"[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}", link["code"]), link
    assert link["expires_at"].endswith("Z")

    client = _client(client_credentials, redirect_uri)
    location, verifier = _authorize(metadata, client, linked_url, link["code"])
    token = client.fetch_token(
        metadata["token_endpoint"],
        authorization_response=location,
        code_verifier=verifier,
        resource=linked_url,
    )
    assert token["token_type"] == "Bearer" and token["expires_in"] == 3600
    assert token["scope"] == SCOPE
    assert token["refresh_token"].startswith("hrt3.")

    recorded = _record(linked_url, token["access_token"], "warmed the oven", "Sunday roast")
    assert not recorded.is_error, recorded
    shown = _explain(linked_url, token["access_token"], "warmed the oven")
    assert not shown.is_error, shown
    assert "Sunday roast" in str(shown.structured_content)

    # Rotation: each refresh answers a new refresh token, and the new access token works.
    first = token["refresh_token"]
    second = client.refresh_token(metadata["token_endpoint"], refresh_token=first)
    assert second["refresh_token"] != first
    third = client.refresh_token(metadata["token_endpoint"], refresh_token=second["refresh_token"])
    assert not _explain(linked_url, third["access_token"], "warmed the oven").is_error

    # Reuse: the first token, two rotations back, revokes the whole family.
    with pytest.raises(OAuthError) as reused:
        client.refresh_token(metadata["token_endpoint"], refresh_token=first)
    assert reused.value.error == "invalid_grant"
    with pytest.raises(OAuthError) as family:
        client.refresh_token(metadata["token_endpoint"], refresh_token=third["refresh_token"])
    assert family.value.error == "invalid_grant"


def test_client_secret_post_and_a_replayed_code(linked_url, redirect_uri, metadata, client_credentials):
    household = _admin(linked_url, "household", "create", "Post Home")["household_id"]
    code = _admin(linked_url, "link-code", household)["code"]
    client = _client(client_credentials, redirect_uri, method="client_secret_post")
    location, verifier = _authorize(metadata, client, linked_url, code)
    token = client.fetch_token(
        metadata["token_endpoint"], authorization_response=location, code_verifier=verifier, resource=linked_url
    )
    assert token["access_token"]
    with pytest.raises(OAuthError) as replay:
        client.fetch_token(
            metadata["token_endpoint"], authorization_response=location, code_verifier=verifier, resource=linked_url
        )
    assert replay.value.error == "invalid_grant"
    with pytest.raises(OAuthError) as revoked:
        client.refresh_token(metadata["token_endpoint"], refresh_token=token["refresh_token"])
    assert revoked.value.error == "invalid_grant"


def test_the_service_token_is_tier_one_on_the_linked_server(linked_url, client_credentials):
    client_id, client_secret = client_credentials
    service = requests.post(
        linked_url.removesuffix("/mcp") + "/oauth/token",
        data={"grant_type": "client_credentials", "resource": linked_url},
        auth=(client_id, client_secret),
        timeout=10,
    ).json()["access_token"]

    async def listing(session, _init):
        return await session.list_tools()

    tools = asyncio.run(session_flow(linked_url, service, listing))
    assert any(tool.name == "explain_why" for tool in tools.tools)
    refused = requests.post(
        linked_url,
        json={"jsonrpc": "2.0", "id": 9, "method": "tools/call",
              "params": {"name": "explain_why", "arguments": {"household_id": "kitchen", "action": "x"}}},
        headers={"Authorization": f"Bearer {service}", "Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert refused.status_code == 401
    assert refused.json()["error"]["data"]["reason"] == "account_linking_required"
    assert "resource_metadata=" in refused.headers["www-authenticate"]
