//! Writing atoms back out in Scholia notation, so that what Hearth stores can be quoted,
//! linted and re-parsed to the same atoms (the same text, attributes and `canonical_id`).

use serde_json::Value;

use super::Atom;

/// `atoms` as one `<Step>`, each atom on its own line with its `id`, `canonical_id` and
/// attributes.
pub fn step(id: &str, name: &str, atoms: &[Atom]) -> String {
    let mut out = format!(
        "<Step id=\"{}\" name=\"{}\">\n",
        escape(id, true),
        escape(name, true)
    );
    for atom in atoms {
        out.push_str("  <");
        out.push_str(&atom.kind);
        out.push_str(&format!(" id=\"{}\"", escape(&atom.id, true)));
        for (name, value) in &atom.attrs {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            out.push_str(&format!(" {name}=\"{}\"", escape(&text, true)));
        }
        out.push_str(&format!(
            " canonical_id=\"{}\">",
            escape(&atom.canonical_id, true)
        ));
        out.push_str(&escape(&atom.content, false));
        out.push_str(&format!("</{}>\n", atom.kind));
    }
    out.push_str("</Step>");
    out
}

/// Escapes `&`, `<` and `>` (and quotes, inside an attribute).
fn escape(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}
