//! Why Countersign would not do something, said twice.
//!
//! Hosts read tool results aloud (Alexa+ does), so a refusal's [`Refusal::say`] follows the
//! rules for spoken text in Amazon's functional requirements for add-ons: no ids, URLs,
//! header names, tool names or JSON, and always a next step a person can take ("ask on the
//! device that knows your voice", "ask a parent to approve it"). What a developer needs, the
//! technical cause, is [`Refusal::reason`], returned in the result's `_meta`; the request's
//! log line carries only the fixed [`Refusal::code`], since a reason may quote a catalogue
//! entry or a proof's text and the log never holds what a caller sent.
//!
//! The refusals are one enum so that one table test can walk every one of them and hold its
//! spoken text to those rules (`tests` below).

use crate::auth::HouseholdRefusal;
use crate::auth::attestation::AttestationRefusal;
use crate::speech::sanitize::sanitize;

use super::ledger::{ANSWER_WITHIN_SECS, MAX_PROPOSALS_PER_TURN};
use super::service::{
    ACTING_CALLS_PER_MEMBER, MAX_QUANTITY, MAX_SEARCH_RESULTS, MAX_WAITING_APPROVALS,
    QUERY_MAX_CHARS, UNATTESTED_CALLS_PER_HOUSEHOLD,
};

/// Longest product title, or member name, quoted aloud in a refusal.
const TITLE_CHARS: usize = 80;
const NAME_CHARS: usize = 40;

/// Every reason Countersign refuses a call. Names and titles in a variant are the household's
/// and the catalogue's own, sanitised where they are spoken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No verified device attestation: nobody known is speaking.
    NoSpeaker(AttestationRefusal),
    /// The attested member is not one of the household's.
    NotAMember,
    /// A household token's account was removed.
    AccountGone,
    /// A household token's account has no purchase rules.
    NoRules,
    /// A household's stored rules do not load.
    RulesUnreadable,
    /// Which household a call acts on could not be settled.
    Household(HouseholdRefusal),
    /// A member made [`ACTING_CALLS_PER_MEMBER`] acting calls in the current window.
    TooManyRequests {
        name: String,
        minutes: i64,
    },
    UnknownProduct,
    UnknownVariant {
        title: String,
        variants: Vec<String>,
    },
    QuantityOutOfRange,
    SearchTooLong {
        chars: usize,
    },
    SearchResultsOutOfRange,
    UnknownRequest,
    RequestIdOutOfRange,
    /// `confirm_purchase` on a request that waits for a guardian.
    WaitsForGuardian,
    /// `confirm_purchase` or `decide_request` on a request waiting for a passkey approval,
    /// or without a device from a household token: decisions on those are made on a phone.
    DecidedOnPhones,
    /// [`MAX_WAITING_APPROVALS`] requests already wait for a passkey approval.
    TooManyWaitingApprovals,
    /// A proposal without a device in a household where nobody has a passkey to approve it.
    NoPasskeys,
    /// This member already approved the request with a passkey.
    AlreadyApproved,
    /// A household token made [`UNATTESTED_CALLS_PER_HOUSEHOLD`] proposals without a device
    /// in the current window.
    TooManyUnattested {
        minutes: i64,
    },
    /// Only the requester confirms their own order.
    OnlyRequesterConfirms {
        requester: String,
    },
    NotAGuardian {
        name: String,
    },
    /// `decide_request` on a request that waits for its requester's own answer.
    WaitsForRequester {
        requester: String,
    },
    /// The decision sent is not what the guardian's words said.
    DecisionAgainstWords {
        said_yes: bool,
    },
    /// A guardian's own request; `another_guardian` says whether someone else can decide it.
    OwnRequest {
        name: String,
        another_guardian: bool,
    },
    /// What this turn already proposed can no longer be read whole.
    TurnPartlyEvicted,
    TurnAlreadyProposed {
        title: String,
    },
    TurnFull,
    /// A host-key attestation's turn already acted for another household ledger.
    TurnUsedElsewhere,
    AnswerNotToThisRequest,
    AnswerNotToNewestQuestion,
    AnswerInQuestionsTurn,
    AnswerBeforeQuestion,
    AnswerTooLate,
    ReceiptHashMalformed,
    ReceiptSeqZero,
    NoLogKey,
    /// A `tlog_proof` that is not this server's; the reason may quote the proof.
    NotOurProof {
        reason: String,
    },
}

impl Refusal {
    /// The sentence a voice may read: no ids, URLs, header or tool names or JSON, and a next
    /// step.
    pub fn say(&self) -> String {
        use Refusal::*;
        match self {
            NoSpeaker(refusal) => speaker_refusal(refusal).to_owned(),
            NotAMember => "I don't know who is speaking as a member of this household. Please ask on the device that knows your voice, or ask a parent to add you.".into(),
            AccountGone => "This household is no longer set up here. Please ask whoever runs Hearth to set it up again.".into(),
            NoRules => "This household has no purchase rules yet, so nothing can be bought. Please ask whoever runs Hearth to set them.".into(),
            RulesUnreadable => "This household's purchase rules could not be read, so nothing can be bought. Please ask whoever runs Hearth to check them.".into(),
            Household(HouseholdRefusal::Unavailable) => "I can't check this household right now. Please try again in a minute.".into(),
            Household(_) => "I can't tell which household this is for. Please ask again from your household's own device.".into(),
            TooManyRequests { name, minutes } => format!(
                "{} has made {ACTING_CALLS_PER_MEMBER} requests in ten minutes, the most one person may. Please try again in {}.",
                sanitize(name, NAME_CHARS),
                if *minutes == 1 { "1 minute".to_owned() } else { format!("{minutes} minutes") }
            ),
            UnknownProduct => "I couldn't find that product. Please ask me to search for it again.".into(),
            UnknownVariant { title, .. } => format!(
                "{} doesn't come in that size or kind. Please ask me to search for it again.",
                sanitize(title, TITLE_CHARS)
            ),
            QuantityOutOfRange => format!(
                "I can order between 1 and {MAX_QUANTITY} of one thing. Please say how many you'd like."
            ),
            SearchTooLong { .. } => "That search is too long. Please ask again in fewer words.".into(),
            SearchResultsOutOfRange => "I couldn't search like that. Please ask again.".into(),
            UnknownRequest | RequestIdOutOfRange => "I couldn't find that request. Ask what is waiting, and answer the question you hear.".into(),
            WaitsForGuardian => "That request waits for a guardian, and only a guardian can decide it. Please ask a parent to approve it.".into(),
            DecidedOnPhones => "That is decided on your household's phones. Please open the approval Hearth sent there, and approve or decline it with a passkey.".into(),
            TooManyWaitingApprovals => format!(
                "{MAX_WAITING_APPROVALS} orders already wait for approval on your household's phones. Please approve or decline some of them first."
            ),
            NoPasskeys => "Nobody in this household can approve orders on a phone yet. Please ask whoever runs Hearth for a passkey invite, or ask on the device that knows your voice.".into(),
            AlreadyApproved => "You already approved this order. Another member decides it now; please ask a guardian.".into(),
            TooManyUnattested { minutes } => format!(
                "This household has sent {UNATTESTED_CALLS_PER_HOUSEHOLD} orders to its phones in ten minutes, the most it may. Please try again in {}.",
                if *minutes == 1 { "1 minute".to_owned() } else { format!("{minutes} minutes") }
            ),
            OnlyRequesterConfirms { requester } => {
                let requester = sanitize(requester, NAME_CHARS);
                format!("Only {requester}, who asked for it, can confirm this order. Please ask {requester}.")
            }
            NotAGuardian { name } => format!(
                "Only a guardian can decide requests, and {} is not a guardian. Please ask a parent.",
                sanitize(name, NAME_CHARS)
            ),
            WaitsForRequester { requester } => {
                let requester = sanitize(requester, NAME_CHARS);
                format!("That request waits for {requester}'s own answer, not a guardian's. Please ask {requester}.")
            }
            DecisionAgainstWords { said_yes } => format!(
                "You said {}, but the decision about to be sent was the opposite, so nothing was decided. Please say again whether you approve.",
                if *said_yes { "yes" } else { "no" }
            ),
            OwnRequest { name, another_guardian: true } => format!(
                "{} asked for it, and nobody decides their own request. Please ask another guardian to decide it.",
                sanitize(name, NAME_CHARS)
            ),
            OwnRequest { name, another_guardian: false } => format!(
                "{} asked for it, and nobody decides their own request. As the household's only guardian, please ask whoever runs Hearth to add a second guardian.",
                sanitize(name, NAME_CHARS)
            ),
            TurnPartlyEvicted => "I can't tell what was already ordered in this conversation. Please ask again.".into(),
            TurnAlreadyProposed { title } => format!(
                "I already asked about {} for what you just said, and one request backs one order of each thing. Please ask again if you want more.",
                sanitize(title, TITLE_CHARS)
            ),
            TurnFull => format!(
                "What you said can back at most {MAX_PROPOSALS_PER_TURN} orders at once. Please ask again for the rest."
            ),
            TurnUsedElsewhere => "What you just said was already used for another account's shopping, so it can't be used here. Please ask again on your device.".into(),
            AnswerNotToThisRequest | AnswerNotToNewestQuestion => "That answer wasn't given to this request's question, so it does not count. Ask what is waiting, and answer the question you hear.".into(),
            AnswerInQuestionsTurn => "An answer has to come after the question is read. Please answer once you've heard it.".into(),
            AnswerBeforeQuestion => "That answer came before the question was read, so it does not count. Please answer the question you hear.".into(),
            AnswerTooLate => format!(
                "That answer came more than {} minutes after the question, so it does not count. Ask what is waiting, and answer again.",
                ANSWER_WITHIN_SECS / 60
            ),
            ReceiptHashMalformed | ReceiptSeqZero => "That receipt can't be read. Please check that it was kept whole and try again.".into(),
            NoLogKey => "This server can't check that kind of proof. Please check the receipt instead.".into(),
            NotOurProof { .. } => "That proof wasn't made by this server. Please check that it was kept whole and try again.".into(),
        }
    }

    /// The technical cause, for developers: the result's `_meta`, never the spoken text.
    pub fn reason(&self) -> String {
        use Refusal::*;
        match self {
            NoSpeaker(refusal) => format!("no verified speaker: {refusal}"),
            NotAMember => "the attested member_id is not a member of this household".into(),
            AccountGone => "the household account no longer exists".into(),
            NoRules => "the household account has no policy (hearth admin household set-policy)".into(),
            RulesUnreadable => "the stored household policy does not load".into(),
            Household(refusal) => refusal.to_string(),
            TooManyRequests { minutes, .. } => format!(
                "{ACTING_CALLS_PER_MEMBER} acting calls by this member in the current ten-minute window; the next window starts in at most {minutes} minutes"
            ),
            UnknownProduct => "no product with that product_id in the catalogue; search_products lists them".into(),
            UnknownVariant { variants, .. } => format!(
                "no variant with that variant_id; the product has {}",
                variants.join(", ")
            ),
            QuantityOutOfRange => format!("quantity must be between 1 and {MAX_QUANTITY}"),
            SearchTooLong { chars } => format!(
                "the query is {chars} characters; the limit is {QUERY_MAX_CHARS}"
            ),
            SearchResultsOutOfRange => format!("max_results must be between 1 and {MAX_SEARCH_RESULTS}"),
            UnknownRequest => "no request with that request_id in this household's ledger".into(),
            RequestIdOutOfRange => "request_id must be 1 to 64 characters".into(),
            WaitsForGuardian => "the request waits for a guardian: decide_request, not confirm_purchase".into(),
            DecidedOnPhones => "the request waits for a passkey approval (or the call has no attestation): only its approval page settles it".into(),
            TooManyWaitingApprovals => format!("{MAX_WAITING_APPROVALS} requests already wait for a passkey approval in this household"),
            NoPasskeys => "a proposal without an attestation needs a live passkey in the household to approve it".into(),
            AlreadyApproved => "this member already approved the request with a passkey".into(),
            TooManyUnattested { .. } => format!("{UNATTESTED_CALLS_PER_HOUSEHOLD} unattested proposals in this window for this household"),
            OnlyRequesterConfirms { .. } => "confirm_purchase is only for the member who proposed the order".into(),
            NotAGuardian { .. } => "decide_request needs a guardian as the attested speaker".into(),
            WaitsForRequester { .. } => "the request waits for its requester's confirmation: confirm_purchase, not decide_request".into(),
            DecisionAgainstWords { said_yes } => format!(
                "the attested words answer {}, and decision was the opposite",
                if *said_yes { "yes" } else { "no" }
            ),
            OwnRequest { another_guardian, .. } => format!(
                "the speaker made this request; {}",
                if *another_guardian { "another guardian must decide it" } else { "the household has no other guardian" }
            ),
            TurnPartlyEvicted => "entries of this turn may have been evicted from the ledger".into(),
            TurnAlreadyProposed { .. } => "this (member_id, turn_id) already backed a proposal of this product".into(),
            TurnFull => format!("this (member_id, turn_id) already backed {MAX_PROPOSALS_PER_TURN} proposals"),
            TurnUsedElsewhere => "this host-key attestation's (member_id, turn_id) already acted for another credential's or household's ledger".into(),
            AnswerNotToThisRequest => "the attestation's answering does not name this request".into(),
            AnswerNotToNewestQuestion => "this request is not the newest question read to this member".into(),
            AnswerInQuestionsTurn => "the answer has the turn_id of the question it answers".into(),
            AnswerBeforeQuestion => "the attestation's issued_at is before the question was read, beyond the allowed skew".into(),
            AnswerTooLate => format!("the attestation's issued_at is more than {ANSWER_WITHIN_SECS} s after the question was read"),
            ReceiptHashMalformed => "the receipt's entry_hash must be 64 hexadecimal characters".into(),
            ReceiptSeqZero => "the receipt's seq must be 1 or more".into(),
            NoLogKey => "this server has no log key, so a tlog-proof cannot be checked".into(),
            NotOurProof { reason } => format!("not a proof from this server: {reason}"),
        }
    }

    /// A fixed name for the log line's `reason` field and for dashboards.
    pub fn code(&self) -> &'static str {
        use Refusal::*;
        match self {
            NoSpeaker(refusal) => match refusal {
                AttestationRefusal::NoHostKey => "no_host_key",
                AttestationRefusal::Missing => "attestation_missing",
                AttestationRefusal::Incomplete => "attestation_incomplete",
                AttestationRefusal::TooLong => "attestation_too_long",
                AttestationRefusal::BadSignature => "attestation_bad_signature",
                AttestationRefusal::Malformed(_) => "attestation_malformed",
                AttestationRefusal::Expired => "attestation_expired",
                AttestationRefusal::Future => "attestation_future",
                AttestationRefusal::NoKeyId => "attestation_no_key_id",
                AttestationRefusal::UnknownKey => "attestation_unknown_key",
                AttestationRefusal::KeysUnavailable => "device_keys_unavailable",
            },
            NotAMember => "not_a_member",
            AccountGone => "account_gone",
            NoRules => "no_rules",
            RulesUnreadable => "rules_unreadable",
            Household(HouseholdRefusal::Missing) => "household_missing",
            Household(HouseholdRefusal::Mismatch { .. }) => "household_mismatch",
            Household(HouseholdRefusal::Unavailable) => "household_unavailable",
            TooManyRequests { .. } => "too_many_requests",
            UnknownProduct => "unknown_product",
            UnknownVariant { .. } => "unknown_variant",
            QuantityOutOfRange => "quantity_out_of_range",
            SearchTooLong { .. } => "search_too_long",
            SearchResultsOutOfRange => "search_results_out_of_range",
            UnknownRequest => "unknown_request",
            RequestIdOutOfRange => "request_id_out_of_range",
            WaitsForGuardian => "waits_for_guardian",
            DecidedOnPhones => "decided_on_phones",
            TooManyWaitingApprovals => "too_many_waiting_approvals",
            NoPasskeys => "no_passkeys",
            AlreadyApproved => "already_approved",
            TooManyUnattested { .. } => "too_many_unattested",
            OnlyRequesterConfirms { .. } => "only_requester_confirms",
            NotAGuardian { .. } => "not_a_guardian",
            WaitsForRequester { .. } => "waits_for_requester",
            DecisionAgainstWords { .. } => "decision_against_words",
            OwnRequest { .. } => "own_request",
            TurnPartlyEvicted => "turn_partly_evicted",
            TurnAlreadyProposed { .. } => "turn_already_proposed",
            TurnFull => "turn_full",
            TurnUsedElsewhere => "turn_used_elsewhere",
            AnswerNotToThisRequest => "answer_not_to_this_request",
            AnswerNotToNewestQuestion => "answer_not_to_newest_question",
            AnswerInQuestionsTurn => "answer_in_questions_turn",
            AnswerBeforeQuestion => "answer_before_question",
            AnswerTooLate => "answer_too_late",
            ReceiptHashMalformed => "receipt_hash_malformed",
            ReceiptSeqZero => "receipt_seq_zero",
            NoLogKey => "no_log_key",
            NotOurProof { .. } => "not_our_proof",
        }
    }
}

/// What a person hears when nobody known is speaking.
fn speaker_refusal(refusal: &AttestationRefusal) -> &'static str {
    match refusal {
        AttestationRefusal::NoHostKey => {
            "I can't tell who is speaking on this server, so I can't do that. Please ask whoever runs Hearth to connect your device."
        }
        AttestationRefusal::Missing => {
            "I can't do that without knowing who is speaking. Please ask on the device that knows your voice."
        }
        AttestationRefusal::Expired => {
            "Your device's request arrived too late to confirm who is speaking. Please ask again."
        }
        AttestationRefusal::Future => {
            "Your device's clock looks wrong, so I couldn't confirm who is speaking. Please check its time and ask again."
        }
        AttestationRefusal::UnknownKey => {
            "This device isn't one your household trusts. Please ask a parent to add it, or ask on the device that knows your voice."
        }
        AttestationRefusal::KeysUnavailable => {
            "I can't check who is speaking right now. Please try again in a minute."
        }
        AttestationRefusal::Incomplete
        | AttestationRefusal::TooLong
        | AttestationRefusal::BadSignature
        | AttestationRefusal::Malformed(_)
        | AttestationRefusal::NoKeyId => {
            "I couldn't confirm who is speaking. Please ask again on the device that knows your voice."
        }
    }
}

/// Whether `text`, a refusal, keeps the rules for spoken text: nothing internal (see
/// [`check_no_internals`]) and a next step a person can take. `Err` names the first rule
/// broken.
pub fn check_spoken(text: &str) -> Result<(), &'static str> {
    check_no_internals(text)?;
    const NEXT_STEPS: [&str; 6] = ["please", "ask", "try again", "answer", "say", "check"];
    let lower = text.to_lowercase();
    if !NEXT_STEPS.iter().any(|step| lower.contains(step)) {
        return Err("no next step");
    }
    Ok(())
}

/// Whether `text`, anything a voice may read, names nothing internal: no ids, URLs, header
/// names, tool or field names, or JSON.
pub fn check_no_internals(text: &str) -> Result<(), &'static str> {
    let lower = text.to_lowercase();
    if text.contains("://") || lower.contains("www.") {
        return Err("a URL");
    }
    if lower.contains("x-countersign") || lower.contains("authorization:") {
        return Err("a header name");
    }
    if text
        .chars()
        .any(|c| matches!(c, '{' | '}' | '[' | ']' | '"' | '`' | '_'))
    {
        return Err("JSON, code or a snake_case name");
    }
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        let upper_id = word.starts_with("REQ-") || word.starts_with("SIM-");
        let hex_run = word.len() >= 8 && word.chars().all(|c| c.is_ascii_hexdigit());
        if upper_id || hex_run {
            return Err("an id");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of every refusal, with sample names and titles; `every_variant_is_in_the_table`
    /// keeps it complete.
    fn every_refusal() -> Vec<Refusal> {
        use Refusal::*;
        let attestation = [
            AttestationRefusal::NoHostKey,
            AttestationRefusal::Missing,
            AttestationRefusal::Incomplete,
            AttestationRefusal::TooLong,
            AttestationRefusal::BadSignature,
            AttestationRefusal::Malformed("member_id must be 1 to 64 characters".into()),
            AttestationRefusal::Expired,
            AttestationRefusal::Future,
            AttestationRefusal::NoKeyId,
            AttestationRefusal::UnknownKey,
            AttestationRefusal::KeysUnavailable,
        ];
        let mut all: Vec<Refusal> = attestation.into_iter().map(NoSpeaker).collect();
        all.extend([
            NotAMember,
            AccountGone,
            NoRules,
            RulesUnreadable,
            Household(HouseholdRefusal::Missing),
            Household(HouseholdRefusal::Mismatch {
                token: "hh-1a2b3c4d5e6f".into(),
                argument: "hh-other".into(),
            }),
            Household(HouseholdRefusal::Unavailable),
            TooManyRequests {
                name: "Dana".into(),
                minutes: 1,
            },
            TooManyRequests {
                name: "Dana".into(),
                minutes: 7,
            },
            UnknownProduct,
            UnknownVariant {
                title: "PowerCell AA Alkaline Batteries".into(),
                variants: vec!["4-pack".into(), "12-pack".into()],
            },
            QuantityOutOfRange,
            SearchTooLong { chars: 201 },
            SearchResultsOutOfRange,
            UnknownRequest,
            RequestIdOutOfRange,
            WaitsForGuardian,
            DecidedOnPhones,
            TooManyWaitingApprovals,
            NoPasskeys,
            AlreadyApproved,
            TooManyUnattested { minutes: 1 },
            TooManyUnattested { minutes: 4 },
            OnlyRequesterConfirms {
                requester: "Mia".into(),
            },
            NotAGuardian { name: "Mia".into() },
            WaitsForRequester {
                requester: "Chris".into(),
            },
            DecisionAgainstWords { said_yes: true },
            DecisionAgainstWords { said_yes: false },
            OwnRequest {
                name: "Dana".into(),
                another_guardian: true,
            },
            OwnRequest {
                name: "Dana".into(),
                another_guardian: false,
            },
            TurnPartlyEvicted,
            TurnAlreadyProposed {
                title: "PowerCell AA Alkaline Batteries".into(),
            },
            TurnFull,
            TurnUsedElsewhere,
            AnswerNotToThisRequest,
            AnswerNotToNewestQuestion,
            AnswerInQuestionsTurn,
            AnswerBeforeQuestion,
            AnswerTooLate,
            ReceiptHashMalformed,
            ReceiptSeqZero,
            NoLogKey,
            NotOurProof {
                reason: "the origin line \"evil.example/log\" is not this server's".into(),
            },
        ]);
        all
    }

    #[test]
    fn every_refusal_a_voice_reads_names_no_internals_and_says_what_to_do() {
        for refusal in every_refusal() {
            let say = refusal.say();
            assert_eq!(check_spoken(&say), Ok(()), "{}: {say:?}", refusal.code());
            assert!(!refusal.reason().is_empty());
        }
    }

    #[test]
    fn a_title_or_name_is_sanitised_and_bounded_before_it_is_spoken() {
        let refusal = Refusal::TurnAlreadyProposed {
            title: format!("Batteries\u{202e}\u{200b}\n\"quoted\" {}", "x".repeat(200)),
        };
        let say = refusal.say();
        assert!(
            !say.contains(['\u{202e}', '\u{200b}', '\n', '"']),
            "{say:?}"
        );
        let title = say
            .strip_prefix("I already asked about ")
            .and_then(|rest| rest.split(" for what you just said").next())
            .unwrap();
        assert_eq!(title.chars().count(), TITLE_CHARS, "{title}");
        assert!(title.ends_with('…'));
    }

    #[test]
    fn every_variant_is_in_the_table() {
        // Each variant's code, from the enum's own source: a variant added without a row in
        // `every_refusal` fails here.
        let source = include_str!("refusal.rs");
        let body = source
            .split("pub enum Refusal {")
            .nth(1)
            .and_then(|rest| rest.split("\n}\n").next())
            .expect("the enum's body");
        let variants: Vec<&str> = body
            .lines()
            .map(str::trim)
            .filter(|line| line.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
            .map(|line| {
                line.split(|c: char| !c.is_ascii_alphanumeric())
                    .next()
                    .unwrap()
            })
            .collect();
        assert!(variants.len() > 30, "{variants:?}");
        let table: Vec<String> = every_refusal().iter().map(|r| format!("{r:?}")).collect();
        for variant in variants {
            assert!(
                table.iter().any(|row| row.starts_with(variant)
                    && row[variant.len()..].starts_with(['(', ' ', '{'])
                    || row == variant),
                "{variant} has no row in every_refusal"
            );
        }
    }

    #[test]
    fn the_spoken_text_check_catches_each_kind_of_internal() {
        for (text, broken) in [
            ("Order SIM-1A2B3C4D5E. Please keep it.", "an id"),
            ("Please see https://hearth.example.", "a URL"),
            ("Please send X-Countersign-Attestation.", "a header name"),
            (
                "Please call search_products.",
                "JSON, code or a snake_case name",
            ),
            (
                "Please answer {\"ok\": true}.",
                "JSON, code or a snake_case name",
            ),
            ("The entry 458facb77497 is wrong. Please ask.", "an id"),
            ("Nothing was done.", "no next step"),
        ] {
            assert_eq!(check_spoken(text), Err(broken), "{text}");
        }
        assert_eq!(check_spoken("Please ask a parent to approve it."), Ok(()));
    }
}
