//! Criterion bench for the Scholia reference tools: parsing and linting a 200-atom trace with
//! every rule (target: at most 1 ms). Run with `cargo bench -p hearth-core --bench scholia`.

use std::fmt::Write;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::scholia::parser::parse;
use hearth_core::scholia::validator::{Mode, validate};

/// A valid trace of exactly 200 atoms: a Goal and a Constraint, 39 Steps of five atoms each
/// (an Observation, an Action with its Finding, a Hypothesis and its Evidence), and a closing
/// Step with an Observation, a Print and a Concluding.
fn trace_of_200_atoms() -> String {
    let mut trace = String::from(
        "<Step id=\"S_00\" name=\"plan\">\n  <Goal id=\"G_1\" priority=\"required\" criticality=\"ledger\">Tidy the house before guests arrive.</Goal>\n  <Constraint id=\"C_1\" scope=\"house\">Never unlock the front door.</Constraint>\n</Step>\n",
    );
    for n in 1..=39 {
        write!(
            trace,
            "<Step id=\"S_{n:02}\" name=\"room {n}\">\n  <Observation id=\"O_{n}\" location=\"rooms/{n}.txt:1:9\" confidence=\"0.8\">Room {n} has clutter on the floor.</Observation>\n  <Action id=\"A_{n}\" timestamp=\"2026-11-30T08:{n:02}:00Z\">Started the vacuum in room {n}.\n    <Finding id=\"F_{n}\">REFER:A_{n} The floor of room {n} is clear. REFER:O_{n}</Finding>\n  </Action>\n  <Hypothesis id=\"H_{n}\">Room {n} will stay tidy until the guests arrive.</Hypothesis>\n  <Evidence id=\"E_{n}\" for=\"H_{n}\" polarity=\"supports\">Nobody is scheduled to use room {n}. REFER:O_{n}</Evidence>\n</Step>\n"
        )
        .unwrap();
    }
    trace.push_str("<Step id=\"S_40\" name=\"close\">\n  <Observation id=\"O_40\">Every room is clear.</Observation>\n  <Print id=\"P_1\">The house is tidy.</Print>\n  <Concluding id=\"K_1\" for_goal=\"G_1\" status=\"met\" criticality=\"ledger\">REFER:O_40 and REFER:F_39 show the goal is met.</Concluding>\n</Step>\n");
    trace
}

fn count_atoms(nodes: &[hearth_core::scholia::parser::Node]) -> usize {
    nodes
        .iter()
        .map(|node| usize::from(node.tag != "Step") + count_atoms(&node.children))
        .sum()
}

fn benches(c: &mut Criterion) {
    let trace = trace_of_200_atoms();
    assert_eq!(count_atoms(&parse(&trace).unwrap()), 200);
    let report = validate(&trace, Mode::Full, &[]);
    assert!(report.ok() && report.warnings.is_empty(), "{report:?}");
    c.bench_function("scholia_parse_200_atoms", |b| {
        b.iter(|| parse(black_box(&trace)))
    });
    c.bench_function("scholia_parse_and_lint_200_atoms", |b| {
        b.iter(|| validate(black_box(&trace), Mode::Full, &[]))
    });
}

criterion_group!(scholia, benches);
criterion_main!(scholia);
