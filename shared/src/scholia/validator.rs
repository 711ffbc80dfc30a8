//! The Scholia v0.6.2 validator: every rule of spec §4 over a parsed trace.
//!
//! Rules are named as in the specification. Errors make a trace invalid; warnings are for
//! review. Where the specification leaves a judgement open, the choice made here is stated on
//! the rule's function.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::catalog::{self, AttrType, OperatorStatus};
use super::parser::{self, Node};

/// Every rule, in specification order.
pub const RULES: &[&str] = &[
    "well_formed",
    "reference_complete",
    "decision_closed",
    "action_recorded",
    "hypothesis_evaluated",
    "retract_consistent",
    "constraint_respected",
    "goal_declared",
    "unknown_operator",
    "location_edge_shape",
    "v031_optional_fields",
    "for_goal_resolves",
    "refer_at_least_one",
    "criticality_non_decreasing",
    "no_action_in_concluding",
    "single_active_concluding_per_goal",
    "min_confidence_ceiling",
    "canonical_id_well_formed",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// One violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub rule: &'static str,
    /// The atom's id, or `Kind@line:column` for an atom without one; empty for the whole snippet.
    pub atom_id: String,
    pub message: String,
    pub severity: Severity,
}

/// What to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every rule.
    Full,
    /// Only that the tags open and close properly.
    TagBalance,
}

/// An edge of an optional result graph (spec §4.1, rule 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphEdge {
    pub source_id: String,
    pub target_id: String,
    pub relation: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    fn error(&mut self, rule: &'static str, atom: &Atom<'_>, message: String) {
        self.errors.push(Issue {
            rule,
            atom_id: atom.label(),
            message,
            severity: Severity::Error,
        });
    }

    fn warning(&mut self, rule: &'static str, atom: &Atom<'_>, message: String) {
        self.warnings.push(Issue {
            rule,
            atom_id: atom.label(),
            message,
            severity: Severity::Warning,
        });
    }
}

/// Validates a snippet. A snippet that does not parse gets one `well_formed` error with the
/// position of the problem.
pub fn validate(snippet: &str, mode: Mode, edges: &[GraphEdge]) -> Report {
    let roots = match parser::parse(snippet) {
        Ok(roots) => roots,
        Err(error) => {
            return Report {
                errors: vec![Issue {
                    rule: "well_formed",
                    atom_id: String::new(),
                    message: error.to_string(),
                    severity: Severity::Error,
                }],
                warnings: Vec::new(),
            };
        }
    };
    let mut report = Report::default();
    if mode == Mode::Full {
        let trace = Trace::index(&roots);
        trace.check(edges, &mut report);
    }
    report
}

/// One atom of the trace, in document order.
struct Atom<'t> {
    node: &'t Node,
    /// Index of the containing atom, if nested.
    parent: Option<usize>,
    /// The containing `<Step>`'s position among the trace's Steps, if any.
    step: Option<usize>,
    /// Operators in the atom's own text.
    operators: Vec<Operator>,
}

impl Atom<'_> {
    fn kind(&self) -> &str {
        &self.node.tag
    }

    fn id(&self) -> Option<&str> {
        self.node.attr("id")
    }

    fn label(&self) -> String {
        match self.id() {
            Some(id) => id.to_owned(),
            None => format!(
                "{}@{}:{}",
                self.node.tag, self.node.position.line, self.node.position.column
            ),
        }
    }

    /// The targets of this atom's `REFER:` operators.
    fn refers(&self) -> impl Iterator<Item = &str> {
        self.operators
            .iter()
            .filter(|op| op.name == "REFER")
            .filter_map(|op| op.target.as_deref())
    }
}

/// An inline operator token: `NAME:target`, `NAME(` or a bare canonical operator word.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Operator {
    name: String,
    target: Option<String>,
    /// Written as `NAME:` or `NAME(`, so it is certainly meant as an operator.
    explicit: bool,
}

/// Scans text for operator tokens. `sha256:<hex>` targets are read whole.
fn operators(text: &str) -> Vec<Operator> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = bytes[at].is_ascii_uppercase()
            && (at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_'));
        if !starts_word {
            at += 1;
            continue;
        }
        let end = at
            + bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
                .count();
        let name = &text[at..end];
        let next = bytes.get(end).copied();
        let word_ends = next.is_none_or(|b| !(b.is_ascii_alphanumeric() || b == b'_'));
        if name.len() >= 2 && next == Some(b':') {
            let target_start = end + 1;
            let target = read_target(&text[target_start..]);
            found.push(Operator {
                name: name.to_owned(),
                target: (!target.is_empty()).then(|| target.to_owned()),
                explicit: true,
            });
            at = target_start + target.len();
            continue;
        }
        if name.len() >= 2 && next == Some(b'(') {
            found.push(Operator {
                name: name.to_owned(),
                target: None,
                explicit: true,
            });
        } else if word_ends && catalog::OPERATORS.iter().any(|op| op.name == name) {
            found.push(Operator {
                name: name.to_owned(),
                target: None,
                explicit: false,
            });
        }
        at = end.max(at + 1);
    }
    found
}

/// An operator target: `sha256:<hex>` or an identifier (`[A-Za-z0-9_.-]`, without a trailing
/// `.` so that a sentence can end after it).
fn read_target(text: &str) -> &str {
    if let Some(hex) = text.strip_prefix("sha256:") {
        let len = hex.bytes().take_while(u8::is_ascii_hexdigit).count();
        return &text[..7 + len];
    }
    let len = text
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-' || *b == b'.')
        .count();
    text[..len].trim_end_matches('.')
}

struct Trace<'t> {
    atoms: Vec<Atom<'t>>,
    steps: Vec<&'t Node>,
    /// Local ids of atoms (first occurrence).
    by_id: HashMap<&'t str, usize>,
    /// Structural problems found while indexing: misplaced Steps and duplicate ids.
    structure: Vec<(Option<usize>, &'t Node, String)>,
    research_mode: bool,
}

impl<'t> Trace<'t> {
    fn index(roots: &'t [Node]) -> Self {
        let mut trace = Trace {
            atoms: Vec::new(),
            steps: Vec::new(),
            by_id: HashMap::new(),
            structure: Vec::new(),
            research_mode: false,
        };
        for root in roots {
            if root.tag == "Step" {
                trace.steps.push(root);
                let step = trace.steps.len() - 1;
                for child in &root.children {
                    trace.add(child, None, Some(step));
                }
            } else {
                trace.add(root, None, None);
            }
        }
        let mut step_ids = HashSet::new();
        for step in &trace.steps {
            match step.attr("id") {
                None => trace
                    .structure
                    .push((None, step, "a <Step> needs an id".into())),
                Some(id) if !step_ids.insert(id) || trace.by_id.contains_key(id) => trace
                    .structure
                    .push((None, step, format!("the id {id} is used more than once"))),
                Some(_) => {}
            }
        }
        trace
    }

    fn add(&mut self, node: &'t Node, parent: Option<usize>, step: Option<usize>) {
        if node.tag == "Meta:research-mode" {
            self.research_mode = true;
            return;
        }
        if node.tag == "Step" {
            self.structure.push((
                parent,
                node,
                "a <Step> cannot be nested inside an atom".into(),
            ));
            return;
        }
        let index = self.atoms.len();
        self.atoms.push(Atom {
            node,
            parent,
            step,
            operators: operators(&node.text),
        });
        if let Some(id) = node.attr("id") {
            if self.by_id.contains_key(id) {
                self.structure.push((
                    Some(index),
                    node,
                    format!("the id {id} is used more than once"),
                ));
            } else {
                self.by_id.insert(id, index);
            }
        }
        for child in &node.children {
            self.add(child, Some(index), step);
        }
    }

    fn atom(&self, id: &str) -> Option<&Atom<'t>> {
        self.by_id.get(id).map(|index| &self.atoms[*index])
    }

    fn kind_of(&self, id: &str) -> Option<&str> {
        self.atom(id).map(Atom::kind)
    }

    fn is_descendant(&self, index: usize, ancestor: usize) -> bool {
        let mut current = self.atoms[index].parent;
        while let Some(parent) = current {
            if parent == ancestor {
                return true;
            }
            current = self.atoms[parent].parent;
        }
        false
    }

    fn check(&self, edges: &[GraphEdge], report: &mut Report) {
        self.well_formed(report);
        self.reference_complete(report);
        self.decision_closed(report);
        self.action_recorded(edges, report);
        self.hypothesis_evaluated(report);
        self.retract_consistent(report);
        self.constraint_respected(report);
        self.goal_declared(report);
        self.unknown_operator(report);
        self.attribute_values(report);
        self.concluding_rules(report);
        self.canonical_id_well_formed(report);
    }
}

/// Structured reference attributes `(kind, attribute)` that name an atom (spec §5).
fn reference_attributes(kind: &str) -> impl Iterator<Item = &'static str> + '_ {
    catalog::RELATIONS
        .iter()
        .filter(move |relation| relation.from == kind)
        .map(|relation| relation.attribute)
}

impl<'t> Trace<'t> {
    /// Rule 1, plus the structure the notation requires: known kinds, no attribute the kind
    /// does not have, unique ids, Steps at the top level, `<Alternative>` only inside
    /// `<Deciding>`. Typed attribute values are checked in `attribute_values`.
    fn well_formed(&self, report: &mut Report) {
        for (parent, node, message) in &self.structure {
            let label = match parent {
                Some(index) => self.atoms[*index].label(),
                None => node.attr("id").unwrap_or("Step").to_owned(),
            };
            report.errors.push(Issue {
                rule: "well_formed",
                atom_id: label,
                message: format!("{}: {message}", node.position),
                severity: Severity::Error,
            });
        }
        for atom in &self.atoms {
            let Some(spec) = catalog::atom(atom.kind()) else {
                report.error(
                    "well_formed",
                    atom,
                    format!(
                        "{}: <{}> is not a Scholia atom kind",
                        atom.node.position,
                        atom.kind()
                    ),
                );
                continue;
            };
            for (name, _) in &atom.node.attrs {
                let known = name == "id"
                    || name == "canonical_id"
                    || spec.attributes.iter().any(|attr| attr.name == name);
                if !known {
                    report.error(
                        "well_formed",
                        atom,
                        format!("<{}> has no attribute {name}", spec.kind),
                    );
                }
            }
            // The atom index marks these attributes required, but the shared conformance
            // fixtures omit some (an <Evidence> without `for`) and expect a valid trace, so a
            // missing one is a warning; the rules that depend on one report its absence.
            for attr in spec.attributes.iter().filter(|attr| attr.required) {
                if atom
                    .node
                    .attr(attr.name)
                    .is_none_or(|value| value.trim().is_empty())
                {
                    report.warning(
                        "well_formed",
                        atom,
                        format!("<{}> should carry the attribute {}", spec.kind, attr.name),
                    );
                }
            }
            if spec.kind == "Alternative"
                && atom
                    .parent
                    .is_none_or(|parent| self.atoms[parent].kind() != "Deciding")
            {
                report.error(
                    "well_formed",
                    atom,
                    "<Alternative> is only legal inside <Deciding>".into(),
                );
            }
        }
    }

    /// Rule 2: every structured reference and every `REFER:` / `IMPLIES:` / `FLIP:` target
    /// resolves to an atom id, a Step id, a `<Storing>` name or an in-trace `canonical_id`.
    /// `trace_id:atom_id` references to other traces are left to a validator that can resolve
    /// them. No registry is consulted.
    fn reference_complete(&self, report: &mut Report) {
        let mut known: HashSet<String> = self.by_id.keys().map(|id| id.to_string()).collect();
        known.extend(
            self.steps
                .iter()
                .filter_map(|step| step.attr("id"))
                .map(String::from),
        );
        for atom in &self.atoms {
            if atom.kind() == "Storing"
                && let Some(name) = atom.node.attr("name")
            {
                known.insert(name.to_owned());
            }
            if let Some(claimed) = atom.node.attr("canonical_id") {
                known.insert(claimed.to_owned());
            }
        }
        // Content addresses cost a hash per atom; compute them only when something asks.
        let wants_canonical_ids = self.atoms.iter().any(|atom| {
            atom.operators.iter().any(|op| {
                op.target
                    .as_deref()
                    .is_some_and(|t| t.starts_with("sha256:"))
            }) || atom
                .node
                .attrs
                .iter()
                .any(|(_, value)| value.starts_with("sha256:"))
        });
        if wants_canonical_ids {
            known.extend(self.atoms.iter().map(|atom| canonical_id_of(atom.node)));
        }
        for atom in &self.atoms {
            for attribute in reference_attributes(atom.kind()) {
                let Some(target) = atom.node.attr(attribute) else {
                    continue;
                };
                let cross_trace = target.contains(':') && !target.starts_with("sha256:");
                if !cross_trace && !known.contains(target) {
                    report.error(
                        "reference_complete",
                        atom,
                        format!("{attribute}=\"{target}\" does not name anything in this trace"),
                    );
                }
            }
            for op in &atom.operators {
                let Some(target) = &op.target else { continue };
                if catalog::TARGETED_OPERATORS.contains(&op.name.as_str())
                    && !known.contains(target)
                {
                    report.error(
                        "reference_complete",
                        atom,
                        format!("{}:{target} does not name anything in this trace", op.name),
                    );
                }
            }
        }
    }

    /// Rule 3: a `<Deciding>` is closed by a `<Branch of="…">` naming it, or by a nested
    /// `<Finding>` that names one of the options in its `options` list. Without an `options`
    /// list, any nested `<Finding>` closes it.
    fn decision_closed(&self, report: &mut Report) {
        for (index, atom) in self.atoms.iter().enumerate() {
            if atom.kind() != "Deciding" {
                continue;
            }
            let branched = atom.id().is_some_and(|id| {
                self.atoms
                    .iter()
                    .any(|other| other.kind() == "Branch" && other.node.attr("of") == Some(id))
            });
            let options: Vec<String> = atom
                .node
                .attr("options")
                .map(|list| {
                    list.split(',')
                        .map(|option| option.trim().to_lowercase())
                        .filter(|option| !option.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            let closed_by_finding = self.atoms.iter().enumerate().any(|(other_index, other)| {
                other.kind() == "Finding"
                    && self.is_descendant(other_index, index)
                    && (options.is_empty() || {
                        let text = other.node.text.to_lowercase();
                        options.iter().any(|option| text.contains(option.as_str()))
                    })
            });
            if !branched && !closed_by_finding {
                report.error(
                    "decision_closed",
                    atom,
                    "this <Deciding> has no <Finding> naming the chosen option and no <Branch>"
                        .into(),
                );
            }
        }
    }

    /// Rule 4 as corrected in v0.6.2 (spec §4.1, §10.11).
    fn action_recorded(&self, edges: &[GraphEdge], report: &mut Report) {
        for (index, action) in self.atoms.iter().enumerate() {
            if action.kind() != "Action" {
                continue;
            }
            if !self.action_has_result(index, edges) {
                report.error(
                    "action_recorded",
                    action,
                    "this <Action> has no recorded result: nest a <Finding>, follow it with one, or REFER to it from a later <Finding>".into(),
                );
            }
        }
    }

    fn action_has_result(&self, index: usize, edges: &[GraphEdge]) -> bool {
        let action = &self.atoms[index];
        let is_result = |atom: &Atom<'_>| matches!(atom.kind(), "Finding" | "Concluding");
        // Nested at any depth.
        if self
            .atoms
            .iter()
            .enumerate()
            .any(|(other, atom)| is_result(atom) && self.is_descendant(other, index))
        {
            return true;
        }
        // The immediate next sibling in the same container (its own descendants come first).
        let next_sibling = self.atoms[index + 1..]
            .iter()
            .find(|atom| atom.parent == action.parent && atom.step == action.step);
        if next_sibling.is_some_and(is_result) {
            return true;
        }
        let Some(id) = action.id() else {
            return false;
        };
        if edges
            .iter()
            .any(|edge| edge.relation == catalog::RECORDS_RESULT && edge.target_id == id)
        {
            return true;
        }
        // A later Finding or goal-closing Concluding that REFERs it, directly or through one
        // Observation or Evidence that REFERs it. Order alone is not enough.
        let refers_action = |atom: &Atom<'_>| atom.refers().any(|target| target == id);
        self.atoms[index + 1..]
            .iter()
            .any(|later| match later.kind() {
                "Finding" => {
                    refers_action(later)
                        || later.refers().any(|target| {
                            self.atom(target).is_some_and(|hop| {
                                matches!(hop.kind(), "Observation" | "Evidence")
                                    && refers_action(hop)
                            })
                        })
                }
                "Concluding" => later.node.attr("for_goal").is_some() && refers_action(later),
                _ => false,
            })
    }

    /// Rule 5: a `<Hypothesis>` has `<Evidence for>` or `<Uncertainty on>` naming it, or one
    /// nested inside it.
    fn hypothesis_evaluated(&self, report: &mut Report) {
        for (index, hypothesis) in self.atoms.iter().enumerate() {
            if hypothesis.kind() != "Hypothesis" {
                continue;
            }
            let id = hypothesis.id();
            let evaluated = self.atoms.iter().enumerate().any(|(other, atom)| {
                let linked = match atom.kind() {
                    "Evidence" => id.is_some() && atom.node.attr("for") == id,
                    "Uncertainty" => id.is_some() && atom.node.attr("on") == id,
                    _ => return false,
                };
                linked || self.is_descendant(other, index)
            });
            if !evaluated {
                report.error(
                    "hypothesis_evaluated",
                    hypothesis,
                    "this <Hypothesis> has no linked <Evidence> or <Uncertainty>".into(),
                );
            }
        }
    }

    /// Rule 6.
    fn retract_consistent(&self, report: &mut Report) {
        for atom in self.atoms.iter().filter(|atom| atom.kind() == "Retract") {
            let Some(target) = atom.node.attr("target") else {
                continue;
            };
            let retractable = self
                .kind_of(target)
                .is_some_and(|kind| matches!(kind, "Finding" | "Concluding" | "Goal"));
            if !retractable {
                report.error(
                    "retract_consistent",
                    atom,
                    format!("target=\"{target}\" is not a <Finding>, <Concluding> or <Goal> in this trace"),
                );
            }
        }
    }

    /// Rule 7, from the specification's text: "no `<Action>` violates an active
    /// `<Constraint>`". A Constraint is active for every Action after it in the trace. A
    /// Constraint can be checked mechanically when it states a prohibition ("never …",
    /// "do not …", "must not …", "no …", "avoid …"): an Action violates it when its text holds
    /// every content word of the prohibited phrase (matched by stem), and the first of them is
    /// not negated ("did not delete"). Constraints stated any other way are not judged.
    fn constraint_respected(&self, report: &mut Report) {
        for (index, constraint) in self.atoms.iter().enumerate() {
            if constraint.kind() != "Constraint" {
                continue;
            }
            let Some(forbidden) = prohibited_words(&constraint.node.text) else {
                continue;
            };
            for action in self.atoms[index + 1..]
                .iter()
                .filter(|atom| atom.kind() == "Action")
            {
                if violates(&action.node.text, &forbidden) {
                    report.error(
                        "constraint_respected",
                        action,
                        format!(
                            "this <Action> does what the <Constraint> {} forbids",
                            constraint.label()
                        ),
                    );
                }
            }
        }
    }

    /// Rule 8 (with the v0.6.1 reconciliation); `<Meta:research-mode/>` exempts the trace.
    fn goal_declared(&self, report: &mut Report) {
        if self.research_mode {
            return;
        }
        for goal in self.atoms.iter().filter(|atom| atom.kind() == "Goal") {
            if goal.node.attr("priority") != Some("required") {
                continue;
            }
            let closed = goal.id().is_some_and(|id| {
                self.atoms.iter().any(|atom| {
                    let status = atom.node.attr("status").unwrap_or_default();
                    match atom.kind() {
                        "Concluding" => {
                            atom.node.attr("for_goal") == Some(id)
                                && matches!(status, "met" | "unmet" | "partially_met")
                        }
                        "Finding" => {
                            atom.node.attr("for_goal") == Some(id)
                                && matches!(status, "met" | "unmet" | "partially_met" | "met_late")
                        }
                        _ => false,
                    }
                })
            });
            if !closed {
                report.error(
                    "goal_declared",
                    goal,
                    "this required <Goal> has no <Concluding for_goal=… status=…> closing it"
                        .into(),
                );
            }
        }
    }

    /// Rule 9: every `NAME:` or `NAME(` token is a canonical or emergent operator or a data
    /// primitive.
    fn unknown_operator(&self, report: &mut Report) {
        for atom in &self.atoms {
            for op in atom.operators.iter().filter(|op| op.explicit) {
                let known = catalog::OPERATORS.iter().any(|spec| spec.name == op.name)
                    || catalog::DATA_PRIMITIVES.contains(&op.name.as_str());
                if !known {
                    report.error(
                        "unknown_operator",
                        atom,
                        format!("{} is not a Scholia operator", op.name),
                    );
                }
            }
            for op in &atom.operators {
                let emergent = catalog::OPERATORS
                    .iter()
                    .any(|spec| spec.name == op.name && spec.status == OperatorStatus::Emergent);
                if emergent {
                    report.warning(
                        "unknown_operator",
                        atom,
                        format!(
                            "{} is a provisional operator; consumers treat it as opaque",
                            op.name
                        ),
                    );
                }
            }
        }
    }

    /// Rules 10 and 11, and the other typed attribute values (reported as `well_formed`).
    fn attribute_values(&self, report: &mut Report) {
        for atom in &self.atoms {
            let Some(spec) = catalog::atom(atom.kind()) else {
                continue;
            };
            for attr in spec.attributes {
                let Some(value) = atom.node.attr(attr.name) else {
                    continue;
                };
                let Some(problem) = value_problem(attr.kind, value) else {
                    continue;
                };
                let rule = match (spec.kind, attr.name) {
                    ("Observation", "location") | ("Edge", "type") => "location_edge_shape",
                    ("Effect", "kind") | ("Ref", "type") | ("Meta", "criticality") => {
                        "v031_optional_fields"
                    }
                    (_, _) if attr.kind == AttrType::Confidence || attr.name == "confidence" => {
                        "v031_optional_fields"
                    }
                    _ => "well_formed",
                };
                report.error(rule, atom, format!("{}=\"{value}\": {problem}", attr.name));
            }
        }
    }

    /// Rules 12 to 17, all about `<Concluding>`.
    fn concluding_rules(&self, report: &mut Report) {
        let retracted: HashSet<&str> = self
            .atoms
            .iter()
            .filter(|atom| atom.kind() == "Retract")
            .filter_map(|atom| atom.node.attr("target"))
            .collect();
        let mut active_per_goal: HashMap<&str, usize> = HashMap::new();
        for atom in self.atoms.iter().filter(|atom| atom.kind() == "Concluding") {
            let goal_id = atom.node.attr("for_goal");
            let goal = goal_id
                .and_then(|id| self.atom(id))
                .filter(|goal| goal.kind() == "Goal");
            match goal_id {
                None => report.error(
                    "for_goal_resolves",
                    atom,
                    "a <Concluding> must name the <Goal> it closes in for_goal".into(),
                ),
                Some(id) if goal.is_none() => report.error(
                    "for_goal_resolves",
                    atom,
                    format!("for_goal=\"{id}\" is not a <Goal> in this trace"),
                ),
                Some(_) => {}
            }
            let cited: Vec<&Atom<'_>> = atom
                .refers()
                .filter_map(|target| self.atom(target))
                .collect();
            if !cited
                .iter()
                .any(|cited| matches!(cited.kind(), "Finding" | "Observation" | "Evidence"))
            {
                report.error(
                    "refer_at_least_one",
                    atom,
                    "a <Concluding> must REFER to at least one <Finding>, <Observation> or <Evidence>".into(),
                );
            }
            if let Some(goal) = goal {
                self.criticality_non_decreasing(atom, goal, &cited, &retracted, report);
            }
            if has_action_modal(&atom.node.text) {
                report.warning(
                    "no_action_in_concluding",
                    atom,
                    "a <Concluding> states a close, not an action (should / will / recommend / choose / propose)".into(),
                );
            }
            if let Some(id) = goal_id
                && !atom.id().is_some_and(|own| retracted.contains(own))
            {
                let count = active_per_goal.entry(id).or_default();
                *count += 1;
                if *count == 2 {
                    report.warning(
                        "single_active_concluding_per_goal",
                        atom,
                        format!("the <Goal> {id} already has an active <Concluding>"),
                    );
                }
            }
            self.min_confidence_ceiling(atom, &cited, report);
        }
    }

    /// Rule 14. Criticality comes from the atom's own attribute, else its Step's `<Meta
    /// criticality>`. A Concluding without either takes the highest of its cited Findings and
    /// Observations; when nothing declares one, there is nothing to compare.
    fn criticality_non_decreasing(
        &self,
        concluding: &Atom<'_>,
        goal: &Atom<'_>,
        cited: &[&Atom<'_>],
        retracted: &HashSet<&str>,
        report: &mut Report,
    ) {
        let Some(needed) = self.criticality(goal) else {
            return;
        };
        let effective = self.criticality(concluding).or_else(|| {
            cited
                .iter()
                .filter(|atom| matches!(atom.kind(), "Finding" | "Observation"))
                .filter_map(|atom| self.criticality(atom))
                .max()
        });
        let downgrade_documented = goal.id().is_some_and(|id| retracted.contains(id));
        if let Some(effective) = effective
            && effective < needed
            && !downgrade_documented
        {
            report.error(
                "criticality_non_decreasing",
                concluding,
                format!(
                    "this <Concluding> is {} but its <Goal> is {}; document a downgrade with <Retract target=\"{}\">",
                    catalog::CRITICALITY[effective],
                    catalog::CRITICALITY[needed],
                    goal.id().unwrap_or_default()
                ),
            );
        }
    }

    fn criticality(&self, atom: &Atom<'_>) -> Option<usize> {
        let rank = |value: &str| catalog::CRITICALITY.iter().position(|tier| *tier == value);
        atom.node.attr("criticality").and_then(rank).or_else(|| {
            let step = self.steps.get(atom.step?)?;
            step.children
                .iter()
                .find(|child| child.tag == "Meta")
                .and_then(|meta| meta.attr("criticality"))
                .and_then(rank)
        })
    }

    /// Rule 17 (warning): a numeric `confidence` above the lowest numeric confidence declared
    /// (by `<Confidence on>` or `<Uncertainty on>`) for any cited Finding or Evidence.
    fn min_confidence_ceiling(
        &self,
        concluding: &Atom<'_>,
        cited: &[&Atom<'_>],
        report: &mut Report,
    ) {
        let Some(declared) = concluding
            .node
            .attr("confidence")
            .and_then(|value| value.parse::<f64>().ok())
        else {
            return;
        };
        let lowest = cited
            .iter()
            .filter(|atom| matches!(atom.kind(), "Finding" | "Evidence"))
            .filter_map(|atom| atom.id())
            .flat_map(|id| {
                self.atoms.iter().filter_map(move |annotation| {
                    let value = match annotation.kind() {
                        "Confidence" if annotation.node.attr("on") == Some(id) => {
                            annotation.node.attr("level")
                        }
                        "Uncertainty" if annotation.node.attr("on") == Some(id) => {
                            annotation.node.attr("confidence")
                        }
                        _ => None,
                    };
                    value.and_then(|value| value.parse::<f64>().ok())
                })
            })
            .fold(None, |lowest: Option<f64>, value| {
                Some(lowest.map_or(value, |l| l.min(value)))
            });
        if let Some(lowest) = lowest
            && declared > lowest
        {
            report.warning(
                "min_confidence_ceiling",
                concluding,
                format!("confidence {declared} is above the {lowest} of the evidence it cites"),
            );
        }
    }

    /// Rule 18: a carried `canonical_id` must equal the one recomputed from the atom.
    fn canonical_id_well_formed(&self, report: &mut Report) {
        for atom in &self.atoms {
            let Some(claimed) = atom.node.attr("canonical_id") else {
                continue;
            };
            let computed = canonical_id_of(atom.node);
            if claimed != computed {
                report.error(
                    "canonical_id_well_formed",
                    atom,
                    format!("canonical_id {claimed} does not match the content, which hashes to {computed}"),
                );
            }
        }
    }
}

/// The §10.1 content address of a parsed atom: wire attributes renamed to the reference
/// implementation's fields and typed as its atom classes type them.
pub fn canonical_id_of(node: &Node) -> String {
    let spec = catalog::atom(&node.tag);
    let mut attrs = Map::new();
    for (name, value) in &node.attrs {
        let attr = spec.and_then(|spec| spec.attributes.iter().find(|attr| attr.name == name));
        let field = attr.map_or(name.as_str(), |attr| attr.field);
        let typed = match attr.map(|attr| attr.kind) {
            Some(AttrType::Int) => value
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(value.clone())),
            Some(AttrType::Float) => value
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(|number| serde_json::Number::from_f64(number).map(Value::Number))
                .unwrap_or_else(|| Value::String(value.clone())),
            Some(AttrType::List) => Value::Array(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| Value::String(item.to_owned()))
                    .collect(),
            ),
            _ => Value::String(value.clone()),
        };
        attrs.insert(field.to_owned(), typed);
    }
    super::canonical_id(&node.tag, &node.text, &attrs)
}

fn value_problem(kind: AttrType, value: &str) -> Option<String> {
    let value = value.trim();
    match kind {
        AttrType::Text => None,
        AttrType::Int => value
            .parse::<i64>()
            .err()
            .map(|_| "expected a whole number".into()),
        AttrType::Float => match value.parse::<f64>() {
            Ok(number) if number.is_finite() => None,
            _ => Some("expected a number".into()),
        },
        AttrType::List => None,
        AttrType::Confidence => {
            if matches!(value, "low" | "medium" | "high") {
                return None;
            }
            match value.parse::<f64>() {
                Ok(number) if (0.0..=1.0).contains(&number) => None,
                _ => Some("expected a number from 0 to 1, or low, medium or high".into()),
            }
        }
        AttrType::Location => {
            let mut parts = value.rsplitn(3, ':');
            let end = parts.next().and_then(|n| n.parse::<u64>().ok());
            let start = parts.next().and_then(|n| n.parse::<u64>().ok());
            let file = parts
                .next()
                .filter(|file| !file.is_empty() && !file.contains(char::is_whitespace));
            match (file, start, end) {
                (Some(_), Some(start), Some(end)) if start <= end => None,
                _ => Some("expected file:start:end with start <= end".into()),
            }
        }
        AttrType::OneOf(allowed) => {
            (!allowed.contains(&value)).then(|| format!("expected one of {}", allowed.join(", ")))
        }
    }
}

const PROHIBITIONS: &[&str] = &[
    "must never ",
    "must not ",
    "do not ",
    "don't ",
    "never ",
    "avoid ",
    "no ",
];

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "any", "to", "of", "in", "on", "for", "with", "without", "and", "or", "be",
    "is", "are", "it", "its", "this", "that", "these", "those", "into", "from", "at", "by", "ever",
];

/// The content-word stems of the phrase a Constraint forbids, if it states a prohibition.
fn prohibited_words(text: &str) -> Option<Vec<String>> {
    let lower = text.to_lowercase();
    let start = PROHIBITIONS
        .iter()
        .filter_map(|trigger| {
            lower
                .match_indices(trigger)
                .find(|(at, _)| *at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric())
                .map(|(at, _)| at + trigger.len())
        })
        .min()?;
    let phrase = lower[start..]
        .split(['.', ';', '!', '?', ',', '\n'])
        .next()
        .unwrap_or_default();
    let words: Vec<String> = words(phrase)
        .filter(|word| !STOPWORDS.contains(word))
        .map(stem)
        .filter(|stem| stem.len() >= 3)
        .collect();
    (!words.is_empty()).then_some(words)
}

fn violates(action_text: &str, forbidden: &[String]) -> bool {
    let lower = action_text.to_lowercase();
    let tokens: Vec<&str> = words(&lower).collect();
    let stems: Vec<String> = tokens.iter().copied().map(stem).collect();
    let first_match = stems
        .iter()
        .position(|stem| stem.starts_with(forbidden[0].as_str()));
    let Some(first) = first_match else {
        return false;
    };
    let negated = first > 0
        && matches!(
            tokens[first - 1],
            "not" | "never" | "no" | "without" | "didn't" | "don't" | "avoided" | "skipped"
        );
    !negated
        && forbidden
            .iter()
            .all(|word| stems.iter().any(|stem| stem.starts_with(word.as_str())))
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty())
}

/// A crude English stem: enough to match "delete", "deletes", "deleted" and "deleting".
fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s", "e"] {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.len() >= 3
        {
            return stem.to_owned();
        }
    }
    word.to_owned()
}

/// `should`, `will`, `recommend`, `choose`, `propose`, and their `-s` forms, as whole words.
fn has_action_modal(text: &str) -> bool {
    const MODALS: &[&str] = &["should", "will", "recommend", "choose", "propose"];
    words(&text.to_lowercase()).any(|word| {
        MODALS
            .iter()
            .any(|modal| word == *modal || word.strip_suffix('s') == Some(modal))
    })
}
