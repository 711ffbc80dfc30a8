//! The closed Scholia v0.6 vocabulary: the 32 atom kinds with their attributes, the operators
//! and the reference relations. Transcribed from the Scholialang v0.6 atom index and
//! specification (CC-BY-4.0, Doug Fir Labs; see `tests/vectors/scholialang/NOTICE`).

/// The validator version this implementation follows (spec §4.4).
pub const VALIDATOR_VERSION: &str = "0.6.2";

/// How a wire attribute's value is read and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrType {
    /// Free text (ids, names, ISO-8601 times).
    Text,
    /// A whole number.
    Int,
    /// A decimal number.
    Float,
    /// A comma-separated list.
    List,
    /// A number in [0, 1] or `low` / `medium` / `high`.
    Confidence,
    /// `file:start:end`.
    Location,
    /// One of a closed set of values.
    OneOf(&'static [&'static str]),
}

/// One attribute of an atom kind. `name` is the wire name (`for`, `as`); `field` is the name
/// the reference implementation hashes (`for_ref`, `as_var`).
#[derive(Debug, Clone, Copy)]
pub struct AttrSpec {
    pub name: &'static str,
    pub field: &'static str,
    pub kind: AttrType,
    pub required: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct AtomSpec {
    pub kind: &'static str,
    pub category: &'static str,
    pub summary: &'static str,
    pub attributes: &'static [AttrSpec],
}

/// The atom kind named `kind`, exactly (tags are case-sensitive).
pub fn atom(kind: &str) -> Option<&'static AtomSpec> {
    ATOMS.iter().find(|spec| spec.kind == kind)
}

/// Whether an operator is ratified or still provisional (spec §3.1, §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorStatus {
    Canonical,
    Emergent,
}

#[derive(Debug, Clone, Copy)]
pub struct OperatorSpec {
    pub name: &'static str,
    pub meaning: &'static str,
    pub example: &'static str,
    pub status: OperatorStatus,
}

pub const OPERATORS: &[OperatorSpec] = &[
    op(
        "REFER",
        "dereference / back-link to another atom",
        "REFER:Finding_02",
    ),
    op(
        "IMPLIES",
        "entailment / forward-link",
        "Observation_03 IMPLIES Finding_04",
    ),
    op("AND", "conjunction", "H_01 AND H_02"),
    op("OR", "disjunction", "Finding_02 OR Finding_03"),
    op("XOR", "exclusive disjunction", "path_A XOR path_B"),
    op("NOT", "negation", "NOT Hypothesis_01"),
    op(
        "FORALL",
        "universal quantifier",
        "FORALL(branch IN branches)",
    ),
    op("EXISTS", "existential quantifier", "EXISTS(flake IN tests)"),
    op(
        "BEFORE",
        "temporal ordering",
        "Observation_03 BEFORE Deciding_04",
    ),
    op("AFTER", "temporal ordering", "Action_02 AFTER Finding_01"),
    op(
        "EQUALS",
        "value or identity equality",
        "hash EQUALS declared_hash",
    ),
    OperatorSpec {
        name: "FLIP",
        meaning: "provisional: reverse the polarity of a prior atom",
        example: "FLIP:Finding_02",
        status: OperatorStatus::Emergent,
    },
    OperatorSpec {
        name: "SURFACE",
        meaning: "provisional: promote an internal Thinking atom into a public-facing observation",
        example: "SURFACE:Thinking_01",
        status: OperatorStatus::Emergent,
    },
];

const fn op(name: &'static str, meaning: &'static str, example: &'static str) -> OperatorSpec {
    OperatorSpec {
        name,
        meaning,
        example,
        status: OperatorStatus::Canonical,
    }
}

/// Inline data-primitive markers (spec §3.3): not operators, but not unknown either.
pub const DATA_PRIMITIVES: &[&str] = &["LIST", "SET", "MAP", "STRING", "NUMBER", "BOOL"];

/// Operators whose `OP:target` form names another atom.
pub const TARGETED_OPERATORS: &[&str] = &["REFER", "IMPLIES", "FLIP"];

/// A structured reference: attribute `attribute` of `from` names an atom of one of `to`
/// (empty: any atom or Step).
#[derive(Debug, Clone, Copy)]
pub struct RelationSpec {
    pub from: &'static str,
    pub attribute: &'static str,
    pub to: &'static [&'static str],
    pub meaning: &'static str,
}

/// Every attribute that references an atom in the same trace (spec §5). `Handoff.to` and
/// `Question.to` name agents, and `Edge.target` / `Ref.target` name symbols or paths, so they
/// are not here.
pub const RELATIONS: &[RelationSpec] = &[
    rel(
        "Concluding",
        "for_goal",
        &["Goal"],
        "the Goal this Concluding closes",
    ),
    rel(
        "Finding",
        "for_hyp",
        &["Hypothesis"],
        "the Hypothesis this Finding evaluates",
    ),
    rel(
        "Finding",
        "for_goal",
        &["Goal"],
        "deprecated alias: the Goal this Finding closes",
    ),
    rel(
        "Evidence",
        "for",
        &["Hypothesis"],
        "the Hypothesis this Evidence bears on",
    ),
    rel(
        "Retract",
        "target",
        &["Finding", "Concluding", "Goal"],
        "the atom being retracted",
    ),
    rel(
        "Retract",
        "replacement",
        &[],
        "the atom replacing the retracted one",
    ),
    rel(
        "Uncertainty",
        "on",
        &[],
        "the atom this Uncertainty annotates",
    ),
    rel(
        "Confidence",
        "on",
        &[],
        "the atom this Confidence annotates",
    ),
    rel(
        "Branch",
        "of",
        &["Deciding"],
        "the Deciding this Branch leaves",
    ),
    rel("Implication", "next", &[], "the implied atom"),
    rel("Reference", "to", &[], "the referenced atom"),
    rel(
        "Review",
        "of",
        &[],
        "the reviewed atom (or trace_id:atom_id across traces)",
    ),
    rel("Budget", "for", &[], "the atom this budget governs"),
    rel("Cost", "for", &[], "the atom this cost is attributed to"),
    rel("EventRef", "for", &[], "the related local atom"),
];

const fn rel(
    from: &'static str,
    attribute: &'static str,
    to: &'static [&'static str],
    meaning: &'static str,
) -> RelationSpec {
    RelationSpec {
        from,
        attribute,
        to,
        meaning,
    }
}

/// The graph relation an external edge set may use to record an Action's result (§4.1).
pub const RECORDS_RESULT: &str = "records_result";

/// Criticality tiers, lowest first (`CRITICALITY_RANK`, spec §4.2).
pub const CRITICALITY: &[&str] = &["incidental", "bridge", "ledger", "verifier", "kernel"];

/// Public documents describing this vocabulary.
pub const RESOURCES: &[(&str, &str)] = &[
    (
        "https://scholialang.org/spec",
        "Scholia v0.6 specification (CC-BY-4.0, Doug Fir Labs)",
    ),
    (
        "https://github.com/dougfirlabs/scholialang-spec",
        "specification repository: atom index and conformance fixtures",
    ),
];

/// Every atom kind, in the specification's category order.
pub const ATOMS: &[AtomSpec] = &[
    AtomSpec {
        kind: "Action",
        category: "Reasoning",
        summary: "external state change — must produce a Finding.",
        attributes: &[AttrSpec {
            name: "timestamp",
            field: "timestamp",
            kind: AttrType::Text,
            required: false,
        }],
    },
    AtomSpec {
        kind: "Observation",
        category: "Reasoning",
        summary: "external input — command output, file contents, query result.",
        attributes: &[
            AttrSpec {
                name: "timestamp",
                field: "timestamp",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "location",
                field: "location",
                kind: AttrType::Location,
                required: false,
            },
            AttrSpec {
                name: "confidence",
                field: "confidence",
                kind: AttrType::Confidence,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Thinking",
        category: "Reasoning",
        summary: "internal deliberation — not observing, not acting.",
        attributes: &[],
    },
    AtomSpec {
        kind: "Concluding",
        category: "Evidence",
        summary: "chain-level epistemic close — resolves a Goal via cited atoms.",
        attributes: &[
            AttrSpec {
                name: "for_goal",
                field: "for_goal",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "status",
                field: "status",
                kind: AttrType::OneOf(&["met", "unmet", "partially_met"]),
                required: false,
            },
            AttrSpec {
                name: "confidence",
                field: "confidence",
                kind: AttrType::Float,
                required: false,
            },
            AttrSpec {
                name: "criticality",
                field: "criticality",
                kind: AttrType::OneOf(&["incidental", "bridge", "ledger", "verifier", "kernel"]),
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Contradiction",
        category: "Evidence",
        summary: "two claims that cannot both be true; forces a Deciding.",
        attributes: &[],
    },
    AtomSpec {
        kind: "Evidence",
        category: "Evidence",
        summary: "observation bearing on a Hypothesis (supports / refutes / neutral).",
        attributes: &[
            AttrSpec {
                name: "for",
                field: "for_ref",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "polarity",
                field: "polarity",
                kind: AttrType::OneOf(&["supports", "refutes", "neutral"]),
                required: true,
            },
        ],
    },
    AtomSpec {
        kind: "Finding",
        category: "Evidence",
        summary: "conclusion drawn from evidence — evaluates a Hypothesis.",
        attributes: &[
            AttrSpec {
                name: "for_hyp",
                field: "for_hyp",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "for_goal",
                field: "for_goal",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "status",
                field: "status",
                kind: AttrType::OneOf(&["met", "unmet", "partially_met", "met_late"]),
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Hypothesis",
        category: "Evidence",
        summary: "explicit conjecture the agent intends to test.",
        attributes: &[],
    },
    AtomSpec {
        kind: "Retract",
        category: "Evidence",
        summary: "revoke a prior Finding (or downgrade-bypass for criticality).",
        attributes: &[
            AttrSpec {
                name: "target",
                field: "target",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "reason",
                field: "reason",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "replacement",
                field: "replacement",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Uncertainty",
        category: "Evidence",
        summary: "confidence below 1 attached to a Finding, Hypothesis, or Evidence.",
        attributes: &[
            AttrSpec {
                name: "on",
                field: "on",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "confidence",
                field: "confidence",
                kind: AttrType::Confidence,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Alternative",
        category: "Control",
        summary: "explicitly rejected option inside a Deciding.",
        attributes: &[
            AttrSpec {
                name: "label",
                field: "label",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "rejected_because",
                field: "rejected_because",
                kind: AttrType::Text,
                required: true,
            },
        ],
    },
    AtomSpec {
        kind: "Branch",
        category: "Control",
        summary: "legal transition out of a Deciding.",
        attributes: &[
            AttrSpec {
                name: "of",
                field: "of",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "label",
                field: "label",
                kind: AttrType::Text,
                required: true,
            },
        ],
    },
    AtomSpec {
        kind: "Deciding",
        category: "Control",
        summary: "action commitment branch point — chooses among alternatives.",
        attributes: &[AttrSpec {
            name: "options",
            field: "options",
            kind: AttrType::List,
            required: false,
        }],
    },
    AtomSpec {
        kind: "Loop",
        category: "Control",
        summary: "iteration over a collection — binds one per-iteration variable.",
        attributes: &[
            AttrSpec {
                name: "over",
                field: "over",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "as",
                field: "as_var",
                kind: AttrType::Text,
                required: true,
            },
        ],
    },
    AtomSpec {
        kind: "Parallel",
        category: "Control",
        summary: "concurrent independent atoms with no specified ordering.",
        attributes: &[],
    },
    AtomSpec {
        kind: "Implication",
        category: "Reference",
        summary: "long-form forward-link — equivalent to inline IMPLIES:id.",
        attributes: &[AttrSpec {
            name: "next",
            field: "next",
            kind: AttrType::Text,
            required: true,
        }],
    },
    AtomSpec {
        kind: "Print",
        category: "Reference",
        summary: "one-line human-facing summary surfaced to the reader.",
        attributes: &[],
    },
    AtomSpec {
        kind: "Reference",
        category: "Reference",
        summary: "long-form back-link — equivalent to inline REFER:id.",
        attributes: &[AttrSpec {
            name: "to",
            field: "to",
            kind: AttrType::Text,
            required: true,
        }],
    },
    AtomSpec {
        kind: "Storing",
        category: "Reference",
        summary: "persist a named value to trace-local memory for later REFER.",
        attributes: &[
            AttrSpec {
                name: "name",
                field: "name",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "value",
                field: "value",
                kind: AttrType::Text,
                required: true,
            },
        ],
    },
    AtomSpec {
        kind: "Handoff",
        category: "Social",
        summary: "pass work to another agent with a named package.",
        attributes: &[
            AttrSpec {
                name: "to",
                field: "to",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "package",
                field: "package",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "constraints",
                field: "constraints",
                kind: AttrType::List,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Question",
        category: "Social",
        summary: "explicit request for external input.",
        attributes: &[
            AttrSpec {
                name: "to",
                field: "to",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "scope",
                field: "scope",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "default",
                field: "default",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Review",
        category: "Social",
        summary: "audit another agent's atom and produce a Finding.",
        attributes: &[
            AttrSpec {
                name: "of",
                field: "of",
                kind: AttrType::Text,
                required: true,
            },
            AttrSpec {
                name: "reviewer",
                field: "reviewer",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Budget",
        category: "Meta",
        summary: "declared spending envelope (tokens / actions / wall_clock_ms).",
        attributes: &[
            AttrSpec {
                name: "for",
                field: "for_ref",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "tokens",
                field: "tokens",
                kind: AttrType::Int,
                required: false,
            },
            AttrSpec {
                name: "actions",
                field: "actions",
                kind: AttrType::Int,
                required: false,
            },
            AttrSpec {
                name: "wall_clock_ms",
                field: "wall_clock_ms",
                kind: AttrType::Int,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Confidence",
        category: "Meta",
        summary: "qualitative or numeric confidence attached to another atom.",
        attributes: &[
            AttrSpec {
                name: "on",
                field: "on",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "level",
                field: "level",
                kind: AttrType::Confidence,
                required: false,
            },
            AttrSpec {
                name: "basis",
                field: "basis",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Constraint",
        category: "Meta",
        summary: "hard rule in effect that subsequent decisions must respect.",
        attributes: &[AttrSpec {
            name: "scope",
            field: "scope",
            kind: AttrType::Text,
            required: false,
        }],
    },
    AtomSpec {
        kind: "Cost",
        category: "Meta",
        summary: "observed expenditure (tokens / dollars / wall_clock_ms).",
        attributes: &[
            AttrSpec {
                name: "for",
                field: "for_ref",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "tokens",
                field: "tokens",
                kind: AttrType::Int,
                required: false,
            },
            AttrSpec {
                name: "wall_clock_ms",
                field: "wall_clock_ms",
                kind: AttrType::Int,
                required: false,
            },
            AttrSpec {
                name: "dollars",
                field: "dollars",
                kind: AttrType::Float,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "EventRef",
        category: "Meta",
        summary: "pointer to an externally recorded run event.",
        attributes: &[
            AttrSpec {
                name: "instance",
                field: "instance",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "run_id",
                field: "run_id",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "sequence",
                field: "sequence",
                kind: AttrType::Int,
                required: false,
            },
            AttrSpec {
                name: "for",
                field: "for_ref",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "wall_clock",
                field: "wall_clock",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Goal",
        category: "Meta",
        summary: "target proposition the agent is pursuing — may declare criticality.",
        attributes: &[
            AttrSpec {
                name: "scope",
                field: "scope",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "priority",
                field: "priority",
                kind: AttrType::OneOf(&["required", "optional"]),
                required: false,
            },
            AttrSpec {
                name: "success_criteria",
                field: "success_criteria",
                kind: AttrType::List,
                required: false,
            },
            AttrSpec {
                name: "related_constraints",
                field: "related_constraints",
                kind: AttrType::List,
                required: false,
            },
            AttrSpec {
                name: "deadline",
                field: "deadline",
                kind: AttrType::Text,
                required: false,
            },
            AttrSpec {
                name: "failure_modes",
                field: "failure_modes",
                kind: AttrType::List,
                required: false,
            },
            AttrSpec {
                name: "criticality",
                field: "criticality",
                kind: AttrType::OneOf(&["incidental", "bridge", "ledger", "verifier", "kernel"]),
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Edge",
        category: "Primitives",
        summary: "schema-reserved import / dependency edge on an Observation.",
        attributes: &[
            AttrSpec {
                name: "type",
                field: "edge_type",
                kind: AttrType::OneOf(&["imports", "depends", "calls", "tests", "publishes"]),
                required: false,
            },
            AttrSpec {
                name: "target",
                field: "target",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
    AtomSpec {
        kind: "Effect",
        category: "Primitives",
        summary: "schema-reserved side-effect kind (io_write / network / subprocess / mutates_state / pure).",
        attributes: &[AttrSpec {
            name: "kind",
            field: "effect_kind",
            kind: AttrType::OneOf(&["io_write", "network", "subprocess", "mutates_state", "pure"]),
            required: false,
        }],
    },
    AtomSpec {
        kind: "Meta",
        category: "Primitives",
        summary: "schema-reserved Step-level metadata (e.g. criticality).",
        attributes: &[AttrSpec {
            name: "criticality",
            field: "criticality",
            kind: AttrType::OneOf(&["incidental", "bridge", "ledger", "verifier", "kernel"]),
            required: false,
        }],
    },
    AtomSpec {
        kind: "Ref",
        category: "Primitives",
        summary: "schema-reserved generic reference sub-element with type / target.",
        attributes: &[
            AttrSpec {
                name: "type",
                field: "ref_type",
                kind: AttrType::OneOf(&["test_owner", "doc", "spec"]),
                required: false,
            },
            AttrSpec {
                name: "target",
                field: "target",
                kind: AttrType::Text,
                required: false,
            },
        ],
    },
];
