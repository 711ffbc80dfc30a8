//! Copies of the metadata documents claude.ai and Claude Code publish at fixed URLs, shipped
//! with Hearth (`data/cimd/`, with their sources and dates), for when those sites refuse
//! Hearth's fetch: a fetch from a cloud address has been answered with a Cloudflare challenge,
//! and a first fetch that fails has no kept copy to fall back on. A pinned copy is checked by
//! the same rules as a fetched one, and used only when a live fetch fails.

/// Each fixed URL and its shipped document.
const PINNED: &[(&str, &str)] = &[
    (
        "https://claude.ai/oauth/mcp-oauth-client-metadata",
        include_str!("../../../data/cimd/claude-ai.json"),
    ),
    (
        "https://claude.ai/oauth/claude-code-client-metadata",
        include_str!("../../../data/cimd/claude-code.json"),
    ),
];

/// The shipped copy of the document at `url`, if Hearth ships one.
pub fn pinned(url: &str) -> Option<&'static str> {
    PINNED
        .iter()
        .find(|(pinned_url, _)| *pinned_url == url)
        .map(|(_, document)| *document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::metadata_document::{DocumentAuth, parse_document};

    #[test]
    fn every_pinned_copy_passes_the_rules_for_its_own_url() {
        for (url, document) in PINNED {
            let checked = parse_document(url, document.as_bytes(), false)
                .unwrap_or_else(|error| panic!("{url}: {error}"));
            assert_eq!(checked.auth, DocumentAuth::None, "{url}");
            assert!(!checked.redirect_uris.is_empty(), "{url}");
        }
        assert!(pinned("https://claude.ai/oauth/other").is_none());
    }
}
