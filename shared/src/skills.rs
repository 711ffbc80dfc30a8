//! The Agent Skills in `skills/`, one per toolset, built into the binary. Each teaches an
//! agent when to call its toolset's tools, which results are untrusted data, what must be read
//! word for word and what to keep. MCP serves each as a prompt named like the skill
//! (`hearth-<toolset>`), and `hearth assistant` loads them as its system prompt.
//!
//! A skill file is YAML front matter (`name`, `description`) between `---` lines, then
//! Markdown. The front matter is read here by hand rather than with a YAML crate: these are
//! Hearth's own files with two single-line keys, and the tests parse them with a real YAML
//! parser (PyYAML, in `tests/python/test_skills.py`) as well as with [`Skill::parse`].

/// One skill: its toolset, its front matter and its instructions (the Markdown after the
/// front matter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The toolset it teaches, as named in `HEARTH_TOOLSETS`.
    pub toolset: &'static str,
    /// `hearth-<toolset>`: the skill's folder, and the prompt's name.
    pub name: &'static str,
    pub description: &'static str,
    pub instructions: &'static str,
}

/// Every skill's toolset and file, in the order toolsets are listed.
const SOURCES: &[(&str, &str)] = &[
    ("why", include_str!("../../skills/hearth-why/SKILL.md")),
    ("aion", include_str!("../../skills/hearth-aion/SKILL.md")),
    (
        "countersign",
        include_str!("../../skills/hearth-countersign/SKILL.md"),
    ),
];

/// Longest `name` the Agent Skills format allows.
pub const NAME_MAX: usize = 64;
/// Longest `description` the Agent Skills format allows.
pub const DESCRIPTION_MAX: usize = 1024;

impl Skill {
    /// Parses a skill file for `toolset`. The front matter must open the file, hold `name`
    /// and `description` as single-line values, and `name` must be `hearth-<toolset>` (the
    /// format names a skill like its folder).
    pub fn parse(toolset: &'static str, text: &'static str) -> Result<Self, String> {
        let rest = text
            .strip_prefix("---\n")
            .ok_or("the file does not open with a `---` front matter line")?;
        let end = rest
            .find("\n---\n")
            .ok_or("the front matter has no closing `---` line")?;
        let (front, instructions) = (&rest[..end], rest[end + "\n---\n".len()..].trim());
        let field = |key: &str| {
            front
                .lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .ok_or(format!("the front matter has no `{key}`"))
        };
        let (name, description) = (field("name")?, field("description")?);
        if name != format!("hearth-{toolset}") {
            return Err(format!("`name` is {name}, not hearth-{toolset}"));
        }
        if name.len() > NAME_MAX || description.chars().count() > DESCRIPTION_MAX {
            return Err("`name` or `description` is longer than the format allows".into());
        }
        if instructions.is_empty() {
            return Err("the skill has no instructions after its front matter".into());
        }
        Ok(Self {
            toolset,
            name,
            description,
            instructions,
        })
    }

    /// The skill as a host loads it: its description, then its instructions.
    pub fn text(&self) -> String {
        format!("{}\n\n{}", self.description, self.instructions)
    }
}

/// The skills of the toolsets named, in [`SOURCES`] order. A skill that does not parse is
/// left out with an error in the log (the tests parse every one, so this is a build mistake).
pub fn for_toolsets<'a>(toolsets: impl IntoIterator<Item = &'a str>) -> Vec<Skill> {
    let wanted: Vec<&str> = toolsets.into_iter().collect();
    SOURCES
        .iter()
        .filter(|(toolset, _)| wanted.contains(toolset))
        .filter_map(|(toolset, text)| {
            Skill::parse(toolset, text)
                .inspect_err(|reason| tracing::error!(toolset, "skill left out: {reason}"))
                .ok()
        })
        .collect()
}

/// Every built-in skill.
pub fn all() -> Vec<Skill> {
    for_toolsets(SOURCES.iter().map(|(toolset, _)| *toolset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_skill_parses_and_is_named_for_its_toolset() {
        for (toolset, text) in SOURCES {
            let skill = Skill::parse(toolset, text).unwrap_or_else(|e| panic!("{toolset}: {e}"));
            assert_eq!(skill.name, format!("hearth-{toolset}"));
            assert!(skill.description.len() > 40, "{toolset}");
            assert!(skill.instructions.starts_with("# "), "{toolset}");
        }
        assert_eq!(
            all().iter().map(|s| s.name).collect::<Vec<_>>(),
            ["hearth-why", "hearth-aion", "hearth-countersign"]
        );
        assert_eq!(for_toolsets(["countersign"])[0].name, "hearth-countersign");
    }

    #[test]
    fn malformed_front_matter_is_refused_with_a_reason() {
        let refusal = |text: &'static str| Skill::parse("why", text).unwrap_err();
        assert!(refusal("# no front matter").contains("open"));
        assert!(refusal("---\nname: hearth-why\n").contains("closing"));
        assert!(refusal("---\ndescription: d\n---\n# x").contains("`name`"));
        assert!(refusal("---\nname: hearth-why\n---\n# x").contains("`description`"));
        assert!(refusal("---\nname: other\ndescription: d\n---\n# x").contains("not hearth-why"));
        assert!(refusal("---\nname: hearth-why\ndescription: d\n---\n").contains("instructions"));
    }

    #[test]
    fn descriptions_hold_1024_characters_and_not_1025() {
        let at_limit: &'static str = Box::leak(
            format!(
                "---\nname: hearth-why\ndescription: {}\n---\n# x",
                "d".repeat(1024)
            )
            .into_boxed_str(),
        );
        assert!(Skill::parse("why", at_limit).is_ok());
        let over: &'static str = Box::leak(
            format!(
                "---\nname: hearth-why\ndescription: {}\n---\n# x",
                "d".repeat(1025)
            )
            .into_boxed_str(),
        );
        assert!(Skill::parse("why", over).unwrap_err().contains("longer"));
    }
}
