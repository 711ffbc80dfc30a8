//! C2SP `tlog-policy`: which logs' checkpoints are accepted, which witnesses are known, and
//! the quorum of their cosignatures a checkpoint needs.
//!
//! The grammar, line by line (spaces and tabs separate items; blank lines and `#` comments
//! are ignored; a group or the quorum names only witnesses and groups defined above it):
//!
//! ```text
//! log <vkey> [<url>]
//! witness <name> <vkey> [<url>]
//! group <name> all|any|<k> <name>...
//! quorum <name>|none
//! ```
//!
//! Hearth's deviation, stated wherever a policy is read: a log's vkey name is the key name of
//! the deployment (`<host>/hearth-log/v<N>`), not each checkpoint's origin, because one key
//! signs every household's logs and each household's log has its own origin.

use std::collections::HashSet;

use super::cosignature::{CosignatureError, CosignatureVerifier, split_note};
use super::note::{self, NoteVerifier, parse_vkey};

/// The most logs, witnesses and groups one policy may define (the spec recommends supporting
/// at least 32 of each).
pub const MAX_ENTRIES: usize = 64;

/// A known witness.
#[derive(Debug, Clone)]
pub struct PolicyWitness {
    /// The policy's name for it (not its key name).
    pub name: String,
    pub verifier: CosignatureVerifier,
    /// Its submission prefix, when the policy gives one.
    pub url: Option<String>,
}

/// A known log.
#[derive(Debug, Clone)]
pub struct PolicyLog {
    pub verifier: NoteVerifier,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

#[derive(Debug, Clone)]
struct Group {
    name: String,
    threshold: usize,
    members: Vec<Member>,
}

/// A parsed policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub logs: Vec<PolicyLog>,
    pub witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    /// `None` is `quorum none`.
    quorum: Option<Member>,
}

/// Why a policy text was refused: the line (1-based) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct PolicyError {
    pub line: usize,
    pub reason: String,
}

/// Why a checkpoint did not meet a policy. The text is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuorumError {
    #[error("the checkpoint is not signed by a log the policy knows: {0}")]
    Log(String),
    #[error("quorum not met: cosigned by {}", cosigners(.0))]
    NotMet(Vec<String>),
}

fn cosigners(names: &[String]) -> String {
    if names.is_empty() {
        "no known witness".into()
    } else {
        names.join(", ")
    }
}

/// A checkpoint that met the policy: its note text, and the witnesses (policy names) whose
/// cosignatures verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed<'a> {
    pub text: &'a str,
    pub cosigned_by: Vec<String>,
}

impl Policy {
    /// Parses a policy text strictly.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let mut policy = Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        };
        let mut quorum_seen = false;
        let mut names: HashSet<String> = HashSet::new();
        for (number, line) in text.split('\n').enumerate() {
            let error = |reason: String| PolicyError {
                line: number + 1,
                reason,
            };
            if line
                .bytes()
                .any(|byte| byte < 0x20 && byte != b'\t' || byte == 0x7f)
            {
                return Err(error("only tab may stand among control characters".into()));
            }
            let items: Vec<&str> = line
                .split([' ', '\t'])
                .filter(|item| !item.is_empty())
                .collect();
            let Some((&keyword, rest)) = items.split_first() else {
                continue;
            };
            if keyword.starts_with('#') {
                continue;
            }
            match keyword {
                "log" => {
                    let (vkey, url) = match rest {
                        [vkey] => (*vkey, None),
                        [vkey, url] => (*vkey, Some((*url).to_owned())),
                        _ => return Err(error("a log line is: log <vkey> [<url>]".into())),
                    };
                    let verifier = NoteVerifier::parse(vkey)
                        .map_err(|reason| error(format!("the log's vkey: {reason}")))?;
                    if policy
                        .logs
                        .iter()
                        .any(|log| log.verifier.public_key() == verifier.public_key())
                    {
                        return Err(error("this log's key is listed twice".into()));
                    }
                    if policy.logs.len() == MAX_ENTRIES {
                        return Err(error(format!("at most {MAX_ENTRIES} logs")));
                    }
                    policy.logs.push(PolicyLog { verifier, url });
                }
                "witness" => {
                    let (name, vkey, url) = match rest {
                        [name, vkey] => (*name, *vkey, None),
                        [name, vkey, url] => (*name, *vkey, Some((*url).to_owned())),
                        _ => {
                            return Err(error(
                                "a witness line is: witness <name> <vkey> [<url>]".into(),
                            ));
                        }
                    };
                    define(&mut names, name).map_err(error)?;
                    let verifier = CosignatureVerifier::parse(vkey)
                        .map_err(|reason| error(format!("witness {name}'s vkey: {reason}")))?;
                    if policy
                        .witnesses
                        .iter()
                        .any(|known| known.verifier.public_key() == verifier.public_key())
                    {
                        return Err(error(format!("witness {name}'s key is listed twice")));
                    }
                    if policy.witnesses.len() == MAX_ENTRIES {
                        return Err(error(format!("at most {MAX_ENTRIES} witnesses")));
                    }
                    policy.witnesses.push(PolicyWitness {
                        name: name.to_owned(),
                        verifier,
                        url,
                    });
                }
                "group" => {
                    let [name, threshold, members @ ..] = rest else {
                        return Err(error(
                            "a group line is: group <name> all|any|<k> <name>...".into(),
                        ));
                    };
                    if members.is_empty() {
                        return Err(error(format!("group {name} has no members")));
                    }
                    let mut resolved = Vec::with_capacity(members.len());
                    for member in members.iter() {
                        let found = policy.member(member).ok_or_else(|| {
                            error(format!(
                                "group {name}: {member} is not a witness or group defined above"
                            ))
                        })?;
                        if resolved.contains(&found) {
                            return Err(error(format!("group {name} lists {member} twice")));
                        }
                        resolved.push(found);
                    }
                    let threshold = match *threshold {
                        "all" => resolved.len(),
                        "any" => 1,
                        number => parse_threshold(number)
                            .filter(|k| (1..=resolved.len()).contains(k))
                            .ok_or_else(|| {
                                error(format!(
                                    "group {name}'s threshold is all, any, or a decimal k with 1 <= k <= {}",
                                    resolved.len()
                                ))
                            })?,
                    };
                    define(&mut names, name).map_err(error)?;
                    if policy.groups.len() == MAX_ENTRIES {
                        return Err(error(format!("at most {MAX_ENTRIES} groups")));
                    }
                    policy.groups.push(Group {
                        name: (*name).to_owned(),
                        threshold,
                        members: resolved,
                    });
                }
                "quorum" => {
                    let [name] = rest else {
                        return Err(error("a quorum line is: quorum <name>".into()));
                    };
                    if quorum_seen {
                        return Err(error("a policy has exactly one quorum line".into()));
                    }
                    quorum_seen = true;
                    policy.quorum = if *name == "none" {
                        None
                    } else {
                        Some(policy.member(name).ok_or_else(|| {
                            error(format!(
                                "the quorum names {name}, which is not a witness or group defined above"
                            ))
                        })?)
                    };
                }
                other => {
                    return Err(error(format!(
                        "{other:?} is not log, witness, group or quorum"
                    )));
                }
            }
        }
        if !quorum_seen {
            return Err(PolicyError {
                line: text.split('\n').count(),
                reason: "a policy has exactly one quorum line".into(),
            });
        }
        Ok(policy)
    }

    fn member(&self, name: &str) -> Option<Member> {
        if let Some(index) = self.witnesses.iter().position(|w| w.name == name) {
            return Some(Member::Witness(index));
        }
        self.groups
            .iter()
            .position(|group| group.name == name)
            .map(Member::Group)
    }

    /// Whether the witnesses at `cosigned` (indexes into [`Policy::witnesses`]) meet the
    /// quorum.
    pub fn quorum_met(&self, cosigned: &HashSet<usize>) -> bool {
        self.quorum
            .is_none_or(|member| self.witnessed(member, cosigned))
    }

    /// Whether the policy requires any cosignature at all.
    pub fn requires_witnesses(&self) -> bool {
        self.quorum.is_some()
    }

    fn witnessed(&self, member: Member, cosigned: &HashSet<usize>) -> bool {
        match member {
            Member::Witness(index) => cosigned.contains(&index),
            Member::Group(index) => {
                let group = &self.groups[index];
                group
                    .members
                    .iter()
                    .filter(|member| self.witnessed(**member, cosigned))
                    .count()
                    >= group.threshold
            }
        }
    }

    /// The indexes of the witnesses whose cosignature among `lines` verifies over `text`. A
    /// line by an unknown key is ignored, and a known key's bad cosignature does not count.
    pub fn cosigned_by(&self, text: &str, lines: &[&str]) -> HashSet<usize> {
        let mut cosigned = HashSet::new();
        for line in lines {
            for (index, witness) in self.witnesses.iter().enumerate() {
                match witness.verifier.verify_line(line, text) {
                    Ok(_) => {
                        cosigned.insert(index);
                    }
                    Err(CosignatureError::OtherKey | CosignatureError::Malformed) => {}
                    Err(CosignatureError::BadSignature(_)) => {}
                }
            }
        }
        cosigned
    }

    /// Checks a signed checkpoint: signed by one of the policy's logs, and cosigned by a
    /// quorum of its witnesses.
    pub fn verify<'a>(&self, note_text: &'a str) -> Result<Witnessed<'a>, QuorumError> {
        let verifiers: Vec<NoteVerifier> =
            self.logs.iter().map(|log| log.verifier.clone()).collect();
        let text = note::verify(note_text, &verifiers)
            .map_err(|error| QuorumError::Log(error.to_string()))?;
        let (_, lines) =
            split_note(note_text).ok_or_else(|| QuorumError::Log("malformed note".into()))?;
        let cosigned = self.cosigned_by(text, &lines);
        let mut names: Vec<String> = cosigned
            .iter()
            .map(|index| self.witnesses[*index].name.clone())
            .collect();
        names.sort();
        if self.quorum_met(&cosigned) {
            Ok(Witnessed {
                text,
                cosigned_by: names,
            })
        } else {
            Err(QuorumError::NotMet(names))
        }
    }
}

/// Defines `name` in the namespace witnesses and groups share.
fn define(names: &mut HashSet<String>, name: &str) -> Result<(), String> {
    if name == "none" {
        return Err("none is predefined and cannot name a witness or group".into());
    }
    if !names.insert(name.to_owned()) {
        return Err(format!("{name} is defined twice"));
    }
    Ok(())
}

/// A decimal without leading zeros.
fn parse_threshold(text: &str) -> Option<usize> {
    (!text.starts_with('0') && text.bytes().all(|byte| byte.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// Whether `vkey` is a verifier key of the given signature type (0x01 for a log, 0x04 for a
/// witness), for messages that name the wrong kind.
pub fn vkey_type(vkey: &str) -> Option<u8> {
    parse_vkey(vkey).ok().map(|parsed| parsed.key_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::cosignature::Cosigner;
    use crate::tlog::note::{NoteSigner, sign};

    fn witness(name: &str, seed: u8) -> Cosigner {
        Cosigner::from_seed(name, &[seed; 32]).unwrap()
    }

    fn log() -> NoteSigner {
        NoteSigner::from_seed("hearth.example/hearth-log/v1", &[1; 32]).unwrap()
    }

    fn policy_text(quorum: &str) -> String {
        let mut text = format!("# a comment\nlog {}\n\n", log().vkey());
        for (name, seed) in [("X1", 11), ("X2", 12), ("X3", 13), ("Y1", 21), ("Y2", 22)] {
            text.push_str(&format!(
                "witness {name} {} http://127.0.0.1:9/{name}\n",
                witness(&format!("w.example/{name}"), seed).vkey()
            ));
        }
        text.push_str("group X 2 X1 X2 X3\n\tgroup Y any Y1 Y2  \ngroup XY all X Y\n");
        text.push_str(&format!("quorum {quorum}\n"));
        text
    }

    fn checkpoint_signed_by(names: &[(&str, u8)]) -> String {
        let text = "hearth.example/hearth/ab/decisions/1\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
        let mut note = sign(text, &[&log()]);
        for (name, seed) in names {
            note.push_str(
                &witness(&format!("w.example/{name}"), *seed).cosign(text, 1_800_000_000),
            );
        }
        note
    }

    #[test]
    fn nested_groups_need_k_of_n_at_every_level() {
        let policy = Policy::parse(&policy_text("XY")).unwrap();
        assert_eq!(policy.witnesses.len(), 5);
        let met = checkpoint_signed_by(&[("X1", 11), ("X3", 13), ("Y2", 22)]);
        assert_eq!(
            policy.verify(&met).unwrap().cosigned_by,
            vec!["X1", "X3", "Y2"]
        );
        let one_x = checkpoint_signed_by(&[("X1", 11), ("Y1", 21), ("Y2", 22)]);
        assert_eq!(
            policy.verify(&one_x),
            Err(QuorumError::NotMet(vec![
                "X1".into(),
                "Y1".into(),
                "Y2".into()
            ]))
        );
        let no_y = checkpoint_signed_by(&[("X1", 11), ("X2", 12)]);
        assert!(policy.verify(&no_y).is_err());
        assert!(
            Policy::parse(&policy_text("none"))
                .unwrap()
                .verify(&checkpoint_signed_by(&[]))
                .is_ok()
        );
    }

    #[test]
    fn an_unknown_key_is_ignored_and_a_bad_cosignature_does_not_count() {
        let policy = Policy::parse(&policy_text("X")).unwrap();
        // A stranger's line is ignored; X1 and X2 meet 2-of-3.
        let ok = checkpoint_signed_by(&[("X1", 11), ("Z9", 99), ("X2", 12)]);
        assert!(policy.verify(&ok).is_ok());
        // X2's line signed by another key (same name, wrong key id) is ignored; a flipped
        // byte in X2's genuine signature does not count either.
        let wrong_key = checkpoint_signed_by(&[("X1", 11), ("X2", 77)]);
        assert!(policy.verify(&wrong_key).is_err());
        let genuine = checkpoint_signed_by(&[("X1", 11), ("X2", 12)]);
        let x2_line = genuine.lines().last().unwrap().to_owned();
        let mut blob = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            x2_line.rsplit(' ').next().unwrap(),
        )
        .unwrap();
        blob[20] ^= 1;
        let flipped = genuine.replace(
            x2_line.rsplit(' ').next().unwrap(),
            &base64::Engine::encode(&base64::engine::general_purpose::STANDARD, blob),
        );
        assert_eq!(
            policy.verify(&flipped),
            Err(QuorumError::NotMet(vec!["X1".into()]))
        );
        // A checkpoint of a log the policy does not list fails before any quorum.
        let stranger = NoteSigner::from_seed("other/hearth-log/v1", &[5; 32]).unwrap();
        let foreign = sign(
            "o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
            &[&stranger],
        );
        assert!(matches!(policy.verify(&foreign), Err(QuorumError::Log(_))));
    }

    #[test]
    fn the_grammar_refuses_what_the_spec_forbids() {
        let good = policy_text("XY");
        let w = witness("w.example/new", 40).vkey();
        for (bad, line) in [
            (good.replace("quorum XY\n", ""), None),
            (format!("{good}quorum X\n"), None),
            (good.replace("quorum XY", "quorum Z"), None),
            (
                good.replace("group X 2 X1 X2 X3", "group X 4 X1 X2 X3"),
                Some(9),
            ),
            (
                good.replace("group X 2 X1 X2 X3", "group X 0 X1 X2 X3"),
                Some(9),
            ),
            (
                good.replace("group X 2 X1 X2 X3", "group X 02 X1 X2 X3"),
                Some(9),
            ),
            (
                good.replace("group X 2 X1 X2 X3", "group X 2 X1 X1 X3"),
                Some(9),
            ),
            (good.replace("group X 2 X1 X2 X3", "group X any"), Some(9)),
            (
                good.replace("group X 2 X1 X2 X3", "group X any none"),
                Some(9),
            ),
            // A group may only name what is defined above it.
            (
                good.replace("group X 2 X1 X2 X3", "group X 2 X1 X2 XY"),
                Some(9),
            ),
            (
                good.replace("group XY all X Y", "group X1 all X Y"),
                Some(11),
            ),
            (format!("witness none {w}\n{good}"), Some(1)),
            (format!("witness A {w}\nwitness B {w}\n{good}"), Some(2)),
            (format!("log {}\n{good}", log().vkey()), Some(3)),
            // A log key where a witness key belongs, and the other way round.
            (format!("witness A {}\n{good}", log().vkey()), Some(1)),
            (format!("log {w}\n{good}"), Some(1)),
            (format!("frobnicate\n{good}"), Some(1)),
            (format!("log\n{good}"), Some(1)),
            (format!("witness A {w} url extra\n{good}"), Some(1)),
            (format!("# ok\r\n{good}"), Some(1)),
        ] {
            let error = Policy::parse(&bad).expect_err(&bad);
            if let Some(line) = line {
                assert_eq!(error.line, line, "{bad}: {error}");
            }
        }
    }

    #[test]
    fn limits_hold_at_the_limit_and_refuse_one_past_it() {
        let mut text = String::new();
        for index in 0..MAX_ENTRIES {
            let name = format!("w{index}");
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(index as u64 + 1).to_be_bytes());
            let vkey = Cosigner::from_seed(&format!("w.example/{name}"), &seed)
                .unwrap()
                .vkey();
            text.push_str(&format!("witness {name} {vkey}\n"));
        }
        assert!(Policy::parse(&format!("{text}quorum w0\n")).is_ok());
        let extra = witness("w.example/extra", 250).vkey();
        let error =
            Policy::parse(&format!("{text}witness extra {extra}\nquorum w0\n")).unwrap_err();
        assert_eq!(error.line, MAX_ENTRIES + 1);
    }
}
