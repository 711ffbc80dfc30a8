//! The four Scholialang reference tools served beside the decision tools: the closed
//! vocabulary, a lookup over it, and the validator over a snippet or a whole trace. They need
//! no storage, so they work even when decision storage is unavailable.

use std::collections::BTreeMap;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scholia::catalog::{self, AttrType, OperatorStatus};
use crate::scholia::validator::{self, Issue, Mode};
use crate::toolset::{ToolOutput, decode, describe};

pub const SCHOLIA_CATALOG: &str = "scholia_catalog";
pub const SCHOLIA_LOOKUP: &str = "scholia_lookup";
pub const SCHOLIA_LINT_SNIPPET: &str = "scholia_lint_snippet";
pub const SCHOLIA_LINT_TRACE: &str = "scholia_lint_trace";

/// The longest snippet the lint tools take, in characters. Every argument of one call together
/// is also held to the endpoint's 8,192-byte limit.
pub const SNIPPET_MAX: usize = 8000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LookupArgs {
    /// An atom kind, operator or relation, or a word from their descriptions; any case.
    #[schemars(length(min = 1, max = 100))]
    pub term: String,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LintMode {
    /// Every validator rule.
    #[default]
    Full,
    /// Only that tags open and close properly.
    TagBalance,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintSnippetArgs {
    /// Scholia notation: atoms, optionally inside `<Step>` containers.
    #[schemars(length(min = 1, max = 8000))]
    pub snippet: String,
    /// `full` (the default) or `tag_balance`.
    #[serde(default)]
    pub mode: LintMode,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintTraceArgs {
    /// A whole Scholia trace: `<Step>` containers holding atoms.
    #[schemars(length(min = 1, max = 8000))]
    pub snippet: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogAttribute {
    pub name: String,
    /// `text`, `int`, `float`, `list`, `confidence`, `location`, or `one of: a | b | …`.
    #[serde(rename = "type")]
    pub value_type: String,
    pub required: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogAtom {
    /// Lower-case kind, e.g. `finding`.
    pub id: String,
    /// The tag as written, e.g. `Finding`.
    pub tag: String,
    pub category: String,
    pub summary: String,
    pub attributes: Vec<CatalogAttribute>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogOperator {
    pub name: String,
    pub meaning: String,
    pub example: String,
    /// `canonical` or `emergent` (provisional).
    pub status: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogRelation {
    /// The atom kind carrying the reference.
    pub from: String,
    pub attribute: String,
    /// Kinds the reference must name; empty for any atom.
    pub to: Vec<String>,
    pub meaning: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogResource {
    pub uri: String,
    pub description: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogOutput {
    pub atoms: Vec<CatalogAtom>,
    pub operators: Vec<CatalogOperator>,
    pub relations: Vec<CatalogRelation>,
    pub resources: Vec<CatalogResource>,
    pub validator_version: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LookupMatch {
    /// `atom`, `operator` or `relation`.
    #[serde(rename = "type")]
    pub match_type: &'static str,
    pub name: String,
    pub summary: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LookupOutput {
    pub term: String,
    pub matches: Vec<LookupMatch>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LintIssue {
    pub rule: String,
    pub atom_id: String,
    pub message: String,
    /// `error` or `warning`.
    pub severity: String,
}

impl From<Issue> for LintIssue {
    fn from(issue: Issue) -> Self {
        Self {
            rule: issue.rule.to_owned(),
            atom_id: issue.atom_id,
            message: issue.message,
            severity: match issue.severity {
                validator::Severity::Error => "error",
                validator::Severity::Warning => "warning",
            }
            .to_owned(),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LintSnippetOutput {
    /// True when there are no errors (warnings do not count).
    pub ok: bool,
    pub mode: LintMode,
    pub errors: Vec<LintIssue>,
    pub warnings: Vec<LintIssue>,
    pub validator_version: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LintTraceOutput {
    pub ok: bool,
    pub mode: LintMode,
    pub errors: Vec<LintIssue>,
    pub warnings: Vec<LintIssue>,
    pub validator_version: String,
    pub total_errors: usize,
    pub total_warnings: usize,
    /// Errors per rule, for the rules that have any.
    pub errors_by_rule: BTreeMap<String, usize>,
    pub warnings_by_rule: BTreeMap<String, usize>,
    /// Every rule the validator runs.
    pub rules: Vec<String>,
}

fn annotations(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// The reference tools' descriptions, in listing order.
pub fn tools() -> Vec<Tool> {
    vec![
        describe::<CatalogArgs, CatalogOutput>(
            SCHOLIA_CATALOG,
            "Scholia catalog",
            "The closed Scholia v0.6 vocabulary: the 32 atom kinds with their attributes, the \
             operators, the reference relations, where the specification lives, and the \
             validator version.",
            annotations("Scholia catalog"),
        ),
        describe::<LookupArgs, LookupOutput>(
            SCHOLIA_LOOKUP,
            "Look up Scholia notation",
            "Find Scholia atoms, operators and relations whose name or description contains a \
             term (any case).",
            annotations("Look up Scholia notation"),
        ),
        describe::<LintSnippetArgs, LintSnippetOutput>(
            SCHOLIA_LINT_SNIPPET,
            "Lint a Scholia snippet",
            "Validate Scholia notation against every v0.6.2 validator rule (mode full), or only \
             its tag balance (mode tag_balance). The result is an error when the snippet is not \
             valid.",
            annotations("Lint a Scholia snippet"),
        ),
        describe::<LintTraceArgs, LintTraceOutput>(
            SCHOLIA_LINT_TRACE,
            "Lint a Scholia trace",
            "Validate a whole Scholia trace against every v0.6.2 validator rule, with totals and \
             counts per rule.",
            annotations("Lint a Scholia trace"),
        ),
    ]
}

/// Runs reference tool `name`, or returns `None` if it is not one.
pub fn call(name: &str, arguments: JsonObject) -> Option<ToolOutput> {
    let output = match name {
        SCHOLIA_CATALOG => decode::<CatalogArgs>(arguments).map(|_| catalog_output()),
        SCHOLIA_LOOKUP => decode::<LookupArgs>(arguments).map(|args| lookup(&args.term)),
        SCHOLIA_LINT_SNIPPET => decode::<LintSnippetArgs>(arguments).and_then(lint_snippet),
        SCHOLIA_LINT_TRACE => decode::<LintTraceArgs>(arguments).and_then(lint_trace),
        _ => return None,
    };
    Some(output.unwrap_or_else(|failure| failure))
}

fn type_name(kind: AttrType) -> String {
    match kind {
        AttrType::Text => "text".into(),
        AttrType::Int => "int".into(),
        AttrType::Float => "float".into(),
        AttrType::List => "list".into(),
        AttrType::Confidence => "confidence".into(),
        AttrType::Location => "location".into(),
        AttrType::OneOf(values) => format!("one of: {}", values.join(" | ")),
    }
}

fn catalog_output() -> ToolOutput {
    let output = CatalogOutput {
        atoms: catalog::ATOMS
            .iter()
            .map(|atom| CatalogAtom {
                id: atom.kind.to_lowercase(),
                tag: atom.kind.to_owned(),
                category: atom.category.to_owned(),
                summary: atom.summary.to_owned(),
                attributes: atom
                    .attributes
                    .iter()
                    .map(|attr| CatalogAttribute {
                        name: attr.name.to_owned(),
                        value_type: type_name(attr.kind),
                        required: attr.required,
                    })
                    .collect(),
            })
            .collect(),
        operators: catalog::OPERATORS
            .iter()
            .map(|op| CatalogOperator {
                name: op.name.to_owned(),
                meaning: op.meaning.to_owned(),
                example: op.example.to_owned(),
                status: match op.status {
                    OperatorStatus::Canonical => "canonical",
                    OperatorStatus::Emergent => "emergent",
                }
                .to_owned(),
            })
            .collect(),
        relations: catalog::RELATIONS
            .iter()
            .map(|relation| CatalogRelation {
                from: relation.from.to_owned(),
                attribute: relation.attribute.to_owned(),
                to: relation.to.iter().map(|kind| kind.to_string()).collect(),
                meaning: relation.meaning.to_owned(),
            })
            .collect(),
        resources: catalog::RESOURCES
            .iter()
            .map(|(uri, description)| CatalogResource {
                uri: uri.to_string(),
                description: description.to_string(),
            })
            .collect(),
        validator_version: catalog::VALIDATOR_VERSION.to_owned(),
    };
    let text = format!(
        "Scholia v0.6: {} atom kinds, {} operators, {} relations; validator {}.",
        output.atoms.len(),
        output.operators.len(),
        output.relations.len(),
        output.validator_version
    );
    ToolOutput::success(text, &output)
}

fn lookup(term: &str) -> ToolOutput {
    let wanted = term.trim().to_lowercase();
    let hit = |name: &str, summary: &str| {
        name.to_lowercase().contains(&wanted) || summary.to_lowercase().contains(&wanted)
    };
    let mut matches = Vec::new();
    for atom in catalog::ATOMS
        .iter()
        .filter(|atom| hit(atom.kind, atom.summary))
    {
        matches.push(LookupMatch {
            match_type: "atom",
            name: atom.kind.to_owned(),
            summary: atom.summary.to_owned(),
        });
    }
    for op in catalog::OPERATORS
        .iter()
        .filter(|op| hit(op.name, op.meaning))
    {
        matches.push(LookupMatch {
            match_type: "operator",
            name: op.name.to_owned(),
            summary: op.meaning.to_owned(),
        });
    }
    for relation in catalog::RELATIONS {
        let name = format!("{}.{}", relation.from, relation.attribute);
        if hit(&name, relation.meaning) {
            matches.push(LookupMatch {
                match_type: "relation",
                name,
                summary: relation.meaning.to_owned(),
            });
        }
    }
    if wanted.is_empty() || matches.is_empty() {
        return ToolOutput::failure(
            "No Scholia atom, operator or relation matches that term; scholia_catalog lists them all.",
        );
    }
    let text = format!("{} match(es).", matches.len());
    ToolOutput::success(
        text,
        &LookupOutput {
            term: term.to_owned(),
            matches,
        },
    )
}

fn check_length(snippet: &str) -> Result<(), ToolOutput> {
    if snippet.chars().count() > SNIPPET_MAX {
        return Err(ToolOutput::failure(format!(
            "The snippet is longer than {SNIPPET_MAX} characters."
        )));
    }
    Ok(())
}

fn lint_snippet(args: LintSnippetArgs) -> Result<ToolOutput, ToolOutput> {
    check_length(&args.snippet)?;
    let mode = match args.mode {
        LintMode::Full => Mode::Full,
        LintMode::TagBalance => Mode::TagBalance,
    };
    let report = validator::validate(&args.snippet, mode, &[]);
    let ok = report.ok();
    let output = LintSnippetOutput {
        ok,
        mode: args.mode,
        errors: report.errors.into_iter().map(LintIssue::from).collect(),
        warnings: report.warnings.into_iter().map(LintIssue::from).collect(),
        validator_version: catalog::VALIDATOR_VERSION.to_owned(),
    };
    let text = summary(ok, output.errors.len(), output.warnings.len());
    Ok(if ok {
        ToolOutput::success(text, &output)
    } else {
        ToolOutput::rejected(text, &output)
    })
}

fn lint_trace(args: LintTraceArgs) -> Result<ToolOutput, ToolOutput> {
    check_length(&args.snippet)?;
    let report = validator::validate(&args.snippet, Mode::Full, &[]);
    let ok = report.ok();
    let count = |issues: &[Issue]| {
        let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
        for issue in issues {
            *by_rule.entry(issue.rule.to_owned()).or_default() += 1;
        }
        by_rule
    };
    let output = LintTraceOutput {
        ok,
        mode: LintMode::Full,
        total_errors: report.errors.len(),
        total_warnings: report.warnings.len(),
        errors_by_rule: count(&report.errors),
        warnings_by_rule: count(&report.warnings),
        errors: report.errors.into_iter().map(LintIssue::from).collect(),
        warnings: report.warnings.into_iter().map(LintIssue::from).collect(),
        validator_version: catalog::VALIDATOR_VERSION.to_owned(),
        rules: validator::RULES
            .iter()
            .map(|rule| rule.to_string())
            .collect(),
    };
    let text = summary(ok, output.total_errors, output.total_warnings);
    Ok(if ok {
        ToolOutput::success(text, &output)
    } else {
        ToolOutput::rejected(text, &output)
    })
}

fn summary(ok: bool, errors: usize, warnings: usize) -> String {
    if ok {
        format!("Valid Scholia ({warnings} warning(s)).")
    } else {
        format!("Not valid: {errors} error(s), {warnings} warning(s).")
    }
}
