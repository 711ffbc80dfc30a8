//! The passkey pages: server-rendered HTML in the consent page's style, and one script
//! (`page.js`, served from Hearth's own origin) that runs the WebAuthn ceremony. The
//! Content-Security-Policy allows that script, the style by its hash, and fetches to the same
//! origin, nothing else. Every value shown is escaped.

use std::sync::LazyLock;

use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

use crate::html::{STYLE, escape, static_asset};

/// The script every passkey page loads.
pub const SCRIPT: &str = include_str!("page.js");

/// The passkey pages' style beyond the consent page's, the household page's included (one
/// style, one hash in every page's policy).
const EXTRA_STYLE: &str = "#status{min-height:1.5em;margin-top:1rem}\
.order{background:#fff;border:1px solid #d8d3c7;border-radius:.4rem;padding:.4rem 1rem}\
.order dt{font-weight:600;margin-top:.4rem}.order dd{margin:0}\
.warning{background:#fff4d6;border-left:4px solid #a36a00;padding:.6rem .8rem}\
.notice{background:#e8eef5;border-left:4px solid #35577a;padding:.6rem .8rem}\
header{background:#3d5a40;color:#fff;padding:.6rem 1.25rem}header p{margin:0}\
nav ul{display:flex;flex-wrap:wrap;gap:.4rem;list-style:none;padding:0;margin:.6rem 0 0}nav li{margin:0}\
nav a{display:inline-block;color:#fff;padding:.35rem .6rem;border-radius:.3rem;text-decoration:none;border:1px solid #c9d6ca}\
nav a[aria-current=page]{background:#fff;color:#1d1b16}\
a{color:#2c4a30;overflow-wrap:anywhere}#shown svg{max-width:100%;height:auto}\
h2{font-size:1.15rem;margin:1.4rem 0 .5rem}\
.entries{list-style:none;padding:0}.entries>li{background:#fff;border:1px solid #d8d3c7;border-radius:.4rem;padding:.6rem .8rem;margin:.5rem 0}\
.meta{font-size:.9rem;color:#555}\
.quote{white-space:pre-wrap;overflow-wrap:anywhere}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85rem;background:#f0ede5;padding:.5rem;border-radius:.3rem}\
input[type=search]{box-sizing:border-box;width:100%;font:inherit;padding:.5rem;border:2px solid #8a8578;border-radius:.4rem}\
.signout{flex:0 0 auto;background:#fff;color:#3d5a40;padding:.35rem .8rem}\
@media(min-width:60rem){main{max-width:48rem}}";

static STYLE_HASH: LazyLock<String> = LazyLock::new(|| {
    format!(
        "'sha256-{}'",
        STANDARD.encode(Sha256::digest(format!("{STYLE}{EXTRA_STYLE}")))
    )
});

/// The service worker that shows a pushed message and opens its link.
pub const SERVICE_WORKER: &str = include_str!("sw.js");

/// The enrolment page: one button, `Create passkey`; once it is made, `Notify this phone`
/// where Web Push is configured (`push_key`, the VAPID public key).
pub fn enrolment(
    household_name: &str,
    member_name: &str,
    needs_guardian: bool,
    push_key: Option<&str>,
) -> Response {
    let push = match push_key {
        Some(key) => format!(
            r#"<div class="actions"><button id="notify" class="deny" type="button" data-key="{}" hidden>Notify this phone</button></div>"#,
            escape(key)
        ),
        None => String::new(),
    };
    let waits = if needs_guardian {
        "<p class=\"small\">A guardian approves this passkey with their own before it counts.</p>"
    } else {
        ""
    };
    page(
        StatusCode::OK,
        "A passkey for Hearth",
        &format!(
            r#"<main data-page="enrol">
<h1>A passkey for {member}</h1>
<p>{household} uses Hearth to check what the assistant buys. With a passkey on this phone, {member} can approve or decline an order here, after reading what it really is.</p>
{waits}
<div class="actions"><button id="create" class="allow" type="button">Create passkey</button></div>
{push}
<p id="status" role="status"></p>
</main>"#,
            member = escape(member_name),
            household = escape(household_name),
        ),
    )
}

/// The page where a guardian lets a later passkey in: one button, `Approve`.
pub fn confirmation(household_name: &str, member_name: &str) -> Response {
    page(
        StatusCode::OK,
        "Approve a new passkey",
        &format!(
            r#"<main data-page="confirm">
<h1>Approve a new passkey</h1>
<p>A new passkey was created for <strong>{member}</strong> of {household}. Once approved, it can approve orders as {member}.</p>
<p>Approve it only if you know who created it. Otherwise do nothing: it stays unused, and whoever runs Hearth can remove it.</p>
<div class="actions"><button id="approve" class="allow" type="button">Approve</button></div>
<p id="status" role="status"></p>
</main>"#,
            member = escape(member_name),
            household = escape(household_name),
        ),
    )
}

/// What an approval page shows of one order.
pub struct OrderShown<'a> {
    pub household_name: &'a str,
    pub title: &'a str,
    pub variant: &'a str,
    pub quantity: u32,
    pub unit_price_cents: u64,
    pub total_cents: u64,
    pub merchant: &'a str,
    pub new_merchant: bool,
    pub spent_cents: Option<u64>,
    pub budget_cents: u64,
    pub listing_warning: bool,
    /// The name of the member who approved already, when a guardian decides now.
    pub approved_by: Option<&'a str>,
}

/// The approval page of one order: what would be placed, and `Approve` and `Decline`.
pub fn approval(order: &OrderShown<'_>) -> Response {
    let dollars = crate::countersign::money::dollars;
    let who = match order.approved_by {
        Some(name) => format!(
            "{} approved this order. A guardian decides now, with their own passkey.",
            escape(name)
        ),
        None => format!(
            "The assistant asked {} for this order, and nobody's device signed for it. Approve it only if someone in your household wants it.",
            escape(order.household_name)
        ),
    };
    let merchant_note = if order.new_merchant {
        " <strong>(new: the household has never ordered from them)</strong>"
    } else {
        ""
    };
    let week = match order.spent_cents {
        Some(spent) => format!(
            "{} spent of the weekly budget of {}",
            dollars(spent),
            dollars(order.budget_cents)
        ),
        None => format!(
            "this week's spending cannot be read; the budget is {}",
            dollars(order.budget_cents)
        ),
    };
    let warning = if order.listing_warning {
        r#"<p class="warning" role="note">The seller's listing text speaks to the assistant instead of describing the product. Someone may be steering the order: check it is what you want.</p>"#
    } else {
        ""
    };
    page(
        StatusCode::OK,
        "Approve an order",
        &format!(
            r#"<main data-page="approve">
<h1>Approve this order?</h1>
<p>{who}</p>
<dl class="order">
<dt>What</dt><dd>{title}, {variant}</dd>
<dt>How many</dt><dd>{quantity} at {unit} each</dd>
<dt>Total</dt><dd>{total}</dd>
<dt>From</dt><dd>{merchant}{merchant_note}</dd>
<dt>This week</dt><dd>{week}</dd>
</dl>
{warning}
<div class="actions"><button id="approve" class="allow" type="button">Approve</button><button id="decline" class="deny" type="button">Decline</button></div>
<p id="status" role="status"></p>
</main>"#,
            title = escape(order.title),
            variant = escape(order.variant),
            quantity = order.quantity,
            unit = dollars(order.unit_price_cents),
            total = dollars(order.total_cents),
            merchant = escape(order.merchant),
        ),
    )
}

/// A page that only says why nothing can be done here, and what to do instead.
pub fn problem(status: StatusCode, detail: &str) -> Response {
    notice(status, "This link does not work", detail)
}

/// A page that says only `detail` under `title`, as an alert: a link that does not work, or
/// a request the gate turned away.
pub fn notice(status: StatusCode, title: &str, detail: &str) -> Response {
    page(
        status,
        title,
        &format!(
            r#"<main>
<h1>{}</h1>
<p class="problem" role="alert">{}</p>
</main>"#,
            escape(title),
            escape(detail)
        ),
    )
}

fn page(status: StatusCode, title: &str, main: &str) -> Response {
    shell(status, title, "", main, &["../page.js"], Policy::Ceremony)
}

/// What a page's Content-Security-Policy allows beyond the ceremony pages' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A link's page: no form submits anywhere.
    Ceremony,
    /// The household's page: its search form submits to its own origin, and its manifest and
    /// icon load from there (it installs to a home screen).
    Household,
}

/// A page in the passkey pages' style and policy: `head` (already escaped) is added to the
/// head, `body` is the page's whole body, and `scripts` are loaded from Hearth's own origin
/// in order (the ceremony's `page.js` first, where a page runs one).
pub fn shell(
    status: StatusCode,
    title: &str,
    head: &str,
    body: &str,
    scripts: &[&str],
    policy: Policy,
) -> Response {
    let scripts: String = scripts
        .iter()
        .map(|src| format!(r#"<script src="{}"></script>"#, escape(src)))
        .collect();
    let body = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{title}</title>{head}
<style>{STYLE}{EXTRA_STYLE}</style></head>
<body>{body}
{scripts}</body></html>"#,
        title = escape(title),
    );
    let more = match policy {
        Policy::Ceremony => "form-action 'none'",
        Policy::Household => "form-action 'self'; manifest-src 'self'; img-src 'self'",
    };
    let csp = format!(
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src {}; {more}; frame-ancestors 'none'; base-uri 'none'",
        *STYLE_HASH,
    );
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    secure_headers(headers);
    // The URL carries the link's token: no other site needs to see it.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The page script, cached briefly (it changes with releases).
pub fn script() -> Response {
    javascript(SCRIPT)
}

/// The service worker, served from `/passkeys/` so that its scope covers the pages, and
/// allowed every scope under `base_path` (the deployment's stage prefix, or nothing), so that
/// the household's page at `{base_path}/household` can register it too.
pub fn service_worker(base_path: &str) -> Response {
    let mut response = javascript(SERVICE_WORKER);
    if let Ok(allowed) = HeaderValue::from_str(&format!("{base_path}/")) {
        response
            .headers_mut()
            .insert("service-worker-allowed", allowed);
    }
    response
}

fn javascript(source: &'static str) -> Response {
    static_asset(source, "text/javascript; charset=utf-8")
}

/// The headers every answer of a passkey route carries: never cached, never framed.
pub fn secure_headers(headers: &mut http::HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped() {
        let response = enrolment("<b>Home</b>", "Dana \"D\"", true, None);
        let body = futures_util::FutureExt::now_or_never(axum::body::to_bytes(
            response.into_body(),
            usize::MAX,
        ))
        .unwrap()
        .unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        assert!(html.contains("&lt;b&gt;Home&lt;/b&gt;"));
        assert!(html.contains("Dana &quot;D&quot;"));
        assert!(!html.contains("<b>Home"));
    }
}
