//! The three secrets of account linking and how each is stored: only ever as a SHA-256.
//!
//! - A **link code** is typed by a person: 12 characters of Crockford's base32 (60 bits from
//!   the OS random source), shown as `XXXX-XXXX-XXXX`. Entry forgives case, spaces, hyphens
//!   and the look-alikes `O`/`I`/`L`. Sixty bits against a limit of a few attempts per address
//!   per quarter hour, for a code that lives 15 minutes, leaves guessing hopeless.
//! - An **authorization code** is 32 random bytes, base64url: the client never types it.
//! - A **refresh token** is `hrt3.<family id>.<household id>.<n>.<MAC>`: the family id (16
//!   random bytes, hex) finds the family in one read, the household id lets the household's
//!   account be read beside it (a refresh checks both before it rotates, so naming the
//!   household saves a round trip), `n` counts the family's tokens, and the MAC is
//!   HMAC-SHA256 of the form, the ids and `n` under a key derived from the JWT secret
//!   (base64url). Both ids are public (every access token names them), so a token must prove
//!   it was issued: only then can a token older than the family's current one be told for
//!   what it is, a genuine token presented again (reuse, which revokes the family), and
//!   anything else be a plain refusal that revokes nothing. Tokens of the earlier forms keep
//!   working until they rotate: `hrt2.<family id>.<n>.<MAC>` (no household id, so the
//!   account is read after the family), and `hrt1.<family id>.<32 random bytes>` (only their
//!   hash stored).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::chain::sha256_hex;
use crate::random::{RandomFailed, os_bytes};

/// Crockford's base32 alphabet: no I, L, O or U.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a link code.
pub const LINK_CODE_CHARS: usize = 12;
const REFRESH_PREFIX: &str = "hrt1.";
const REFRESH_V2_PREFIX: &str = "hrt2.";
const REFRESH_V3_PREFIX: &str = "hrt3.";

/// A fresh link code, grouped for reading aloud.
pub fn new_link_code() -> Result<String, RandomFailed> {
    let bits = u64::from_le_bytes(os_bytes::<8>()?);
    let symbols: Vec<u8> = (0..LINK_CODE_CHARS)
        .map(|index| CROCKFORD[((bits >> (5 * index)) & 31) as usize])
        .collect();
    let groups: Vec<&str> = symbols
        .chunks(4)
        .map(|group| std::str::from_utf8(group).unwrap_or_default())
        .collect();
    Ok(groups.join("-"))
}

/// The canonical form of an entered link code, or `None` if it cannot be one.
pub fn normalize_link_code(entered: &str) -> Option<String> {
    let mut code = String::with_capacity(LINK_CODE_CHARS);
    for c in entered.chars() {
        let symbol = match c.to_ascii_uppercase() {
            ' ' | '-' => continue,
            'O' => '0',
            'I' | 'L' => '1',
            other if other.is_ascii() && CROCKFORD.contains(&(other as u8)) => other,
            _ => return None,
        };
        if code.len() == LINK_CODE_CHARS {
            return None;
        }
        code.push(symbol);
    }
    (code.len() == LINK_CODE_CHARS).then_some(code)
}

/// The stored key of a link code (already normalized).
pub fn link_code_key(normalized: &str) -> String {
    sha256_hex(format!("hearth link code\n{normalized}"))
}

/// A fresh authorization code.
pub fn new_authorization_code() -> Result<String, RandomFailed> {
    Ok(URL_SAFE_NO_PAD.encode(os_bytes::<32>()?))
}

/// The stored key of an authorization code.
pub fn authorization_code_key(code: &str) -> String {
    sha256_hex(format!("hearth authorization code\n{code}"))
}

/// A fresh refresh-token family id.
pub fn new_family_id() -> Result<String, RandomFailed> {
    Ok(hex::encode(os_bytes::<16>()?))
}

/// A fresh refresh token of the first form for `family_id`, and the hash of its secret part
/// to store: no longer issued, kept to test families that still hold one.
#[cfg(test)]
pub fn new_refresh_token(family_id: &str) -> Result<(String, String), RandomFailed> {
    let secret = URL_SAFE_NO_PAD.encode(os_bytes::<32>()?);
    Ok((
        format!("{REFRESH_PREFIX}{family_id}.{secret}"),
        refresh_secret_hash(&secret),
    ))
}

/// A presented refresh token: its family id and the hash of its secret part, or `None` if it
/// does not have the form of one.
pub fn parse_refresh_token(token: &str) -> Option<(&str, String)> {
    let (family_id, secret) = token.strip_prefix(REFRESH_PREFIX)?.split_once('.')?;
    let family_ok = family_id.len() == 32 && family_id.bytes().all(|b| b.is_ascii_hexdigit());
    let secret_ok = secret.len() == 43
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (family_ok && secret_ok).then(|| (family_id, refresh_secret_hash(secret)))
}

/// Refresh token `number` of `family_id`, issued for `household_id` and authenticated by
/// `mac` (the JWT keys' refresh MAC).
pub fn refresh_token_v3(
    family_id: &str,
    household_id: &str,
    number: u64,
    mac: impl Fn(&str) -> [u8; 32],
) -> String {
    let message = refresh_v3_message(family_id, household_id, number);
    format!(
        "{REFRESH_V3_PREFIX}{family_id}.{household_id}.{number}.{}",
        URL_SAFE_NO_PAD.encode(mac(&message))
    )
}

/// A presented refresh token of a form this server mints with a MAC (second or third), as
/// parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MintedRefresh<'a> {
    pub family_id: &'a str,
    /// The household the token names: third-form tokens only.
    pub household_id: Option<&'a str>,
    pub number: u64,
    /// Whether the MAC is the one this server would have made for the rest.
    pub genuine: bool,
}

/// A presented refresh token of the second or third form; `None` if it has neither form.
pub fn parse_minted_refresh_token(
    token: &str,
    mac: impl Fn(&str) -> [u8; 32],
) -> Option<MintedRefresh<'_>> {
    let (household_id, rest) = match token.strip_prefix(REFRESH_V3_PREFIX) {
        Some(rest) => {
            let (family_id, rest) = rest.split_once('.')?;
            let (household_id, rest) = rest.split_once('.')?;
            if !crate::accounts::is_household_id(household_id) {
                return None;
            }
            (Some(household_id), (family_id, rest))
        }
        None => (
            None,
            token.strip_prefix(REFRESH_V2_PREFIX)?.split_once('.')?,
        ),
    };
    let (family_id, rest) = rest;
    let (number, presented) = rest.split_once('.')?;
    let family_ok = family_id.len() == 32 && family_id.bytes().all(|b| b.is_ascii_hexdigit());
    let number_ok = !number.is_empty()
        && number.len() <= 20
        && number.bytes().all(|b| b.is_ascii_digit())
        && !(number.len() > 1 && number.starts_with('0'));
    if !family_ok || !number_ok || presented.len() != 43 {
        return None;
    }
    let number: u64 = number.parse().ok()?;
    let presented = URL_SAFE_NO_PAD.decode(presented).ok()?;
    let expected = mac(&match household_id {
        Some(household_id) => refresh_v3_message(family_id, household_id, number),
        None => refresh_v2_message(family_id, number),
    });
    let genuine = bool::from(subtle::ConstantTimeEq::ct_eq(
        presented.as_slice(),
        expected.as_slice(),
    ));
    Some(MintedRefresh {
        family_id,
        household_id,
        number,
        genuine,
    })
}

fn refresh_v2_message(family_id: &str, number: u64) -> String {
    format!("hearth refresh token\n{family_id}\n{number}")
}

/// The third form's message names its form, so that no second-form message is ever one.
fn refresh_v3_message(family_id: &str, household_id: &str, number: u64) -> String {
    format!("hearth refresh token 3\n{family_id}\n{household_id}\n{number}")
}

fn refresh_secret_hash(secret: &str) -> String {
    sha256_hex(format!("hearth refresh token\n{secret}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_code_reads_back_however_it_is_typed() {
        let code = new_link_code().unwrap();
        assert_eq!(code.len(), 14, "{code}");
        assert_eq!(code.matches('-').count(), 2);
        let canonical = normalize_link_code(&code).unwrap();
        assert_eq!(canonical.len(), LINK_CODE_CHARS);
        assert_eq!(
            normalize_link_code(&code.to_lowercase().replace('-', " ")),
            Some(canonical)
        );
        assert_eq!(
            normalize_link_code("oil0-OIL0-abcd"),
            Some("01100110ABCD".to_owned())
        );
        assert_ne!(new_link_code().unwrap(), code);
    }

    #[test]
    fn link_codes_hold_12_symbols_and_not_11_or_13() {
        assert!(normalize_link_code(&"A".repeat(12)).is_some());
        assert!(normalize_link_code(&"A".repeat(11)).is_none());
        assert!(normalize_link_code(&"A".repeat(13)).is_none());
        assert!(
            normalize_link_code("AAAA-AAAA-AAAU").is_none(),
            "U is not Crockford"
        );
        assert!(normalize_link_code("AAAA-AAAA-AAÄA").is_none());
    }

    #[test]
    fn refresh_tokens_name_their_family_and_hide_their_secret() {
        let family = new_family_id().unwrap();
        let (token, hash) = new_refresh_token(&family).unwrap();
        let (parsed_family, parsed_hash) = parse_refresh_token(&token).unwrap();
        assert_eq!(
            (parsed_family, parsed_hash.as_str()),
            (family.as_str(), hash.as_str())
        );
        assert!(!hash.contains(token.rsplit('.').next().unwrap()));
        for bad in [
            "",
            "hrt1.",
            &token[..token.len() - 1],
            &token.replacen("hrt1", "hrt2", 1),
            &format!("{token}x"),
        ] {
            assert!(parse_refresh_token(bad).is_none(), "{bad}");
        }
    }

    fn test_mac(message: &str) -> [u8; 32] {
        crate::chain::sha256_hex(format!("key\n{message}")).as_bytes()[..32]
            .try_into()
            .unwrap()
    }

    const HOUSEHOLD: &str = "hh-0123456789abcdef0123456789abcdef";

    #[test]
    fn a_third_form_token_names_its_household_and_proves_it_was_issued() {
        let family = new_family_id().unwrap();
        let token = refresh_token_v3(&family, HOUSEHOLD, 7, test_mac);
        assert_eq!(
            parse_minted_refresh_token(&token, test_mac),
            Some(MintedRefresh {
                family_id: &family,
                household_id: Some(HOUSEHOLD),
                number: 7,
                genuine: true,
            })
        );
        // Another number or another household under the same MAC, or a MAC made up: well
        // formed, not genuine.
        let other_household = HOUSEHOLD.replace("0123", "9999");
        let made_up = format!(
            "hrt3.{family}.{HOUSEHOLD}.7.{}",
            URL_SAFE_NO_PAD.encode([1u8; 32])
        );
        for forged in [
            token.replacen(".7.", ".6.", 1),
            token.replacen(HOUSEHOLD, &other_household, 1),
            made_up,
        ] {
            let parsed = parse_minted_refresh_token(&forged, test_mac).expect("well formed");
            assert!(!parsed.genuine, "{forged}");
        }
        let mac = URL_SAFE_NO_PAD.encode([1u8; 32]);
        for bad in [
            format!("hrt3.{family}.{HOUSEHOLD}.07.{mac}"),
            format!("hrt3.{family}.{HOUSEHOLD}..{mac}"),
            format!("hrt3.{family}.hh-nope.7.{mac}"),
            format!("hrt3.{family}.7.{mac}"),
            format!("{token}.extra"),
            token.replacen("hrt3", "hrt1", 1),
        ] {
            assert!(
                parse_minted_refresh_token(&bad, test_mac).is_none(),
                "{bad}"
            );
        }
    }

    /// Tokens minted before the third form, which families still hold until they rotate.
    #[test]
    fn a_second_form_token_still_proves_it_was_issued() {
        let family = new_family_id().unwrap();
        let message = format!("hearth refresh token\n{family}\n7");
        let token = format!(
            "hrt2.{family}.7.{}",
            URL_SAFE_NO_PAD.encode(test_mac(&message))
        );
        assert_eq!(
            parse_minted_refresh_token(&token, test_mac),
            Some(MintedRefresh {
                family_id: &family,
                household_id: None,
                number: 7,
                genuine: true,
            })
        );
        let moved = token.replacen(".7.", ".6.", 1);
        assert_eq!(
            parse_minted_refresh_token(&moved, test_mac).map(|p| p.genuine),
            Some(false)
        );
        // The second form's MAC does not make a third-form token genuine.
        let as_third = token.replacen("hrt2.", "hrt3.", 1).replacen(
            &format!("{family}."),
            &format!("{family}.{HOUSEHOLD}."),
            1,
        );
        assert_eq!(
            parse_minted_refresh_token(&as_third, test_mac).map(|p| p.genuine),
            Some(false)
        );
        for bad in [
            format!("hrt2.{family}.07.x"),
            format!("hrt2.{family}..{}", URL_SAFE_NO_PAD.encode([1u8; 32])),
            format!("{token}.extra"),
            token.replacen("hrt2", "hrt1", 1),
        ] {
            assert!(
                parse_minted_refresh_token(&bad, test_mac).is_none(),
                "{bad}"
            );
        }
    }
}
