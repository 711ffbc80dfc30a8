//! The household page's HTML, in the passkey pages' shell, style and policy
//! ([`crate::passkeys::pages::shell`]). Every value shown is escaped; a decision's reason is
//! the caller's unverified words and is shown as text, labelled so.

use axum::response::Response;
use http::StatusCode;

use super::{Assistant, Decision, Order, Today, Visitor};
use crate::countersign::household::Household;
use crate::countersign::ledger::Request;
use crate::countersign::money::dollars;
use crate::countersign::service::may_decide;
use crate::html::escape;
use crate::passkeys::pages::{Policy, shell};
use crate::passkeys::{Member, PasskeyView};

/// Times as the household reads them: in its own time zone (its rules' `time_zone`), e.g.
/// `Sat 5 Dec 2026, 09:14 EST`; UTC where the zone is unknown.
pub struct When(jiff::tz::TimeZone);

impl When {
    pub fn of(visitor: &Visitor) -> Self {
        let zone = visitor
            .account
            .policy
            .as_ref()
            .and_then(|policy| policy.get("time_zone"))
            .and_then(serde_json::Value::as_str)
            .and_then(|name| jiff::tz::TimeZone::get(name).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        Self(zone)
    }

    fn format(&self, instant: Option<jiff::Timestamp>, pattern: &str) -> String {
        instant.map_or_else(String::new, |instant| {
            instant
                .to_zoned_datetime(self.0.clone())
                .strftime(pattern)
                .to_string()
        })
    }

    /// An instant in Unix milliseconds.
    pub fn at_ms(&self, ms: i64) -> String {
        self.format(
            jiff::Timestamp::from_millisecond(ms).ok(),
            "%a %-d %b %Y, %H:%M %Z",
        )
    }

    pub fn at(&self, time: time::OffsetDateTime) -> String {
        self.at_ms(crate::clock::unix_ms(time))
    }

    /// An instant as stored (RFC 3339), or the text itself if it is not one.
    pub fn at_text(&self, text: &str) -> String {
        match text.parse::<jiff::Timestamp>() {
            Ok(instant) => self.format(Some(instant), "%a %-d %b %Y, %H:%M %Z"),
            Err(_) => text.to_owned(),
        }
    }

    /// The day of an instant as stored.
    pub fn day_text(&self, text: &str) -> String {
        match text.parse::<jiff::Timestamp>() {
            Ok(instant) => self.format(Some(instant), "%-d %b %Y"),
            Err(_) => text.to_owned(),
        }
    }
}

/// The views of a signed-in page, by their `view` query value and their name in the menu.
/// The last four are the guardians' (others see them read-only).
pub const VIEWS: [(&str, &str); 8] = [
    ("today", "Today"),
    ("why", "Why"),
    ("orders", "Orders"),
    ("waiting", "Waiting"),
    ("members", "Members"),
    ("devices", "Devices"),
    ("assistants", "Assistants"),
    ("rules", "Rules"),
];

/// Where the page's own scripts are, under the deployment's base path (`""` locally,
/// `/prod` under an API Gateway stage).
pub struct Paths {
    pub base_path: String,
    /// The VAPID public key phones subscribe under, when Web Push is configured.
    pub push_key: Option<String>,
}

impl Paths {
    /// The passkey pages' steps, the demo device's verification code (shared, not copied),
    /// the page's own check of its history, and its own steps.
    fn scripts(&self) -> [String; 5] {
        [
            format!("{}/passkeys/page.js", self.base_path),
            format!("{}/demo/canonical.js", self.base_path),
            format!("{}/demo/tlog.js", self.base_path),
            format!("{}/household/check.js", self.base_path),
            format!("{}/household/page.js", self.base_path),
        ]
    }

    fn page(&self) -> String {
        format!("{}/household", self.base_path)
    }

    /// What installs the page to a home screen: its manifest and colour.
    fn installable(&self) -> String {
        format!(
            r##"<link rel="manifest" href="{}/household/manifest.webmanifest"><meta name="theme-color" content="#3d5a40">"##,
            escape(&self.base_path)
        )
    }
}

fn render(paths: &Paths, status: StatusCode, title: &str, head: &str, body: &str) -> Response {
    let scripts = paths.scripts();
    let scripts: Vec<&str> = scripts.iter().map(String::as_str).collect();
    shell(status, title, head, body, &scripts, Policy::Household)
}

/// The signed-out page: one button, `Sign in with a passkey`. `notice` says why a session
/// ended, when one did.
pub fn sign_in(paths: &Paths, notice: Option<&str>) -> Response {
    let notice = notice
        .map(|text| format!(r#"<p class="warning" role="note">{}</p>"#, escape(text)))
        .unwrap_or_default();
    render(
        paths,
        StatusCode::OK,
        "Your household on Hearth",
        &paths.installable(),
        &format!(
            r#"<main data-page="household-sign-in">
<h1>Your household on Hearth</h1>
{notice}
<p>See what the assistant did and why, what it bought, and what waits for you. Sign in with the passkey you made from your household's invite.</p>
<div class="actions"><button id="sign-in" class="allow" type="button">Sign in with a passkey</button></div>
<p id="status" role="status"></p>
<p class="small">No passkey yet? Ask a guardian of your household for an invite.</p>
</main>"#
        ),
    )
}

/// A signed-in page: the header (household, member, the menu, `Sign out`) around `content`.
fn signed_in(paths: &Paths, visitor: &Visitor, view: &str, title: &str, content: &str) -> Response {
    let page = paths.page();
    let menu: String = VIEWS
        .iter()
        .map(|(name, label)| {
            let current = if *name == view {
                r#" aria-current="page""#
            } else {
                ""
            };
            format!(r#"<li><a href="{page}?view={name}"{current}>{label}</a></li>"#)
        })
        .collect();
    let role = if visitor.member.guardian {
        "guardian"
    } else {
        "member"
    };
    let head = format!(
        r#"<meta name="hearth-csrf" content="{}">{}"#,
        escape(&visitor.session().csrf),
        paths.installable()
    );
    render(
        paths,
        StatusCode::OK,
        &format!("{title} · {}", visitor.account.name),
        &head,
        &format!(
            r#"<header>
<p><strong>{household}</strong>, signed in as {member} ({role})</p>
<nav aria-label="Household"><ul>{menu}</ul></nav>
</header>
<main data-page="household" data-view="{view}" data-household="{household_id}">
<h1>{title}</h1>
{content}
<div class="actions"><button id="sign-out" class="signout" type="button">Sign out</button></div>
<p id="status" role="status"></p>
</main>"#,
            household = escape(&visitor.account.name),
            household_id = escape(&visitor.account.household_id),
            member = escape(&visitor.member.name),
            title = escape(title),
        ),
    )
}

/// History the phone checks for itself (`check.js`): `content` from the household's `logs`
/// (`decisions`, `ledger`, or both), after the line that says how the check went. Until the
/// check has run, nothing says it passed.
fn checked_history(logs: &str, content: &str) -> String {
    format!(
        r#"<p id="history-check" class="meta" role="status" data-verdict="checking">Checking this history on this phone…</p>
<section data-history="{logs}">{content}</section>"#
    )
}

/// A signed-in page that could not be filled: why, and what to do.
pub fn trouble(
    paths: &Paths,
    visitor: &Visitor,
    view: &str,
    title: &str,
    problem: &str,
) -> Response {
    signed_in(
        paths,
        visitor,
        view,
        title,
        &format!(r#"<p class="problem" role="alert">{}</p>"#, escape(problem)),
    )
}

/// Today: what waits, this week's spending against the budget, the newest decisions.
pub fn today(paths: &Paths, visitor: &Visitor, today: &Today, names: &[Member]) -> Response {
    let activity = &today.activity;
    let spent = match activity.spent_cents {
        Some(spent) => format!(
            "{} spent of this week's budget of {}.",
            dollars(spent),
            dollars(activity.budget_cents)
        ),
        None => format!(
            "This week's spending cannot be rebuilt from the ledger; the budget is {}.",
            dollars(activity.budget_cents)
        ),
    };
    let waiting = if activity.waiting.is_empty() {
        "<p>Nothing waits for a decision.</p>".to_owned()
    } else {
        let items: String = activity
            .waiting
            .iter()
            .map(|item| {
                format!(
                    r#"<li data-log="ledger" data-request="{id}"><strong>{title}</strong>, {quantity} × {unit} = {total}<br><span class="meta">{status}, asked by {who}</span></li>"#,
                    id = escape(&item.request_id),
                    title = escape(&item.order.title),
                    quantity = item.order.quantity,
                    unit = dollars(item.order.unit_price_cents),
                    total = dollars(item.order.total_cents),
                    status = escape(item.status.spoken()),
                    who = escape(&name_of(names, &item.requested_by)),
                )
            })
            .collect();
        format!(
            r#"<ul class="entries">{items}</ul><p><a href="{}?view=waiting">Decide what waits</a></p>"#,
            paths.page()
        )
    };
    let notify = match &paths.push_key {
        Some(key) => format!(
            r#"<div class="actions"><button id="notify-household" class="deny" type="button" data-key="{}">Notify this phone</button></div>"#,
            escape(key)
        ),
        None => String::new(),
    };
    let history = format!(
        r#"<h2>Waiting</h2>{waiting}
<h2>Newest decisions</h2>{decisions}"#,
        decisions = decision_list(&today.decisions, &When::of(visitor)),
    );
    // The week's figures are Hearth's sums over the ledger, not entries: outside what the
    // phone marks as checked.
    let content = format!(
        r#"{notify}{history}
<p><a href="{page}?view=why">Every decision</a></p>
<h2>This week</h2><p>{spent} {placed} placed, {stopped} stopped.</p>"#,
        history = checked_history("ledger decisions", &history),
        page = paths.page(),
        spent = escape(&spent),
        placed = activity.placed.len(),
        stopped = activity.stopped.len(),
    );
    signed_in(paths, visitor, "today", "Today", &content)
}

/// Why: the decision memory, searchable by words.
pub fn why(paths: &Paths, visitor: &Visitor, decisions: &[Decision], words: &str) -> Response {
    let found = if words.is_empty() {
        format!("{} decisions kept.", decisions.len())
    } else {
        format!(
            "{} decisions hold every word of “{}”.",
            decisions.len(),
            words
        )
    };
    let content = format!(
        r#"<form role="search" method="get" action="{page}">
<input type="hidden" name="view" value="why">
<label for="q">Search the decisions</label>
<input id="q" type="search" name="q" value="{words}" maxlength="{max}">
<div class="actions"><button class="allow" type="submit">Search</button></div>
</form>
<p class="meta">{found} Each reason is the assistant's own words, not checked by Hearth.</p>
{list}"#,
        page = paths.page(),
        words = escape(words),
        max = super::SEARCH_MAX,
        found = escape(&found),
        list = checked_history("decisions", &decision_list(decisions, &When::of(visitor))),
    );
    signed_in(paths, visitor, "why", "Why", &content)
}

fn decision_list(decisions: &[Decision], when: &When) -> String {
    if decisions.is_empty() {
        return "<p>No decisions are kept yet.</p>".into();
    }
    let items: String = decisions
        .iter()
        .map(|decision| {
            format!(
                r#"<li data-log="decisions" data-entry="{entry}"><strong>{action}</strong>
<p class="quote"><span class="unverified">Reason, in the assistant's words:</span> {reason}</p>
<p class="meta">Approved by {approver} (as the assistant says), {at}. Trace {trace}</p></li>"#,
                entry = escape(&decision.trace_id),
                action = escape(&decision.action),
                reason = escape(&decision.reason),
                approver = escape(&decision.approver),
                at = escape(&when.at_text(&decision.recorded_at)),
                trace = escape(decision.trace_id.get(..12).unwrap_or(&decision.trace_id)),
            )
        })
        .collect();
    format!(r#"<ul class="entries">{items}</ul>"#)
}

/// Orders: the ledger, newest first, each with its receipt and its signed approvals.
pub fn orders(paths: &Paths, visitor: &Visitor, orders: &[Order], names: &[Member]) -> Response {
    let when = When::of(visitor);
    let content = if orders.is_empty() {
        "<p>Nothing was ordered yet.</p>".to_owned()
    } else {
        let items: String = orders
            .iter()
            .map(|order| {
                let request = &order.request;
                let receipt = match &request.placed {
                    Some(placed) => format!(
                        r#"<p class="meta">Order {order_id}, placed {at}. Receipt: entry {seq} of the ledger window of {window}, hash <code>{hash}</code></p>"#,
                        order_id = escape(&placed.order_id),
                        at = escape(&when.at(placed.at)),
                        seq = placed.receipt.seq,
                        window = escape(&placed.receipt.window),
                        hash = escape(&placed.receipt.entry_hash),
                    ),
                    None => String::new(),
                };
                let approvals: String = order
                    .approvals
                    .iter()
                    .map(|(member, statement)| {
                        format!(
                            r#"<p class="meta">Signed by {who}'s passkey:</p><pre>{statement}</pre>"#,
                            who = escape(&name_of(names, member)),
                            statement = escape(statement),
                        )
                    })
                    .collect();
                format!(
                    r#"<li data-log="ledger" data-request="{id}">{summary}{receipt}{approvals}</li>"#,
                    id = escape(&request.request_id),
                    summary = request_summary(request, names, &when),
                )
            })
            .collect();
        format!(r#"<ul class="entries">{items}</ul>"#)
    };
    signed_in(
        paths,
        visitor,
        "orders",
        "Orders",
        &checked_history("ledger", &content),
    )
}

/// Waiting: each request that waits, with its product, quantity and price.
pub fn waiting(
    paths: &Paths,
    visitor: &Visitor,
    requests: &[Request],
    names: &[Member],
) -> Response {
    let when = When::of(visitor);
    let content = if requests.is_empty() {
        "<p>Nothing waits for a decision.</p>".to_owned()
    } else {
        let items: String = requests
            .iter()
            .map(|request| {
                format!(
                    r#"<li id="request-{id}" data-log="ledger" data-request="{id}">{summary}{controls}</li>"#,
                    id = escape(&request.request_id),
                    summary = request_summary(request, names, &when),
                    controls = decision_controls(visitor, request),
                )
            })
            .collect();
        format!(r#"<ul class="entries">{items}</ul>"#)
    };
    signed_in(
        paths,
        visitor,
        "waiting",
        "Waiting",
        &checked_history("ledger", &content),
    )
}

/// What a member can do about a waiting request here: `Approve` and `Decline` when it waits
/// for a phone and they may decide it; otherwise who decides it, and how.
fn decision_controls(visitor: &Visitor, request: &Request) -> String {
    if !super::waits_for_a_passkey(request) {
        return r#"<p class="meta">It is answered by voice, to the assistant.</p>"#.into();
    }
    if !may_decide(request, &visitor.member.id, visitor.member.guardian) {
        return r#"<p class="meta">A guardian decides it now, on their own page.</p>"#.into();
    }
    let title = escape(&request.proposal.title);
    format!(
        r#"<div class="actions"><button class="allow" type="button" data-decide="approve" aria-label="Approve {title}">Approve</button><button class="deny" type="button" data-decide="decline" aria-label="Decline {title}">Decline</button></div>
<div class="signing" hidden><p class="meta">Your passkey signs exactly this:</p><pre class="statement"></pre></div>
<p class="decided" role="status"></p>"#
    )
}

fn request_summary(request: &Request, names: &[Member], when: &When) -> String {
    let proposal = &request.proposal;
    format!(
        r#"<strong>{title}</strong>, {variant}<br>{quantity} × {unit} = {total}, from {merchant}<br><span class="meta">{status}; asked by {who}, {at}</span>"#,
        title = escape(&proposal.title),
        variant = escape(&proposal.variant),
        quantity = proposal.quantity,
        unit = dollars(proposal.unit_price_cents),
        total = dollars(proposal.total_cents),
        merchant = escape(&proposal.merchant),
        status = escape(request.status.spoken()),
        who = escape(&name_of(names, &request.member_id)),
        at = escape(&when.at(request.proposed_at)),
    )
}

/// Members: who is in the household, and their passkeys; a guardian invites a member,
/// approves a waiting passkey and revokes one.
pub fn members(
    paths: &Paths,
    visitor: &Visitor,
    names: &[Member],
    passkeys: &[PasskeyView],
) -> Response {
    let when = When::of(visitor);
    let guardian = visitor.member.guardian;
    let items: String = names
        .iter()
        .map(|member| {
            let held: String = passkeys
                .iter()
                .filter(|passkey| passkey.member_id == member.id)
                .map(|passkey| {
                    let (state, control) = if passkey.revoked_at.is_some() {
                        ("revoked", None)
                    } else if passkey.suspect_at.is_some() {
                        (
                            "suspect: signs nothing",
                            Some(("revoke-passkey", "Revoke", "deny")),
                        )
                    } else if passkey.pending {
                        (
                            "waiting for a guardian",
                            Some(("approve-passkey", "Approve", "allow")),
                        )
                    } else {
                        ("in use", Some(("revoke-passkey", "Revoke", "deny")))
                    };
                    let made = when.day_text(&passkey.created_at);
                    let control = match control {
                        Some((action, label, class)) if guardian => {
                            let extra = if action == "approve-passkey" {
                                // A waiting passkey may also be turned away.
                                act_button(
                                    "revoke-passkey",
                                    &passkey.credential_id,
                                    "Revoke",
                                    "deny",
                                    &format!("Revoke {}'s passkey made {made}", member.name),
                                )
                            } else {
                                String::new()
                            };
                            format!(
                                r#"<div class="actions">{}{extra}</div>"#,
                                act_button(
                                    action,
                                    &passkey.credential_id,
                                    label,
                                    class,
                                    &format!("{label} {}'s passkey made {made}", member.name)
                                )
                            )
                        }
                        _ => String::new(),
                    };
                    format!(
                        r#"<li>{algorithm} passkey made {made}, {state}{control}</li>"#,
                        algorithm = escape(&passkey.algorithm),
                        made = escape(&made),
                    )
                })
                .collect();
            let held = if held.is_empty() {
                "<p class=\"meta\">No passkey yet.</p>".to_owned()
            } else {
                format!(r#"<ul class="meta">{held}</ul>"#)
            };
            let invite = if guardian {
                format!(
                    r#"<div class="actions">{}</div>"#,
                    act_button(
                        "invite-member",
                        &member.id,
                        "Invite",
                        "allow",
                        &format!("Invite {} to make a passkey", member.name)
                    )
                )
            } else {
                String::new()
            };
            format!(
                r#"<li><strong>{name}</strong> ({role}{guardian_mark}){held}{invite}</li>"#,
                name = escape(&member.name),
                role = escape(&member.role),
                guardian_mark = if member.guardian { ", guardian" } else { "" },
            )
        })
        .collect();
    let content = format!(
        r#"<ul class="entries">{items}</ul>{note}{acting}"#,
        note = guardians_note(visitor),
        acting = acting(visitor),
    );
    signed_in(paths, visitor, "members", "Members", &content)
}

/// Devices: the keys the household's devices sign with; a guardian adds one (shown once) and
/// revokes one.
pub fn devices(paths: &Paths, visitor: &Visitor) -> Response {
    let when = When::of(visitor);
    let guardian = visitor.member.guardian;
    let keys = &visitor.account.device_keys;
    let list = if keys.is_empty() {
        "<p>No device keys. Orders through a host that signs nothing wait for a member's passkey.</p>".to_owned()
    } else {
        let items: String = keys
            .iter()
            .map(|key| {
                let revoke = if guardian {
                    format!(
                        r#"<div class="actions">{}</div>"#,
                        act_button("revoke-device-key", &key.key_id, "Revoke", "deny", &format!("Revoke device key {}", key.key_id))
                    )
                } else {
                    String::new()
                };
                format!(
                    r#"<li>Key <code>{id}</code><br><span class="meta">added {at}</span>{revoke}</li>"#,
                    id = escape(&key.key_id),
                    at = escape(&when.at_ms(key.created_at_ms)),
                )
            })
            .collect();
        format!(r#"<ul class="entries">{items}</ul>"#)
    };
    let add = if guardian {
        format!(
            r#"<div class="actions">{}</div>"#,
            act_button(
                "add-device-key",
                super::actions::NEW,
                "Add a device key",
                "allow",
                "Add a device key"
            )
        )
    } else {
        String::new()
    };
    let content = format!(
        r#"{list}{add}{note}{acting}"#,
        note = guardians_note(visitor),
        acting = acting(visitor),
    );
    signed_in(paths, visitor, "devices", "Devices", &content)
}

/// Assistants: what is linked to the household; a guardian unlinks one, or every one when the
/// list may miss some (`complete` false: links older than the list, or forgotten past its
/// length).
pub fn assistants(
    paths: &Paths,
    visitor: &Visitor,
    linked: &[Assistant],
    complete: bool,
) -> Response {
    let when = When::of(visitor);
    let list = if linked.is_empty() {
        "<p>No assistant is linked to this household.</p>".to_owned()
    } else {
        let items: String = linked
            .iter()
            .map(|assistant| {
                let unlink = if visitor.member.guardian {
                    format!(
                        r#"<div class="actions">{}</div>"#,
                        act_button("unlink-assistant", &assistant.client_id, "Unlink", "deny", &format!("Unlink {}", assistant.name))
                    )
                } else {
                    String::new()
                };
                format!(
                    r#"<li><strong>{name}</strong> <span class="unverified">(its own name)</span><br><span class="meta">{registered}; linked {linked}, last used {used}</span>{unlink}</li>"#,
                    name = escape(&assistant.name),
                    registered = escape(assistant.registered),
                    linked = escape(&when.at_ms(assistant.linked_at_ms)),
                    used = escape(&when.at_ms(assistant.last_used_at_ms)),
                )
            })
            .collect();
        format!(r#"<ul class="entries">{items}</ul>"#)
    };
    let incomplete = if complete {
        String::new()
    } else {
        let all = if visitor.member.guardian {
            format!(
                r#"<div class="actions">{}</div>"#,
                act_button(
                    "unlink-all",
                    super::actions::ALL,
                    "Unlink every assistant",
                    "deny",
                    "Unlink every assistant, and end every session of this page"
                )
            )
        } else {
            String::new()
        };
        format!(
            r#"<p class="warning" role="note">Some assistants may have been linked before Hearth kept this list, and are not shown. Unlinking every assistant is the way to be sure none is left; each must then be linked again.</p>{all}"#
        )
    };
    let content = format!(
        r#"{list}{incomplete}{note}{acting}"#,
        note = guardians_note(visitor),
        acting = acting(visitor),
    );
    signed_in(paths, visitor, "assistants", "Assistants", &content)
}

/// A guardian's button for `action` on `target`; `label` is what a screen reader says.
fn act_button(action: &str, target: &str, text: &str, class: &str, label: &str) -> String {
    format!(
        r#"<button class="{class}" type="button" data-act="{action}" data-target="{target}" aria-label="{label}">{text}</button>"#,
        target = escape(target),
        label = escape(label),
    )
}

/// Where a guardian's action shows the statement it signs, and then what was done.
fn acting(visitor: &Visitor) -> &'static str {
    if visitor.member.guardian {
        r#"<div id="acting" hidden><p class="meta">Your passkey signs exactly this:</p><pre class="statement"></pre></div>
<p id="acted" role="status"></p><div id="shown"></div>"#
    } else {
        ""
    }
}

/// Rules: the household's policy, read-only.
pub fn rules(paths: &Paths, visitor: &Visitor, rules: &Household, names: &[Member]) -> Response {
    let roles: String = rules
        .roles
        .iter()
        .map(|(role, limits)| {
            format!(
                "<li><strong>{role}</strong>: at most {limit} an order{guardian}</li>",
                role = escape(
                    &serde_json::to_value(role)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
                limit = dollars(limits.per_order_limit_cents),
                guardian = if limits.needs_guardian {
                    ", and every order waits for a guardian"
                } else {
                    ""
                },
            )
        })
        .collect();
    let guardians: Vec<String> = rules
        .guardians
        .iter()
        .map(|id| escape(&name_of(names, id)))
        .collect();
    let content = format!(
        r#"<dl class="order">
<dt>Weekly budget</dt><dd>{budget}, the week starting {week} in {zone}</dd>
<dt>Guardians</dt><dd>{guardians}</dd>
<dt>Merchants bought from</dt><dd>{merchants}</dd>
</dl>
<h2>Roles</h2><ul>{roles}</ul>
<p class="meta">Only whoever runs Hearth can change the rules today (<code>hearth admin household set-policy</code>). Changing them here comes later.</p>"#,
        budget = dollars(rules.weekly_budget_cents),
        week = escape(&rules.week_starts),
        zone = escape(&rules.time_zone),
        guardians = guardians.join(", "),
        merchants = if rules.known_merchants.is_empty() {
            "none yet".to_owned()
        } else {
            escape(&rules.known_merchants.join(", "))
        },
    );
    signed_in(paths, visitor, "rules", "Rules", &content)
}

/// Who runs these views, for a member who is not a guardian.
fn guardians_note(visitor: &Visitor) -> &'static str {
    if visitor.member.guardian {
        r#"<p class="meta">Each change here is signed with your passkey, over what the page shows you first, and kept in the household's ledger.</p>"#
    } else {
        r#"<p class="meta">The household's guardians make changes here.</p>"#
    }
}

fn name_of(names: &[Member], member_id: &str) -> String {
    match member_id {
        crate::countersign::ledger::UNATTESTED => "the assistant (nobody's device signed)".into(),
        id => names
            .iter()
            .find(|member| member.id == id)
            .map_or_else(|| id.to_owned(), |member| member.name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::When;

    #[test]
    fn times_read_in_the_households_own_zone() {
        let new_york = When(jiff::tz::TimeZone::get("America/New_York").unwrap());
        assert_eq!(
            new_york.at_text("2026-12-05T14:30:00.000Z"),
            "Sat 5 Dec 2026, 09:30 EST"
        );
        assert_eq!(new_york.day_text("2026-12-05T02:00:00.000Z"), "4 Dec 2026");
        let utc = When(jiff::tz::TimeZone::UTC);
        assert_eq!(utc.at_ms(0), "Thu 1 Jan 1970, 00:00 UTC");
        assert_eq!(utc.at_text("not a time"), "not a time");
    }
}
