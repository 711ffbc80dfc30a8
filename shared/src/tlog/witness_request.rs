//! The body of C2SP `tlog-witness` v1.0.0 `add-checkpoint`: an `old <size>` line, at most 63
//! consistency proof lines (base64 hashes), a blank line and the signed checkpoint; and the
//! `text/x.tlog.size` body of a 409.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::tree::Hash;

/// The most consistency proof lines a request may carry.
pub const MAX_PROOF_LINES: usize = 63;

/// The content type of a 409's body.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// A parsed `add-checkpoint` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint<'a> {
    pub old: u64,
    pub proof: Vec<Hash>,
    /// The signed checkpoint, verbatim.
    pub checkpoint: &'a str,
}

/// Why a body was refused (a 400). The text is safe to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the body starts with an `old <size>` line")]
    Old,
    #[error("a consistency proof line is the base64 of 32 bytes")]
    ProofLine,
    #[error("at most 63 consistency proof lines")]
    TooManyLines,
    #[error("the proof lines end with a blank line before the checkpoint")]
    NoCheckpoint,
}

impl<'a> AddCheckpoint<'a> {
    pub fn parse(body: &'a str) -> Result<Self, RequestError> {
        let (head, checkpoint) = body.split_once("\n\n").ok_or(RequestError::NoCheckpoint)?;
        let mut lines = head.split('\n');
        let old = lines
            .next()
            .and_then(|line| line.strip_prefix("old "))
            .and_then(parse_size)
            .ok_or(RequestError::Old)?;
        let mut proof = Vec::new();
        for line in lines {
            if proof.len() == MAX_PROOF_LINES {
                return Err(RequestError::TooManyLines);
            }
            proof.push(decode_hash(line).ok_or(RequestError::ProofLine)?);
        }
        Ok(Self {
            old,
            proof,
            checkpoint,
        })
    }

    /// The request body.
    pub fn text(&self) -> String {
        let mut body = format!("old {}\n", self.old);
        for hash in &self.proof {
            body.push_str(&STANDARD.encode(hash));
            body.push('\n');
        }
        body.push('\n');
        body.push_str(self.checkpoint);
        body
    }
}

/// A tree size as the protocol writes it: `0`, or decimal without leading zeros.
pub fn parse_size(text: &str) -> Option<u64> {
    let canonical = text == "0"
        || (!text.is_empty()
            && !text.starts_with('0')
            && text.len() <= 20
            && text.bytes().all(|byte| byte.is_ascii_digit()));
    canonical.then(|| text.parse().ok()).flatten()
}

/// The size in a 409's `text/x.tlog.size` body (`<size>\n`).
pub fn parse_size_body(body: &str) -> Option<u64> {
    parse_size(body.strip_suffix('\n')?)
}

fn decode_hash(text: &str) -> Option<Hash> {
    let bytes = STANDARD.decode(text).ok()?;
    let hash: Hash = bytes.try_into().ok()?;
    (STANDARD.encode(hash) == text).then_some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "o\n2\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u{2014} k AAAA\n";

    #[test]
    fn a_body_reads_back() {
        let request = AddCheckpoint {
            old: 1,
            proof: vec![[3; 32], [4; 32]],
            checkpoint: NOTE,
        };
        assert_eq!(AddCheckpoint::parse(&request.text()), Ok(request));
        let body = format!("old 0\n\n{NOTE}");
        let empty = AddCheckpoint::parse(&body).unwrap();
        assert_eq!(
            (empty.old, empty.proof.len(), empty.checkpoint),
            (0, 0, NOTE)
        );
    }

    #[test]
    fn malformed_bodies_are_named() {
        let line = STANDARD.encode([1u8; 32]);
        for (body, error) in [
            (format!("old 01\n\n{NOTE}"), RequestError::Old),
            (format!("old -1\n\n{NOTE}"), RequestError::Old),
            (format!("new 1\n\n{NOTE}"), RequestError::Old),
            (
                format!("old 1\nnot base64\n\n{NOTE}"),
                RequestError::ProofLine,
            ),
            (
                format!("old 1\n{}\n\n{NOTE}", &line[..20]),
                RequestError::ProofLine,
            ),
            ("old 1\n".to_owned(), RequestError::NoCheckpoint),
        ] {
            assert_eq!(AddCheckpoint::parse(&body), Err(error), "{body:?}");
        }
    }

    #[test]
    fn sixty_three_proof_lines_are_the_most() {
        let line = STANDARD.encode([1u8; 32]);
        let body = |count: usize| format!("old 5\n{}\n{NOTE}", format!("{line}\n").repeat(count));
        assert_eq!(AddCheckpoint::parse(&body(63)).unwrap().proof.len(), 63);
        assert_eq!(
            AddCheckpoint::parse(&body(64)),
            Err(RequestError::TooManyLines)
        );
    }

    #[test]
    fn a_size_body_is_decimal_and_a_newline() {
        assert_eq!(parse_size_body("12\n"), Some(12));
        assert_eq!(parse_size_body("0\n"), Some(0));
        for bad in ["12", "012\n", "\n", "1 2\n"] {
            assert_eq!(parse_size_body(bad), None, "{bad:?}");
        }
    }
}
