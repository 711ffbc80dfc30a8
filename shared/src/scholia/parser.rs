//! A parser for Scholia's XML-shaped notation.
//!
//! Tags whose name starts with an uppercase letter are Scholia elements (`<Step>`, the 32 atom
//! kinds, unknown kinds for the validator to report, and `<Meta:research-mode/>`). A `<`
//! followed by anything else (`<code>`, `a < b`) is text, as inline HTML in atom content is in
//! the specification's own examples. Comments (`<!-- … -->`) are skipped. Entities `&lt;`
//! `&gt;` `&amp;` `&quot;` `&apos;` and numeric references are decoded; any other `&` is text.
//!
//! Written by hand rather than with an XML library because the notation is not XML: atom
//! content mixes prose, inline HTML and operators, and an XML parser would reject most traces.
//! Input size and nesting depth are bounded, and every failure is an error with a position.

use std::fmt;

/// The largest snippet accepted, in bytes.
pub const MAX_SNIPPET_BYTES: usize = 65_536;

/// The deepest nesting of elements accepted (a `<Step>` counts).
pub const MAX_DEPTH: usize = 32;

/// One element: a `<Step>` or an atom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub tag: String,
    /// Attributes in document order, values decoded.
    pub attrs: Vec<(String, String)>,
    /// The element's own text, decoded, without its child elements.
    pub text: String,
    pub children: Vec<Node>,
    /// Where the element's `<` is.
    pub position: Position,
}

impl Node {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// A 1-based line and column (in characters) and the byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Why a snippet is not well formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{position}: {message}")]
pub struct ParseError {
    pub position: Position,
    pub message: String,
}

/// Parses a snippet into its top-level elements (Steps, or atoms outside any Step).
pub fn parse(input: &str) -> Result<Vec<Node>, ParseError> {
    if input.len() > MAX_SNIPPET_BYTES {
        return Err(ParseError {
            position: Position {
                line: 1,
                column: 1,
                offset: 0,
            },
            message: format!(
                "the snippet is {} bytes; at most {MAX_SNIPPET_BYTES} are accepted",
                input.len()
            ),
        });
    }
    let line_starts = std::iter::once(0)
        .chain(input.match_indices('\n').map(|(at, _)| at + 1))
        .collect();
    Parser {
        input,
        at: 0,
        line_starts,
    }
    .document()
}

struct Parser<'a> {
    input: &'a str,
    at: usize,
    /// Byte offset of the start of every line, for positions without rescanning.
    line_starts: Vec<usize>,
}

/// An element being read: its node and the text gathered so far.
struct Open {
    node: Node,
}

impl<'a> Parser<'a> {
    fn document(&mut self) -> Result<Vec<Node>, ParseError> {
        let mut roots: Vec<Node> = Vec::new();
        let mut stack: Vec<Open> = Vec::new();
        while self.at < self.input.len() {
            let rest = &self.input[self.at..];
            let Some(lt) = rest.find('<') else {
                self.text(&mut stack, rest, self.input.len());
                break;
            };
            if lt > 0 {
                self.text(&mut stack, &rest[..lt], self.at + lt);
                continue;
            }
            let after = &rest[1..];
            if after.starts_with("!--") {
                let end = after
                    .find("-->")
                    .ok_or_else(|| self.error(self.at, "unclosed comment"))?;
                self.at += 1 + end + 3;
            } else if let Some(name) = after.strip_prefix('/').filter(|n| starts_upper(n)) {
                let start = self.at;
                let tag = tag_name(name);
                let close = 2 + tag.len();
                if !self.input[start + close..].starts_with('>') {
                    return Err(self.error(start + close, "expected '>' to end the closing tag"));
                }
                let open = stack.pop().ok_or_else(|| {
                    self.error(start, &format!("closing tag </{tag}> has no opening tag"))
                })?;
                if open.node.tag != tag {
                    return Err(self.error(
                        start,
                        &format!("closing tag </{tag}> does not match <{}>", open.node.tag),
                    ));
                }
                self.at = start + close + 1;
                attach(&mut stack, &mut roots, open.node);
            } else if starts_upper(after) {
                let (node, self_closing) = self.open_tag()?;
                if self_closing {
                    attach(&mut stack, &mut roots, node);
                } else {
                    if stack.len() >= MAX_DEPTH {
                        return Err(self.error(
                            node.position.offset,
                            &format!("elements are nested more than {MAX_DEPTH} deep"),
                        ));
                    }
                    stack.push(Open { node });
                }
            } else {
                // Not a Scholia element: a literal '<' in the text.
                self.text(&mut stack, "<", self.at + 1);
            }
        }
        if let Some(open) = stack.last() {
            return Err(ParseError {
                position: open.node.position,
                message: format!("<{}> is never closed", open.node.tag),
            });
        }
        Ok(roots)
    }

    /// Adds `raw` (decoded) to the innermost open element and moves past it to `end`.
    fn text(&mut self, stack: &mut [Open], raw: &str, end: usize) {
        if let Some(open) = stack.last_mut() {
            decode_into(raw, &mut open.node.text);
        }
        // Text outside every element is ignored, as prose around a trace is.
        self.at = end;
    }

    /// Reads `<Name attr="v" ...>` or `.../>` at `self.at`.
    fn open_tag(&mut self) -> Result<(Node, bool), ParseError> {
        let start = self.at;
        let tag = tag_name(&self.input[start + 1..]);
        let mut at = start + 1 + tag.len();
        let mut attrs: Vec<(String, String)> = Vec::new();
        loop {
            let rest = &self.input[at..];
            let trimmed = rest.trim_start();
            at += rest.len() - trimmed.len();
            if trimmed.starts_with("/>") {
                at += 2;
                break;
            }
            if trimmed.starts_with('>') {
                at += 1;
                self.at = at;
                return Ok((self.node(tag, attrs, start), false));
            }
            if trimmed.is_empty() {
                return Err(self.error(start, &format!("the tag <{tag}> is never finished")));
            }
            if rest.len() == trimmed.len() {
                // Attributes are separated from the tag name and each other by whitespace.
                return Err(self.error(at, &format!("unexpected character in the tag <{tag}>")));
            }
            let name_len = trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(trimmed.len());
            if name_len == 0 || !trimmed.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            {
                return Err(self.error(at, &format!("bad attribute in the tag <{tag}>")));
            }
            let name = &trimmed[..name_len];
            let name_at = at;
            at += name_len;
            let rest = &self.input[at..];
            let Some(value_part) = rest.trim_start().strip_prefix('=') else {
                return Err(self.error(at, &format!("attribute {name} has no value")));
            };
            let value_part = value_part.trim_start();
            at = self.input.len() - value_part.len();
            let quote = value_part
                .chars()
                .next()
                .filter(|c| *c == '"' || *c == '\'')
                .ok_or_else(|| self.error(at, &format!("the value of {name} must be quoted")))?;
            let body = &value_part[1..];
            let end = body
                .find(quote)
                .ok_or_else(|| self.error(at, &format!("the value of {name} is never closed")))?;
            let raw = &body[..end];
            if raw.contains('<') {
                return Err(self.error(at, &format!("the value of {name} contains '<'")));
            }
            if attrs.iter().any(|(existing, _)| existing == name) {
                return Err(self.error(name_at, &format!("attribute {name} appears twice")));
            }
            let mut value = String::new();
            decode_into(raw, &mut value);
            attrs.push((name.to_owned(), value));
            at += 1 + end + 1;
        }
        self.at = at;
        Ok((self.node(tag, attrs, start), true))
    }

    fn node(&self, tag: &str, attrs: Vec<(String, String)>, offset: usize) -> Node {
        Node {
            tag: tag.to_owned(),
            attrs,
            text: String::new(),
            children: Vec::new(),
            position: self.position(offset),
        }
    }

    fn position(&self, offset: usize) -> Position {
        let line = self.line_starts.partition_point(|start| *start <= offset);
        let line_start = self.line_starts[line - 1];
        Position {
            line,
            column: self.input[line_start..offset].chars().count() + 1,
            offset,
        }
    }

    fn error(&self, offset: usize, message: &str) -> ParseError {
        ParseError {
            position: self.position(offset),
            message: message.to_owned(),
        }
    }
}

fn attach(stack: &mut [Open], roots: &mut Vec<Node>, node: Node) {
    match stack.last_mut() {
        Some(parent) => parent.node.children.push(node),
        None => roots.push(node),
    }
}

fn starts_upper(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_uppercase())
}

/// `Name` or `Name:pseudo-name` at the start of `text`.
fn tag_name(text: &str) -> &str {
    let name_end = text
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(text.len());
    let rest = &text[name_end..];
    match rest.strip_prefix(':') {
        Some(pseudo) if pseudo.starts_with(|c: char| c.is_ascii_lowercase()) => {
            let pseudo_len = pseudo
                .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
                .unwrap_or(pseudo.len());
            &text[..name_end + 1 + pseudo_len]
        }
        _ => &text[..name_end],
    }
}

fn decode_into(raw: &str, out: &mut String) {
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let entity_end = rest.find(';').filter(|end| *end <= 10);
        let decoded = entity_end.and_then(|end| entity(&rest[1..end]));
        match (decoded, entity_end) {
            (Some(c), Some(end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
}

fn entity(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_atoms_attributes_text_and_nesting() {
        let trace = parse(
            "<Step id=\"S_01\" name='first'>\n  <Action id=\"A_01\">Edited <code>x</code> &amp; more.\n    <Finding id=\"F_01\">ok</Finding>\n  </Action>\n  <Meta:research-mode/>\n</Step>",
        )
        .unwrap();
        assert_eq!(trace.len(), 1);
        let step = &trace[0];
        assert_eq!(
            (step.tag.as_str(), step.attr("name")),
            ("Step", Some("first"))
        );
        let action = &step.children[0];
        assert_eq!(action.attr("id"), Some("A_01"));
        assert!(
            action.text.contains("Edited <code>x</code> & more."),
            "{:?}",
            action.text
        );
        assert_eq!(action.children[0].text, "ok");
        assert_eq!(
            action.position,
            Position {
                line: 2,
                column: 3,
                offset: 32
            }
        );
        assert_eq!(step.children[1].tag, "Meta:research-mode");
    }

    #[test]
    fn malformed_input_is_an_error_with_a_position() {
        let cases = [
            ("<Step id=\"S\"><Action>x</Step>", "does not match", (1, 23)),
            (
                "<Action id=\"a\"x=\"b\">x</Action>",
                "unexpected character",
                (1, 15),
            ),
            ("<Action@>x</Action>", "unexpected character", (1, 8)),
            ("<Step>\n<Action>x", "never closed", (2, 1)),
            ("</Finding>", "has no opening tag", (1, 1)),
            ("<Action id=A_1>x</Action>", "must be quoted", (1, 12)),
            (
                "<Action id=\"a\" id=\"b\">x</Action>",
                "appears twice",
                (1, 16),
            ),
            ("<Action id=\"a<b\">x</Action>", "contains '<'", (1, 12)),
            ("<Action id=\"a>x</Action>", "never closed", (1, 12)),
            ("<Action id>x</Action>", "has no value", (1, 11)),
            ("<Action id=\"a\"", "never finished", (1, 1)),
            ("<!-- open", "unclosed comment", (1, 1)),
        ];
        for (input, message, (line, column)) in cases {
            let error = parse(input).unwrap_err();
            assert!(error.message.contains(message), "{input}: {error}");
            assert_eq!(
                (error.position.line, error.position.column),
                (line, column),
                "{input}: {error}"
            );
        }
    }

    #[test]
    fn size_is_bounded_at_the_limit_and_one_past() {
        let filler = |len: usize| format!("<Print>{}</Print>", "x".repeat(len - 15));
        assert_eq!(filler(MAX_SNIPPET_BYTES).len(), MAX_SNIPPET_BYTES);
        assert!(parse(&filler(MAX_SNIPPET_BYTES)).is_ok());
        let error = parse(&filler(MAX_SNIPPET_BYTES + 1)).unwrap_err();
        assert!(error.message.contains("at most 65536"), "{error}");
    }

    #[test]
    fn depth_is_bounded_at_the_limit_and_one_past() {
        let nested = |depth: usize| {
            format!(
                "{}x{}",
                "<Thinking>".repeat(depth),
                "</Thinking>".repeat(depth)
            )
        };
        assert!(parse(&nested(MAX_DEPTH)).is_ok());
        let error = parse(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(
            error.message.contains("nested more than 32 deep"),
            "{error}"
        );
    }

    #[test]
    fn prose_comments_and_stray_ampersands_are_text() {
        let trace =
            parse("intro <!-- note --> <Finding>a < b & c &unknown; &#65;&#x42;</Finding> outro")
                .unwrap();
        assert_eq!(trace[0].text, "a < b & c &unknown; AB");
    }
}
