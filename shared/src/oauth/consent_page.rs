//! The consent page's HTML: server-rendered, one inline style block allowed by its hash in a
//! strict Content-Security-Policy. Every value from the request is escaped. The link-code
//! form works with no script; where members' passkeys are configured, a second form offers
//! `Sign in with a passkey`, which needs this origin's scripts (the passkey pages' ceremony
//! and `consent.js`); where sign-up is open, a third offers `Create a household` (sign-up's
//! own form and script, which make the household and its first guardian's passkey).

use std::sync::LazyLock;

use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use crate::auth::{Scope, Scopes};
use crate::config::SignupMode;
use crate::html::{STYLE, escape};

/// The page's Content-Security-Policy, apart from `form-action`, which names the redirect
/// target too: Chromium applies `form-action` to the redirect that answers the form.
static STYLE_HASH: LazyLock<String> =
    LazyLock::new(|| format!("'sha256-{}'", STANDARD.encode(Sha256::digest(STYLE))));

/// What the consent form carries back, as hidden fields.
pub struct ConsentFields<'a> {
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub client_unverified: bool,
    pub redirect_uri: &'a str,
    pub scope: Scopes,
    pub state: Option<&'a str>,
    pub code_challenge: &'a str,
    pub resource: &'a str,
    pub csrf: &'a str,
    /// Members' passkeys are configured: the page offers `Sign in with a passkey` too.
    pub passkeys: bool,
    /// `HEARTH_SIGNUP=open` (with passkeys): the page offers `Create a household` too.
    pub signup: bool,
}

/// Where the redirect URI sends the person: a website's host (with the port, when it has one)
/// or an app's scheme, shown in bold; a warning for anything but https; and the CSP source the
/// form's redirect must be allowed to go to.
struct Destination {
    shown: String,
    warning: Option<&'static str>,
    form_action: String,
}

impl Destination {
    fn of(redirect_uri: &str) -> Self {
        use crate::clients::{RedirectKind, redirect_kind};
        let Ok(url) = url::Url::parse(redirect_uri) else {
            return Self {
                shown: redirect_uri.to_owned(),
                warning: None,
                form_action: String::new(),
            };
        };
        let host = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => url.scheme().to_owned(),
        };
        match redirect_kind(redirect_uri) {
            Ok(RedirectKind::Loopback) => Self {
                shown: host,
                warning: Some(
                    "That is an app on this computer (a loopback address), not a website. Link only if you started this from an app you trust on this device.",
                ),
                form_action: url.origin().ascii_serialization(),
            },
            Ok(RedirectKind::PrivateUse | RedirectKind::Claimed) => Self {
                shown: format!("{}:", url.scheme()),
                warning: Some(
                    "That is an app on this device (its own link scheme), not a website. Link only if you started this from an app you trust on this device.",
                ),
                // A scheme source: browsers check a form's redirect to an app against it too.
                form_action: format!("{}:", url.scheme()),
            },
            _ => Self {
                shown: host,
                warning: None,
                form_action: url.origin().ascii_serialization(),
            },
        }
    }
}

/// The consent page, optionally with a problem to show above the form.
pub fn consent(fields: &ConsentFields<'_>, problem: Option<&str>, status: StatusCode) -> Response {
    let destination = Destination::of(fields.redirect_uri);
    let grants: String = granted(fields.scope)
        .iter()
        .map(|line| format!("<li>{}</li>", escape(line)))
        .collect();
    let problem = problem
        .map(|text| format!(r#"<p class="problem" role="alert">{}</p>"#, escape(text)))
        .unwrap_or_default();
    let hidden = [
        ("response_type", "code"),
        ("client_id", fields.client_id),
        ("redirect_uri", fields.redirect_uri),
        ("scope", &fields.scope.to_string()),
        ("code_challenge", fields.code_challenge),
        ("code_challenge_method", "S256"),
        ("resource", fields.resource),
        ("csrf", fields.csrf),
    ]
    .iter()
    .map(|(name, value)| hidden_input(name, value))
    .chain(fields.state.map(|state| hidden_input("state", state)))
    .collect::<String>();
    let (passkey, signup, scripts) = if fields.passkeys {
        let signup = if fields.signup {
            crate::household::signup_http::form(
                "../household/signup",
                SignupMode::Open,
                Some("No household on Hearth yet?"),
            )
        } else {
            String::new()
        };
        let signup_script = if fields.signup {
            r#"<script src="../household/signup.js" defer></script>"#
        } else {
            ""
        };
        (
            format!(
                r#"<form method="post" action="authorize" id="passkey-form" data-options="authorize/passkey">
{hidden}
<input type="hidden" name="decision" value="allow">
<input type="hidden" name="passkey" value="">
<h2>Or a guardian links it with a passkey</h2>
<p class="small">A guardian of your household signs in with the passkey on their phone: no code needed. Only a guardian's passkey links a household.</p>
<div class="actions"><button class="deny" type="button" id="passkey-link">Sign in with a passkey</button></div>
<p id="status" role="status"></p>
</form>"#
            ),
            signup,
            format!(
                r#"<script src="../passkeys/page.js" defer></script><script src="consent.js" defer></script>{signup_script}"#
            ),
        )
    } else {
        (String::new(), String::new(), String::new())
    };
    let body = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Link your household to Hearth</title>
<style>{STYLE}</style>{scripts}</head>
<body><main>
<h1>Link your household to Hearth</h1>
<p><strong><bdi>{client}</bdi></strong>{unverified} asks to act for your household through Hearth. If you allow it, it may:</p>
<ul>{grants}</ul>
<p>It may not change your household's rules, budget or device keys, and every purchase still needs your household's rules to agree.</p>
<p class="destination">After you decide, you go back to <strong><bdi>{host}</bdi></strong>.</p>
{loopback}
{problem}
<form method="post" action="authorize">
{hidden}
<label for="link_code">Link code</label>
<input type="text" id="link_code" name="link_code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="24" required aria-describedby="code_help">
<p id="code_help" class="small">The 12-character code from <code>hearth admin link-code</code>. It works once, for 15 minutes.</p>
<div class="actions">
<button class="allow" type="submit" name="decision" value="allow">Link household</button>
<button class="deny" type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</div>
</form>
{passkey}
{signup}
<p class="small">You can unlink at any time: <code>hearth admin unlink</code> stops every token at once.</p>
</main></body></html>"#,
        client = escape(fields.client_name),
        unverified = if fields.client_unverified {
            r#" <span class="unverified">(unverified: the app named itself)</span>"#
        } else {
            ""
        },
        host = escape(&destination.shown),
        loopback = destination
            .warning
            .map(|warning| format!(r#"<p class="problem" role="note">{}</p>"#, escape(warning)))
            .unwrap_or_default(),
    );
    page(status, body, &destination.form_action, fields.passkeys)
}

/// The consent page's script for `Sign in with a passkey` (over the passkey pages' `page.js`).
pub fn script() -> Response {
    crate::html::static_asset(include_str!("consent.js"), "text/javascript; charset=utf-8")
}

/// A page that ends the flow without a redirect: the request cannot be trusted to say where
/// to send its answer (RFC 6749 §4.1.2.1), or the server cannot take it.
/// The gate's refusal of the consent page or its form, as a page that says what to do.
pub fn refused(refusal: crate::gate::Refusal, _request: &axum::extract::Request) -> Response {
    let title = match refusal {
        crate::gate::Refusal::OriginNotAllowed => "Request refused",
        _ => "Please wait",
    };
    problem(refusal.status(), title, refusal.for_a_person())
}

pub fn problem(status: StatusCode, title: &str, detail: &str) -> Response {
    let body = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{title}</title>
<style>{STYLE}</style></head>
<body><main>
<h1>{title}</h1>
<p class="problem" role="alert">{detail}</p>
<p>Start linking again from the app that sent you here.</p>
</main></body></html>"#,
        title = escape(title),
        detail = escape(detail),
    );
    page(status, body, "", false)
}

/// The page with its policy: nothing but its own style, and forms to itself and to the
/// redirect target. With `passkeys`, also this origin's scripts (the passkey ceremony and its
/// step) and requests to it (the challenge): what the ceremony needs, and no more.
fn page(status: StatusCode, body: String, redirect_origin: &str, passkeys: bool) -> Response {
    let ceremony = if passkeys {
        " script-src 'self'; connect-src 'self';"
    } else {
        ""
    };
    let csp = format!(
        "default-src 'none'; style-src {};{ceremony} form-action 'self' {redirect_origin}; frame-ancestors 'none'; base-uri 'none'",
        *STYLE_HASH
    );
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(csp.trim_end()) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The page's URL carries the state and the challenge; no other site needs to see them.
    // `same-origin` rather than `no-referrer`: under `no-referrer` Chromium sends the form's
    // POST with `Origin: null`, which the Origin check must refuse.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// What each granted scope lets the assistant do, in plain words.
fn granted(scope: Scopes) -> Vec<&'static str> {
    let everything = scope.contains(Scope::Service);
    let mut lines = Vec::new();
    if everything || scope.contains(Scope::Tools) {
        lines.push("recall and record why it did things for your household");
        lines.push(
            "propose purchases, which your household's rules and a second check approve or stop",
        );
        lines.push("ask the outside guide service questions for you");
    }
    if everything || scope.contains(Scope::Resources) {
        lines.push("read your household's decision records");
    }
    if scope.contains(Scope::CountersignRead) {
        lines.push(
            "see what your household bought, who asked for it, and what waits for approval, without anyone's device signing for it",
        );
    }
    lines
}

fn hidden_input(name: &str, value: &str) -> String {
    format!(
        r#"<input type="hidden" name="{}" value="{}">"#,
        escape(name),
        escape(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_is_said_in_plain_words() {
        assert_eq!(granted(Scopes::DEFAULT).len(), 4);
        assert_eq!(granted(Scopes::HOUSEHOLD_DEFAULT).len(), 5);
        assert_eq!(granted(Scopes::parse("countersign:read").unwrap()).len(), 1);
        assert_eq!(granted(Scopes::parse("mcp:resources").unwrap()).len(), 1);
        assert_eq!(granted(Scopes::parse("mcp:tools").unwrap()).len(), 3);
    }
}
