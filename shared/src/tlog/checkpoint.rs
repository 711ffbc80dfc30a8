//! C2SP `tlog-checkpoint` (a log's origin, size and root, as a note's text) and
//! `c2sp.org/tlog-proof@v1` (an inclusion proof with the checkpoint it leads to).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::tree::Hash;

/// The first line of a tlog-proof file.
pub const PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// What a checkpoint commits to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

/// Why a checkpoint or proof text was refused. The text is safe to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("a checkpoint is at least three non-empty lines, each ending in a newline")]
    Lines,
    #[error("the tree size is not a decimal number without leading zeros")]
    Size,
    #[error("the root hash is not the base64 of 32 bytes")]
    Root,
    #[error("a tlog-proof starts with c2sp.org/tlog-proof@v1")]
    ProofHeader,
    #[error("a tlog-proof names its leaf with an index line")]
    ProofIndex,
    #[error("a tlog-proof's hashes are base64 of 32 bytes each")]
    ProofHash,
    #[error("a tlog-proof has a blank line before its checkpoint")]
    ProofCheckpoint,
}

impl Checkpoint {
    /// The checkpoint's text, to be signed as a note.
    pub fn text(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        )
    }

    /// Parses a checkpoint's text strictly (extension lines are refused: Hearth writes none).
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let lines: Vec<&str> = text
            .strip_suffix('\n')
            .ok_or(FormatError::Lines)?
            .split('\n')
            .collect();
        let [origin, size, root] = lines.as_slice() else {
            return Err(FormatError::Lines);
        };
        if origin.is_empty() {
            return Err(FormatError::Lines);
        }
        Ok(Self {
            origin: (*origin).to_owned(),
            size: parse_decimal(size).ok_or(FormatError::Size)?,
            root: decode_hash(root).ok_or(FormatError::Root)?,
        })
    }
}

impl Checkpoint {
    /// Parses a checkpoint's first three lines and allows extension lines after them, as a
    /// witness must (it cosigns the whole text but vouches for those three lines only).
    pub fn parse_with_extensions(text: &str) -> Result<Self, FormatError> {
        let mut lines = text.splitn(4, '\n');
        let (Some(origin), Some(size), Some(root), Some(rest)) =
            (lines.next(), lines.next(), lines.next(), lines.next())
        else {
            return Err(FormatError::Lines);
        };
        let extensions_ok = rest.is_empty()
            || rest
                .strip_suffix('\n')
                .is_some_and(|rest| rest.split('\n').all(|line| !line.is_empty()));
        if !extensions_ok {
            return Err(FormatError::Lines);
        }
        Self::parse(&format!("{origin}\n{size}\n{root}\n"))
    }
}

/// `0`, or a decimal without leading zeros that fits 63 bits.
fn parse_decimal(text: &str) -> Option<u64> {
    let canonical = text == "0"
        || (!text.is_empty()
            && !text.starts_with('0')
            && text.len() <= 19
            && text.bytes().all(|b| b.is_ascii_digit()));
    canonical
        .then(|| text.parse::<u64>().ok())
        .flatten()
        .filter(|value| *value < 1 << 63)
}

fn decode_hash(text: &str) -> Option<Hash> {
    let bytes = STANDARD.decode(text).ok()?;
    let hash: Hash = bytes.try_into().ok()?;
    (STANDARD.encode(hash) == text).then_some(hash)
}

/// A tlog-proof file: the leaf's index, its audit path (the leaf's sibling first) and the
/// signed checkpoint the path leads to.
pub fn proof_text(index: u64, path: &[Hash], signed_checkpoint: &str) -> String {
    let mut text = format!("{PROOF_HEADER}\nindex {index}\n");
    for hash in path {
        text.push_str(&STANDARD.encode(hash));
        text.push('\n');
    }
    text.push('\n');
    text.push_str(signed_checkpoint);
    text
}

/// A parsed tlog-proof file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofFile<'a> {
    pub index: u64,
    pub path: Vec<Hash>,
    /// The signed checkpoint, verbatim.
    pub checkpoint: &'a str,
}

/// Parses a tlog-proof file (an `extra` line is allowed and ignored, as the spec says it is
/// unauthenticated).
pub fn parse_proof(text: &str) -> Result<ProofFile<'_>, FormatError> {
    let (head, checkpoint) = text
        .split_once("\n\n")
        .ok_or(FormatError::ProofCheckpoint)?;
    let mut lines = head.split('\n');
    if lines.next() != Some(PROOF_HEADER) {
        return Err(FormatError::ProofHeader);
    }
    let mut line = lines.next().ok_or(FormatError::ProofIndex)?;
    if line.starts_with("extra ") {
        line = lines.next().ok_or(FormatError::ProofIndex)?;
    }
    let index = line
        .strip_prefix("index ")
        .and_then(parse_decimal)
        .ok_or(FormatError::ProofIndex)?;
    let path = lines
        .map(|line| decode_hash(line).ok_or(FormatError::ProofHash))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ProofFile {
        index,
        path,
        checkpoint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_reads_back_and_only_its_strict_form_parses() {
        let checkpoint = Checkpoint {
            origin: "hearth.example/hearth/0123/decisions/1".into(),
            size: 8,
            root: [7; 32],
        };
        assert_eq!(
            Checkpoint::parse(&checkpoint.text()),
            Ok(checkpoint.clone())
        );
        let text = checkpoint.text();
        for (bad, error) in [
            (text.replacen("\n8\n", "\n08\n", 1), FormatError::Size),
            (text.replacen("\n8\n", "\n+8\n", 1), FormatError::Size),
            (
                text.replacen("\n8\n", "\n9223372036854775808\n", 1),
                FormatError::Size,
            ),
            (text.trim_end().to_owned(), FormatError::Lines),
            (format!("{text}extension\n"), FormatError::Lines),
            (format!("\n{text}"), FormatError::Lines),
            (text.replace("Bwc", "Bw"), FormatError::Root),
        ] {
            assert_eq!(Checkpoint::parse(&bad), Err(error), "{bad:?}");
        }
        assert_eq!(
            Checkpoint::parse("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
                .map(|c| c.size),
            Ok(0)
        );
        // A witness reads the first three lines and lets extension lines follow.
        assert_eq!(
            Checkpoint::parse_with_extensions(&format!("{text}extension\n")),
            Ok(checkpoint.clone())
        );
        assert_eq!(
            Checkpoint::parse_with_extensions(&text),
            Ok(checkpoint.clone())
        );
        for bad in [
            format!("{text}\n"),
            format!("{text}ext"),
            text.replacen("\n8\n", "\n08\n", 1),
        ] {
            assert!(Checkpoint::parse_with_extensions(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_proof_file_reads_back() {
        let note = "o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u{2014} k c2ln\n";
        let text = proof_text(5, &[[1; 32], [2; 32]], note);
        let parsed = parse_proof(&text).unwrap();
        assert_eq!(
            (parsed.index, parsed.path.len(), parsed.checkpoint),
            (5, 2, note)
        );
        let with_extra = text.replacen("index", "extra AAAA\nindex", 1);
        assert_eq!(parse_proof(&with_extra).unwrap().index, 5);
        assert_eq!(
            parse_proof(&text.replacen("@v1", "@v2", 1)),
            Err(FormatError::ProofHeader)
        );
        assert_eq!(
            parse_proof(&text.replacen("index 5", "index 05", 1)),
            Err(FormatError::ProofIndex)
        );
    }
}
