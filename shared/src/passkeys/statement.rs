//! The statements a passkey signs. Each is UTF-8, six lines, each ending in a newline; the
//! WebAuthn challenge is its SHA-256 (see [`super::ceremony::challenge_of`]), so a kept
//! assertion proves exactly what was decided, by whom, and once (the nonce is single use).

/// What a purchase approval signs (the and `verify_approvals.py`'s format).
pub const APPROVAL_V1: &str = "hearth-approval/v1";
/// What a guardian signs to let a later passkey in.
pub const ENROLMENT_V1: &str = "hearth-enrolment/v1";

/// `hearth-approval/v1`: a decision on one waiting request, bound to its proposal entry.
pub fn approval(
    household_id: &str,
    request_id: &str,
    proposal_hash: &str,
    decision: &str,
    nonce: &str,
) -> String {
    lines(&[
        APPROVAL_V1,
        household_id,
        request_id,
        proposal_hash,
        decision,
        nonce,
    ])
}

/// `hearth-enrolment/v1`: a guardian lets `credential_id`, enrolled for `member_id`, in.
pub fn enrolment(household_id: &str, member_id: &str, credential_id: &str, nonce: &str) -> String {
    lines(&[
        ENROLMENT_V1,
        household_id,
        member_id,
        credential_id,
        "approve",
        nonce,
    ])
}

fn lines(fields: &[&str]) -> String {
    let mut text = String::new();
    for field in fields {
        text.push_str(field);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_statement_is_six_lines_each_ending_in_a_newline() {
        let text = approval("hh-1", "req-2", &"ab".repeat(32), "approve", "bm9uY2U");
        assert_eq!(
            text,
            format!(
                "hearth-approval/v1\nhh-1\nreq-2\n{}\napprove\nbm9uY2U\n",
                "ab".repeat(32)
            )
        );
        assert_eq!(text.lines().count(), 6);
    }

    #[test]
    fn an_enrolment_statement_names_the_member_and_the_credential() {
        assert_eq!(
            enrolment("hh-1", "mia", "Y3JlZA", "bm9uY2U"),
            "hearth-enrolment/v1\nhh-1\nmia\nY3JlZA\napprove\nbm9uY2U\n"
        );
    }
}
